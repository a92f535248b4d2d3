"""Apache RocketMQ's own mqadmin (MQAdminStartup of the 4.9.7 tools jar, and a few commands of 5.5.0's) against a
pocketmq cluster and against Apache RocketMQ 4.9.7, after the same setup on both: a topic of four queues, a
subscription group, eight messages sent to known queues by a producer that stays up, and a push consumer that
consumed them and stays up (5.5.0's commands that 4.9.7's broker lacks: against Apache RocketMQ 5.5.0, after the same
setup there). Each command's output on pocketmq must have the columns and rows it has on Apache,
once what legitimately differs is masked (addresses, times, ids, client ids, rates, commit-log positions).

Then pocketmq's own commands (`pocketmq <command>`, in-process) must print what mqadmin prints for the same
pocketmq cluster, under the same masking.

mqadmin runs in JVMs kept from one command to the next (tests/apache/mqadmin_runner.py, one per command running at
the same time); each test runs a command once per server, both at a time.

The servers, the setup and 5.5.0's tools are the package's, not a module's (one start for all its modules, as when
they were one module): tests/conftest.py hands the whole folder to one xdist worker. The modules run in the order of
their names, and the tests count on it: the broker and topic comparisons see only the setup's topics and
messages, the offsets module resets the group the later ones read, pocketmq's own commands come last."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from pocketmq.client import ConsumeConcurrentlyStatus, Message, SyncProducer, SyncPushConsumer
from pocketmq.embedded import ThreadedCluster
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ

from .sides import CLUSTER, GROUP, MESSAGES, MSG_BODY_DIR, PRODUCER_GROUP, QUEUES, TOPIC, Mqadmin, Side, wait_no_lag


@pytest.fixture(scope="package")
def pocket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    # Apache's test broker.conf enables the trace topic; pocketmq's cluster does the same.
    with ThreadedCluster(tmp_path_factory.mktemp("mqadmin-pocketmq"), trace_topic_enable=True,
                         stats_sample_interval=0.05) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def mqadmin(apache_rocketmq: ApacheRocketMQ) -> Mqadmin:
    return Mqadmin(apache_rocketmq)


@pytest.fixture(scope="package")
def mqadmin5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mqadmin]:
    tools = ApacheRocketMQ(tmp_path_factory.mktemp("mqadmin-5"), version=V5).prepare_tools()
    yield Mqadmin(tools)
    tools.close_tools()


def _set_up(side: Side, mq: Mqadmin) -> None:
    side.setup_output["updateTopic"] = mq.run(
        side.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", str(QUEUES), "-w", str(QUEUES))
    side.setup_output["updateSubGroup"] = mq.run(side.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", GROUP)
    producer = SyncProducer(PRODUCER_GROUP, side.namesrv_addr, protocol="rocketmq")
    side.clients.append(producer)
    for i in range(MESSAGES):
        msg = Message(TOPIC, f"body {i}".encode(), tags="TagA", keys=f"key{i}")
        sent = producer.send(msg, selector=lambda mqs, _m, n: mqs[n % len(mqs)], arg=i)
        side.msg_ids.append(sent.msg_id)
        side.offset_msg_ids.append(sent.offset_msg_id)
    consumed = side.consumed
    # (a reset's settle time shortened: the consumer takes the new offsets in 0.2 s, not 10, and an OFFSET_MOVED
    # answer's (5.x's to the pull after a reset of one queue) in 0.05 s, not 10; its long polls end after 1 s,
    # not 15, and with the first, of the empty retry queue, comes its commit of 0)
    consumer = SyncPushConsumer(GROUP, side.namesrv_addr, protocol="rocketmq",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", persist_consumer_offset_interval=0.2,
                                reset_offset_settle_time=0.2, offset_illegal_delay=0.05, broker_suspend_max_time=1.0)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(
        lambda msgs, _ctx: (consumed.extend(msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1])
    consumer.start()
    side.clients.append(consumer)
    wait_no_lag(side, mq, lambda: len(consumed) >= MESSAGES)


@pytest.fixture(scope="package")
def sides(apache_rocketmq: ApacheRocketMQ, pocket: ThreadedCluster, mqadmin: Mqadmin) -> Iterator[tuple[Side, Side]]:
    apache = Side("apache", apache_rocketmq.namesrv_addr, apache_rocketmq.broker_addr)
    pocketmq = Side("pocketmq", pocket.namesrv_addr, pocket.broker_addr)
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda s: _set_up(s, mqadmin), (apache, pocketmq)))
        yield apache, pocketmq
    finally:
        for side in (apache, pocketmq):
            for client in reversed(side.clients):
                client.shutdown() if isinstance(client, SyncPushConsumer) else client.close()
            for msg_id in side.msg_ids:
                (MSG_BODY_DIR / msg_id).unlink(missing_ok=True)


@pytest.fixture(scope="package")
def sides5(sides: tuple[Side, Side], apache_rocketmq5: ApacheRocketMQ,
           mqadmin5: Mqadmin) -> Iterator[tuple[Side, Side]]:
    """Apache 5.5.0 after the package's setup (by 5.5.0's mqadmin), and the package's pocketmq side."""
    apache = Side("apache", apache_rocketmq5.namesrv_addr, apache_rocketmq5.broker_addr,
                  lists_empty_retry_queue=True)
    try:
        _set_up(apache, mqadmin5)
        yield apache, sides[1]
    finally:
        for client in reversed(apache.clients):
            client.shutdown() if isinstance(client, SyncPushConsumer) else client.close()
