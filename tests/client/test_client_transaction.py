"""Transactional messages end to end: TransactionProducer against a real broker (EmbeddedCluster), in both wire
protocols. The broker's check timers run in milliseconds (transactionTimeOut, transactionCheckInterval)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.broker.broker_controller import BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    MQClientException,
    Producer,
    PullConsumer,
    PullStatus,
    SendStatus,
    TransactionMQProducer,
    TransactionProducer,
)
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.topic_validator import (
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from pocketmq.remoting.body import TopicConfig

_names = itertools.count()
COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)

# A half message may be asked about 100 ms after it was born, and the broker looks every 20 ms.
FAST_CHECK: dict[str, Any] = {"transaction_timeout": 0.1, "transaction_check_interval": 0.02}
# For the tests of a producer's own answer: a loaded machine may take longer than 100 ms to deliver it, and a
# check would then race it (as in RocketMQ).
LATE_CHECK: dict[str, Any] = {"transaction_timeout": 1.0, "transaction_check_interval": 0.02}


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


class Listener:
    """Answers execute with ``execute`` and every check with ``check``; records what it was given."""

    def __init__(self, execute: LocalTransactionState, check: LocalTransactionState = UNKNOW) -> None:
        self.execute = execute
        self.check = check
        self.executed: list[tuple[Message, Any]] = []
        self.checked: list[MessageExt] = []
        self.checked_at: list[int] = []  # ms, when each check came

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        self.executed.append((msg, arg))
        return self.execute

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:  # (a coroutine works too)
        self.checked.append(msg)
        self.checked_at.append(time.time_ns() // 1_000_000)
        return self.check


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path, **FAST_CHECK) as c:
        yield c


@pytest.fixture
async def late_check_cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path, **LATE_CHECK) as c:
        yield c


async def make_topic(cluster: Any, queues: int = 2) -> str:
    topic = unique("TxnTopic")
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await cluster.broker.register_broker_all()
    return topic


def txn_producer(cluster: Any, group: str, listener: Listener, protocol: str = "msgpack") -> TransactionProducer:
    return TransactionProducer(group, cluster.namesrv_addr, listener, instance_name=unique("p"), protocol=protocol,
                               heartbeat_broker_interval=0.1)


async def pull_all(cluster: Any, topic: str, protocol: str = "msgpack") -> list[MessageExt]:
    await cluster.wait_dispatched()
    out: list[MessageExt] = []
    async with PullConsumer(unique("CG"), cluster.namesrv_addr, instance_name=unique("c"), protocol=protocol) as c:
        for mq in await c.fetch_subscribe_message_queues(topic):
            offset = 0
            while True:
                result = await c.pull(mq, "*", offset, 32)
                out.extend(result.msg_found_list)
                if result.pull_status is not PullStatus.FOUND:
                    break
                offset = result.next_begin_offset
    return out


def stored(cluster: Any, topic: str, queue_id: int = 0) -> list[Any]:
    """Every record of a queue, read from the store (system topics have no route for a consumer)."""
    result = cluster.store.get_message("test", topic, queue_id, 0, 1000)
    return decode_all(result.body)


async def test_commit_delivers_the_message_once_with_the_commit_flag(
    late_check_cluster: Any, protocol: str, poll
) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        await producer.send(Message(topic, b"plain"), queue=None)  # (so the half message is not at offset 0)
        msg = Message(topic, b"order 1", tags="TagA", keys="K1", properties={"color": "blue"})
        result = await producer.send_message_in_transaction(msg, arg=42)
        assert result.send_status is SendStatus.SEND_OK
        assert result.local_transaction_state is COMMIT
        assert result.transaction_id == msg.uniq_key == result.msg_id
        assert [(m.body, a) for m, a in listener.executed] == [(b"order 1", 42)]
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    got = await pull_all(cluster, topic, protocol)
    assert sorted(m.body for m in got) == [b"order 1", b"plain"]
    [real] = [m for m in got if m.body == b"order 1"]
    assert (real.topic, real.tags, real.keys, real.uniq_key) == (topic, "TagA", ["K1"], msg.uniq_key)
    assert real.properties["color"] == "blue"
    assert real.properties["TRAN_MSG"] == "true" and real.properties["PGROUP"] == group
    assert "REAL_TOPIC" not in real.properties and "REAL_QID" not in real.properties
    assert real.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
    # PREPAREDTRANSACTIONOFFSET points at the half message, whose offsetMsgId the send returned.
    assert real.prepared_transaction_offset == decode_message_id(result.offset_msg_id)[1] > 0
    assert real.queue_id == result.message_queue.queue_id
    assert listener.checked == []


async def test_a_committed_timer_message_is_delivered_after_its_delay(late_check_cluster: Any, poll) -> None:
    """A transactional message with a delay: its half message stays in the half topic (not rerouted to the timer
    wheel, where the producer's commit could not find it and the check would ask about it for ever), and the
    committed message goes to the wheel and is delivered when due, once, without a check."""
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    listener = Listener(COMMIT)
    async with txn_producer(cluster, group, listener) as producer:
        msg = Message(topic, b"later")
        msg.delay_time_sec = 1
        sent_at = time.time_ns() // 1_000_000
        result = await producer.send_message_in_transaction(msg)
        assert result.local_transaction_state is COMMIT
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        await cluster.wait_dispatched()  # (the half record may still be on its way to its queue on a loaded run)
        [half] = stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
        assert half.body == b"later" and half.properties["TIMER_DELAY_SEC"] == "1"
        await poll(lambda: cluster.store.get_max_offset_in_queue(topic, 0) == 1, timeout=20)
    [real] = await pull_all(cluster, topic)
    assert real.body == b"later" and real.store_timestamp >= sent_at + 1000  # (due a second after its commit)
    assert listener.checked == []



async def test_a_delay_level_is_dropped_from_a_transactional_message(late_check_cluster: Any, poll) -> None:
    # sendMessageInTransaction clears DELAY before the send (RocketMQ: "ignore DelayTimeLevel parameter"): the
    # committed message goes to its topic at once, not to the schedule topic to wait out the level.
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    async with txn_producer(cluster, group, Listener(COMMIT)) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"not delayed", delay_time_level=3))
        assert result.local_transaction_state is COMMIT
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    await cluster.wait_dispatched()
    [real] = stored(cluster, topic)
    assert real.body == b"not delayed" and "DELAY" not in real.properties
    assert stored(cluster, RMQ_SYS_SCHEDULE_TOPIC, 2) == []  # (level 3's queue)

async def test_the_half_and_op_records(late_check_cluster: Any, poll) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, 4), unique("TxnPG")
    async with txn_producer(cluster, group, Listener(COMMIT)) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"payload"))
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    await cluster.wait_dispatched()
    [half] = stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
    assert half.commit_log_offset == decode_message_id(result.offset_msg_id)[1]
    assert half.queue_offset == result.queue_offset == 0
    assert half.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_NOT_TYPE  # (so it takes a half-queue slot)
    assert half.properties["REAL_TOPIC"] == topic
    assert half.properties["REAL_QID"] == str(result.message_queue.queue_id)
    assert half.properties["TRAN_MSG"] == "true" and half.properties["PGROUP"] == group
    [op] = stored(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert (op.tags, op.body, op.queue_id) == ("d", b"0", 0)


async def test_rollback_is_never_delivered_nor_checked(late_check_cluster: Any, protocol: str, poll) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(ROLLBACK, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        born = time.time_ns() // 1_000_000
        result = await producer.send_message_in_transaction(Message(topic, b"cancelled"))
        assert result.local_transaction_state is ROLLBACK
        await poll(lambda: cluster.broker.end_transaction_processor.rolled_back == 1)
        # Check rounds past the half's timeout pass it over: the op record says it is done.
        check = cluster.broker.transactional_message_check_service
        rounds = check.rounds

        def past_timeout() -> bool:
            return check.rounds >= rounds + 5 and time.time_ns() // 1_000_000 > born + 1000 + 100

        await poll(past_timeout)
        assert listener.checked == []
    assert await pull_all(cluster, topic, protocol) == []


async def test_unknow_then_the_check_commits(cluster: Any, protocol: str, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        msg = Message(topic, b"decided later", tags="T")
        result = await producer.send_message_in_transaction(msg)
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        [asked] = listener.checked
        assert (asked.topic, asked.body, asked.tags) == (topic, b"decided later", "T")
        assert asked.queue_id == result.message_queue.queue_id
        assert asked.uniq_key == msg.uniq_key
    got = await pull_all(cluster, topic, protocol)
    assert [(m.body, m.uniq_key) for m in got] == [(b"decided later", msg.uniq_key)]


async def test_undecided_is_never_delivered_and_is_discarded_after_check_max(tmp_path: Any, poll) -> None:
    async with embedded.EmbeddedCluster(tmp_path, transaction_check_max=3, **FAST_CHECK) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=UNKNOW)
        async with txn_producer(cluster, group, listener) as producer:
            await producer.send_message_in_transaction(Message(topic, b"never decided"))
            await poll(lambda: cluster.broker.transactional_message_service.discarded == 1)
            await poll(lambda: len(listener.checked) == 3)  # (the last check may still be on its way)
            assert await pull_all(cluster, topic) == []
        await cluster.wait_dispatched()
        [kept] = stored(cluster, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        assert kept.body == b"never decided" and kept.properties["TRANSACTION_CHECK_TIMES"] == "3"


async def test_a_half_message_too_big_to_write_back_does_not_stop_the_check(cluster: Any, poll) -> None:
    """A half message whose properties are just under the limit is stored, but the check's renewed copy (it adds
    its count) is too big for the store. It is asked about once as it is, and the undecided message behind it is
    still asked about and committed (refused at every pass, it stopped its queue's check for good, as RocketMQ's
    does)."""
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener) as producer:
        pad = 32767 - 150
        while True:  # the largest pad the store takes (what else the message carries is the client's)
            try:
                await producer.send_message_in_transaction(Message(topic, b"big", properties={"PAD": "x" * pad}))
                break
            except MQClientException:  # (the send's refusal: properties too long)
                pad -= 8
        result = await producer.send_message_in_transaction(Message(topic, b"behind it"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: b"behind it" in [m.body for m in listener.checked], timeout=20)
        await poll(lambda: cluster.store.get_max_offset_in_queue(topic, 0) >= 1)
    assert b"behind it" in [m.body for m in await pull_all(cluster, topic)]


async def test_a_new_producer_of_the_group_answers_for_one_that_died(cluster: Any, protocol: str, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    # The first producer stores the half message and goes away without a word: exactly what a TransactionProducer
    # killed right after its send leaves behind (TRAN_MSG and PGROUP are what send_message_in_transaction sets).
    async with Producer(group, cluster.namesrv_addr, instance_name=unique("p"), protocol=protocol) as dying:
        msg = Message(topic, b"orphan")
        msg.put_property("TRAN_MSG", "true")
        msg.put_property("PGROUP", group)
        await dying.send(msg)
    assert await pull_all(cluster, topic, protocol) == []
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol):
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        assert [m.body for m in listener.checked] == [b"orphan"]
    assert [m.body for m in await pull_all(cluster, topic, protocol)] == [b"orphan"]


async def test_a_closed_producer_is_not_asked_and_its_successor_is(cluster: Any, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    first = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, first) as producer:
        await producer.send_message_in_transaction(Message(topic, b"handed over"))
    # (closing unregisters the group at once: the broker has no producer of it to ask)
    rounds = cluster.broker.transactional_message_check_service.rounds
    await poll(lambda: cluster.broker.transactional_message_check_service.rounds >= rounds + 10)
    second = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, second):
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    assert first.checked == [] and [m.body for m in second.checked] == [b"handed over"]
    assert [m.body for m in await pull_all(cluster, topic)] == [b"handed over"]


async def test_the_check_takes_the_groups_producers_in_turn(tmp_path: Any, poll) -> None:
    # A plain Producer of the group, connected first, cannot answer a check: the transactional one is asked too
    # (the check went to the first producer only, and the committed transaction was discarded).
    async with embedded.EmbeddedCluster(tmp_path, transaction_check_max=5, **FAST_CHECK) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        async with Producer(group, cluster.namesrv_addr, instance_name=unique("plain"),
                            heartbeat_broker_interval=0.1) as plain:
            await plain.send(Message(topic, b"plain"))
            listener = Listener(UNKNOW, check=COMMIT)
            async with txn_producer(cluster, group, listener) as producer:
                await poll(lambda: len(cluster.broker.producer_manager.group_channel_table.get(group, {})) == 2)
                await producer.send_message_in_transaction(Message(topic, b"asked in turn"))
                await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        assert cluster.broker.transactional_message_service.discarded == 0
        assert sorted(m.body for m in await pull_all(cluster, topic)) == [b"asked in turn", b"plain"]


async def test_the_check_happens_after_a_broker_restart(tmp_path: Any, poll) -> None:
    # No check before the restart (a long interval); a fast one after it, reading the half from the store.
    async with embedded.EmbeddedCluster(tmp_path, transaction_timeout=0.1, transaction_check_interval=600) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=COMMIT)
        async with txn_producer(cluster, group, listener) as producer:
            await producer.send_message_in_transaction(Message(topic, b"survives"))
            old = cluster.broker
            await old.shutdown()
            assert listener.checked == []
            config = BrokerConfig(**{**vars(old.broker_config), "listen_port": old.port,
                                     "transaction_check_interval": 0.02})
            cluster.broker = cluster.brokers[0] = BrokerController(config)
            await cluster.broker.start()
            await poll(lambda: cluster.broker.end_transaction_processor.committed == 1, timeout=10)
            assert [m.body for m in listener.checked] == [b"survives"]
        assert [m.body for m in await pull_all(cluster, topic)] == [b"survives"]



async def test_a_producer_shuts_down_while_its_listener_is_still_checking(cluster: Any, poll) -> None:
    # A check whose listener never answers (a local transaction stuck on its database) is cancelled by the
    # shutdown, which waited for it for ever.
    topic, group = await make_topic(cluster), unique("TxnPG")
    stuck = asyncio.Event()

    class Stuck(Listener):
        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            self.checked.append(msg)
            await stuck.wait()
            return COMMIT

    listener = Stuck(UNKNOW)
    producer = txn_producer(cluster, group, listener)
    await producer.start()
    await producer.send_message_in_transaction(Message(topic, b"stuck"))
    await poll(lambda: listener.checked)
    await asyncio.wait_for(producer.shutdown(), 10.0)  # (a guard, not a measure: it hung)
    assert cluster.broker.end_transaction_processor.committed == 0

async def test_a_listener_that_raises_leaves_it_to_the_check(cluster: Any, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")

    class Failing(Listener):
        def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
            raise RuntimeError("database down")

    listener = Failing(UNKNOW, check=ROLLBACK)
    async with TransactionMQProducer(group, cluster.namesrv_addr, listener, instance_name=unique("p"),
                                     heartbeat_broker_interval=0.1) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"x"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: cluster.broker.end_transaction_processor.rolled_back == 1)
    assert await pull_all(cluster, topic) == []



async def test_an_answer_that_is_no_state_is_unknow_and_said_so(
    cluster: Any, poll, caplog: pytest.LogCaptureFixture
) -> None:
    # The enum's name as a string, or a bool, was taken as UNKNOW without a word above INFO: the message held back
    # and asked about, never committed, and nothing in the log said why.
    caplog.set_level(logging.WARNING, logger="pocketmq.client.producer.transaction_producer")
    topic, group = await make_topic(cluster), unique("TxnPG")

    class Confused(Listener):
        def execute_local_transaction(self, msg: Message, arg: Any) -> Any:
            return "COMMIT_MESSAGE"

        def check_local_transaction(self, msg: MessageExt) -> Any:  # type: ignore[override]
            self.checked.append(msg)
            return True

    listener = Confused(UNKNOW)
    async with txn_producer(cluster, group, listener) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"x"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: listener.checked)
        await poll(lambda: "check_local_transaction returned True" in caplog.text)
    assert "execute_local_transaction returned 'COMMIT_MESSAGE', not a LocalTransactionState" in caplog.text
    assert await pull_all(cluster, topic) == []


async def test_a_check_immunity_time_is_waited_out_then_asked_once(tmp_path: Any, poll) -> None:
    # CHECK_IMMUNITY_TIME_IN_SECONDS=1: each pass within that second writes the half again without asking (and
    # counts it against transactionCheckMax, as RocketMQ does: hence the 0.2 s interval here).
    async with embedded.EmbeddedCluster(tmp_path, transaction_timeout=0.05, transaction_check_interval=0.2) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=COMMIT)
        async with txn_producer(cluster, group, listener) as producer:
            msg = Message(topic, b"immune for a second")
            msg.put_property("CHECK_IMMUNITY_TIME_IN_SECONDS", "1")
            await producer.send_message_in_transaction(msg)
            await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
            # Not asked within the second (a lower bound: a slow machine only asks later).
            assert listener.checked_at[0] - listener.checked[0].born_timestamp >= 1000
            rounds = cluster.broker.transactional_message_check_service.rounds
            await poll(lambda: cluster.broker.transactional_message_check_service.rounds >= rounds + 3)
            assert len(listener.checked) == 1
        assert [m.body for m in await pull_all(cluster, topic)] == [b"immune for a second"]

def test_the_readme_transaction_example_runs(tmp_path: Any) -> None:
    import pathlib
    import re
    import subprocess
    import sys

    readme = pathlib.Path(__file__).resolve().parents[2] / "README.md"
    [example] = [b for b in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S) if "TransactionProducer" in b]
    with embedded.ThreadedCluster(tmp_path) as cluster:
        script = tmp_path / "txn.py"
        script.write_text(example.replace("127.0.0.1:9876", cluster.namesrv_addr))
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "SendStatus.SEND_OK LocalTransactionState.COMMIT_MESSAGE" in proc.stdout
        def committed() -> list[bytes]:
            cluster.wait_dispatched()
            get = cluster.store.get_message
            return [m.body for q in range(8) for m in decode_all(get("t", "Payments", q, 0, 32).body)]

        deadline = time.monotonic() + 10  # (END_TRANSACTION is one-way: the broker may still be writing)
        while not committed() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert committed() == [b"order 1 paid"]


def test_the_sync_transaction_producer(tmp_path: Any) -> None:
    from pocketmq.client import SyncPullConsumer, SyncTransactionProducer

    # Checks 0.2 s apart: the check's COMMIT goes back one-way from the producer's own loop thread, and on a loaded
    # machine it was not written within FAST_CHECK's 20 ms, so a second check came (RocketMQ checks again then too).
    with embedded.ThreadedCluster(tmp_path, **{**FAST_CHECK, "transaction_check_interval": 0.2}) as cluster:
        listener = Listener(UNKNOW, check=COMMIT)  # (its async check runs on the producer's own loop)
        with SyncTransactionProducer(unique("TxnPG"), cluster.namesrv_addr, listener,
                                     heartbeat_broker_interval=0.1) as producer:
            result = producer.send_message_in_transaction(Message("SyncTxn", b"blocking"), arg="a")
            assert result.local_transaction_state is UNKNOW and listener.executed[0][1] == "a"
            with SyncPullConsumer(unique("CG"), cluster.namesrv_addr) as consumer:
                pulled = consumer.pull_blocking(result.message_queue, "*", 0, timeout=10)
        assert [m.body for m in pulled.msg_found_list] == [b"blocking"]
        assert [m.body for m in listener.checked] == [b"blocking"]
