"""The client end to end against three servers: pocketmq in its msgpack protocol, pocketmq in RocketMQ's native
protocol, and Apache RocketMQ 4.9.7 (the session's real name server and broker, tests/apache/). One test per
feature: producer send modes and the pull consumer, push (concurrent with a retry, and orderly), lite pull,
transactions (commit, rollback, and a check), request-reply, message trace, and the admin API.

Each test uses only the client (nothing of pocketmq's broker), and topics and groups of its own: the Apache server
is shared by every test of the process.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pull_helpers import pull_queues

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageQueue,
    MessageUtil,
    Producer,
    PullConsumer,
    PushConsumer,
    SendStatus,
    TransactionProducer,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.trace import decoder_from_trace_data_string
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import TopicConfig
from tests.apache.apache_rocketmq import V4

SERVERS = ["pocketmq-msgpack", "pocketmq-rocketmq", f"apache-{V4}"]
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

# Client timers in tens of milliseconds; Apache's broker has its own (it is told nothing).
FAST_CLIENT: dict[str, Any] = {
    "rebalance_interval": 0.2,
    "heartbeat_broker_interval": 0.2,
    "poll_name_server_interval": 0.2,
    "persist_consumer_offset_interval": 0.1,
    "pull_time_delay_when_exception": 0.05,
}
# pocketmq's broker as the Apache fixture's: trace topic on, a transaction check soon after a half message.
POCKETMQ_BROKER: dict[str, Any] = {
    "trace_topic_enable": True,
    "transaction_timeout": 3.0,  # a check must not race a slow END_TRANSACTION on a loaded machine
    "transaction_check_interval": 0.2,
    "message_delay_level": "100ms 200ms 300ms 400ms",
    "flush_consumer_offset_interval": 0.2,
}


@dataclass
class Server:
    """What a test needs of a server: where its name server is, the protocol to speak, its broker's name."""

    kind: str
    namesrv_addr: str
    protocol: str
    broker_name: str = "broker-a"
    cluster: str = "DefaultCluster"

    def options(self, **more: Any) -> dict[str, Any]:
        return {"protocol": self.protocol, "instance_name": unique("i"), **more}

    async def create_topic(self, topic: str, queues: int) -> None:
        """``topic`` with ``queues`` queues on the cluster's masters, once the name server routes them."""
        async with MQAdminExt(self.namesrv_addr, protocol=self.protocol) as admin:
            await admin.create_topic(TopicConfig(topic, queues, queues), cluster=self.cluster)
            for _ in range(200):
                try:
                    route = await admin.examine_topic_route_info(topic)
                    if sum(q.read_queue_nums for q in route.queue_datas) == queues:
                        return
                except Exception:  # not routed yet
                    pass
                await asyncio.sleep(0.05)
        raise AssertionError(f"{topic} not routed")


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=SERVERS)
async def server(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Server]:
    kind = str(request.param)
    if kind.startswith("apache"):
        apache = request.getfixturevalue("apache_rocketmq")
        yield Server(kind, apache.namesrv_addr, "rocketmq", apache.broker_name, apache.cluster_name)
        return
    async with EmbeddedCluster(tmp_path, **POCKETMQ_BROKER) as cluster:
        yield Server(kind, cluster.namesrv_addr, kind.split("-")[1])


async def until(predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    """Wait for ``predicate`` (a generous bound: Apache's broker and a busy machine take their time)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def pull_all(server: Server, topic: str, group: str | None = None) -> list[MessageExt]:
    async with PullConsumer(group or unique("PullG"), server.namesrv_addr, **server.options()) as consumer:
        return await pull_queues(consumer, topic)


def push_consumer(server: Server, group: str, **options: Any) -> PushConsumer:
    return PushConsumer(group, server.namesrv_addr, **server.options(**FAST_CLIENT, **options))


# --- producer and pull consumer -------------------------------------------------------------------------------


async def test_send_modes_and_pull_with_stored_offsets(server: Server) -> None:
    topic, group = unique("SrvSend"), unique("SrvPullG")
    await server.create_topic(topic, 4)
    async with Producer(unique("SrvPG"), server.namesrv_addr, **server.options()) as producer:
        sync = await producer.send(Message(topic, b"sync", tags="A", keys=["k-sync"], properties={"color": "rød"}))
        assert sync.send_status is SendStatus.SEND_OK
        done = await producer.send_async(Message(topic, b"async", tags="B"))
        await producer.send_oneway(Message(topic, b"oneway", tags="A"))
        mq = MessageQueue(topic, server.broker_name, 2)
        batch = await producer.send_batch([Message(topic, b"batch-%d" % i, tags="A") for i in range(3)], mq)
        assert batch.message_queue == mq
        ordered = [await producer.send(Message(topic, b"ordered-%d" % i), selector=lambda mqs, _m, a: mqs[a],
                                       arg=1) for i in range(3)]
        assert {r.message_queue.queue_id for r in ordered} == {1}
    bodies = {b"sync", b"async", b"oneway", b"batch-0", b"batch-1", b"batch-2", b"ordered-0", b"ordered-1",
              b"ordered-2"}
    got: list[MessageExt] = []
    for _ in range(600):  # the oneway send may land a moment later
        got = await pull_all(server, topic)
        if len(got) == len(bodies):
            break
        await asyncio.sleep(0.05)
    assert {m.body for m in got} == bodies and len(got) == len(bodies)
    first = next(m for m in got if m.body == b"sync")
    assert first.msg_id == sync.msg_id and first.tags == "A" and first.keys == ["k-sync"]
    assert first.properties["color"] == "rød"
    assert next(m for m in got if m.body == b"async").msg_id == done.msg_id
    assert [m.body for m in got if m.queue_id == 1 and m.body.startswith(b"ordered")] == [
        b"ordered-0", b"ordered-1", b"ordered-2"]

    async with PullConsumer(group, server.namesrv_addr, **server.options()) as consumer:
        mq = MessageQueue(topic, server.broker_name, 2)
        tagged = await consumer.pull(mq, "A", 0, 32)
        in_queue = sorted((m for m in got if m.queue_id == 2), key=lambda m: m.queue_offset)
        assert [m.body for m in tagged.msg_found_list] == [m.body for m in in_queue if m.tags == "A"]
        assert {b"batch-0", b"batch-1", b"batch-2"} <= {m.body for m in tagged.msg_found_list}
        await consumer.update_consume_offset(mq, 2)
    async with PullConsumer(group, server.namesrv_addr, **server.options()) as again:
        assert await again.fetch_consume_offset(MessageQueue(topic, server.broker_name, 2), from_store=True) == 2


# --- push consumers -------------------------------------------------------------------------------------------


async def test_push_concurrently_with_a_retry(server: Server) -> None:
    topic, group = unique("SrvPush"), unique("SrvPushG")
    await server.create_topic(topic, 2)
    seen: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        seen.extend(msgs)
        if msgs[0].body == b"again" and msgs[0].reconsume_times == 0:
            context.delay_level_when_next_consume = 1  # Apache: 1 s; pocketmq here: 100 ms
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push_consumer(server, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        async with Producer(unique("SrvPG"), server.namesrv_addr, **server.options()) as producer:
            for body in (b"one", b"two", b"again", b"three"):
                await producer.send(Message(topic, body))
        await until(lambda: sum(m.body == b"again" for m in seen) == 2 and len(seen) == 5)
    finally:
        await consumer.shutdown()
    retried = [m for m in seen if m.body == b"again"]
    assert [m.reconsume_times for m in retried] == [0, 1]
    assert retried[1].topic == topic  # the retry topic is the consumer's business, not the listener's
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
        await until_async(lambda: admin.examine_consume_stats(group, topic), lambda s: s.compute_total_diff() == 0)


async def until_async(read: Callable[[], Any], check: Callable[[Any], bool], timeout: float = 60.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await read()
        if check(value):
            return value
        assert loop.time() < deadline, value
        await asyncio.sleep(0.1)


async def test_push_orderly_keeps_each_queues_order(server: Server) -> None:
    topic, group = unique("SrvOrder"), unique("SrvOrderG")
    await server.create_topic(topic, 4)
    seen: dict[int, list[bytes]] = {}
    suspended: list[bytes] = []

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeOrderlyStatus:
        for m in msgs:
            key = int(m.keys[0])
            if m.body.endswith(b"-2") and m.body not in suspended:  # once: the queue waits, nothing overtakes
                suspended.append(m.body)
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
            seen.setdefault(key, []).append(m.body)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = push_consumer(server, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                             suspend_current_queue_time=0.05, lock_interval=0.2)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    await consumer.start()
    try:
        async with Producer(unique("SrvPG"), server.namesrv_addr, **server.options()) as producer:
            for i in range(6):
                for order in range(3):
                    await producer.send(Message(topic, b"%d-%d" % (order, i), keys=[str(order)]),
                                        selector=lambda mqs, _m, a: mqs[a % len(mqs)], arg=order)
        await until(lambda: sum(map(len, seen.values())) == 18)
    finally:
        await consumer.shutdown()
    assert seen == {order: [b"%d-%d" % (order, i) for i in range(6)] for order in range(3)}


async def test_lite_pull_subscribe_and_commit(server: Server) -> None:
    topic, group = unique("SrvLite"), unique("SrvLiteG")
    await server.create_topic(topic, 2)
    async with Producer(unique("SrvPG"), server.namesrv_addr, **server.options()) as producer:
        for i in range(10):
            await producer.send(Message(topic, b"lite-%d" % i))
    consumer = LitePullConsumer(group, server.namesrv_addr, **server.options(
        **FAST_CLIENT, consume_from_where="CONSUME_FROM_FIRST_OFFSET", auto_commit=False))
    consumer.subscribe(topic, "*")
    async with consumer:
        got: list[MessageExt] = []
        for _ in range(600):
            if len(got) >= 10:
                break
            got += await consumer.poll(timeout=0.1)
        assert sorted(m.body for m in got) == sorted(b"lite-%d" % i for i in range(10))
        await consumer.commit_sync()
        committed = {mq.queue_id: await consumer.committed(mq) for mq in consumer.assignment()}
    queues = {q: max(m.queue_offset for m in got if m.queue_id == q) + 1 for q in {m.queue_id for m in got}}
    assert committed == queues


# --- transactions ---------------------------------------------------------------------------------------------


class Listener:
    def __init__(self) -> None:
        self.checked: list[bytes] = []

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return arg

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append(msg.body)
        return LocalTransactionState.COMMIT_MESSAGE


async def test_transactions_commit_rollback_and_check(server: Server) -> None:
    topic = unique("SrvTxn")
    await server.create_topic(topic, 2)
    listener = Listener()
    producer = TransactionProducer(unique("SrvTxnPG"), server.namesrv_addr, listener, **server.options())
    async with producer:
        states = {b"commit": LocalTransactionState.COMMIT_MESSAGE, b"rollback": LocalTransactionState.ROLLBACK_MESSAGE,
                  b"unknown": LocalTransactionState.UNKNOW}
        for body, state in states.items():
            result = await producer.send_message_in_transaction(Message(topic, body), state)
            assert result.local_transaction_state is state
        # The broker asks about the undecided one (Apache: every transactionCheckInterval, once it is
        # transactionTimeOut old); the listener commits it.
        await until(lambda: b"unknown" in listener.checked, timeout=90)
        got: list[MessageExt] = []
        for _ in range(200):
            got = await pull_all(server, topic)
            if len(got) == 2:
                break
            await asyncio.sleep(0.05)
    assert sorted(m.body for m in got) == [b"commit", b"unknown"]
    assert b"commit" not in listener.checked and b"rollback" not in listener.checked


# --- request-reply --------------------------------------------------------------------------------------------


async def test_request_reply(server: Server) -> None:
    topic = unique("SrvReq")
    await server.create_topic(topic, 2)
    replier = Producer(unique("SrvReplyPG"), server.namesrv_addr, **server.options())
    await replier.start()

    async def answer(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        for msg in msgs:
            await replier.send(MessageUtil.create_reply_message(msg, b"re:" + msg.body))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push_consumer(server, unique("SrvReqG"))
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(answer)
    await consumer.start()
    try:
        await until(lambda: len([q for q in consumer.assigned_queues() if q.topic == topic]) == 2)
        async with Producer(unique("SrvReqPG"), server.namesrv_addr, **server.options()) as requester:
            reply = await requester.request(Message(topic, b"ping"), timeout=30.0)
            second = await requester.request(Message(topic, b"pong"), timeout=30.0)
    finally:
        await consumer.shutdown()
        await replier.shutdown()
    assert (reply.body, second.body) == (b"re:ping", b"re:pong")
    assert reply.topic == "DefaultCluster_REPLY_TOPIC" and reply.properties["MSG_TYPE"] == "reply"


# --- message trace --------------------------------------------------------------------------------------------


async def test_trace_records_of_a_send_and_its_consume(server: Server) -> None:
    topic, pgroup, cgroup = unique("SrvTrace"), unique("SrvTracePG"), unique("SrvTraceG")
    await server.create_topic(topic, 2)
    consumed: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        consumed.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push_consumer(server, cgroup, enable_msg_trace=True, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        async with Producer(pgroup, server.namesrv_addr, **server.options(enable_msg_trace=True)) as producer:
            sent = await producer.send(Message(topic, b"traced", tags="TagT", keys=["trace-key"]))
        await until(lambda: len(consumed) == 1)
    finally:
        await consumer.shutdown()  # flushes the consumer's records
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:

        async def records() -> list[Any]:
            found = await admin.query_message(TRACE_TOPIC, sent.msg_id, 64)
            return [ctx for m in found for ctx in decoder_from_trace_data_string(m.body.decode())]

        contexts = await until_async(records, lambda cs: {c.trace_type.name for c in cs} >= {"Pub", "SubBefore",
                                                                                          "SubAfter"})
    pub = next(c for c in contexts if c.trace_type.name == "Pub")
    assert pub.group_name == pgroup and pub.trace_beans[0].topic == topic and pub.trace_beans[0].tags == "TagT"
    assert pub.trace_beans[0].msg_id == sent.msg_id and pub.success
    before = next(c for c in contexts if c.trace_type.name == "SubBefore")
    assert before.group_name == cgroup and before.trace_beans[0].msg_id == sent.msg_id
    after = next(c for c in contexts if c.trace_type.name == "SubAfter")  # (4.9.4+: with its group and time)
    assert after.group_name == cgroup and after.request_id == before.request_id and after.success


# --- the admin API --------------------------------------------------------------------------------------------


async def test_admin_api(server: Server) -> None:
    topic, group, pgroup = unique("SrvAdm"), unique("SrvAdmG"), unique("SrvAdmPG")
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
        info = await admin.examine_broker_cluster_info()
        assert server.broker_name in info.cluster_addr_table[server.cluster]
        broker_addr = info.broker_addr_table[server.broker_name].broker_addrs[0]
        assert await admin.create_topic(TopicConfig(topic, 3, 3), cluster=server.cluster) == [broker_addr]
        await until_async(admin.fetch_all_topic_list, lambda topics: topic in topics)
        async with Producer(pgroup, server.namesrv_addr, **server.options()) as producer:
            sent = [await producer.send(Message(topic, b"adm-%d" % i, keys=["adm-key"]),
                                        MessageQueue(topic, server.broker_name, i % 3)) for i in range(6)]
            producers = await admin.examine_producer_connection_info(pgroup, topic)
            assert len(producers.connection_set) == 1
        # (a send is answered before its message reaches the consume queue, on both servers)
        await until_async(lambda: admin.examine_topic_stats(topic),
                          lambda stats: sorted(o.max_offset for o in stats.offset_table.values()) == [2, 2, 2])
        viewed = await admin.view_message(sent[4].offset_msg_id)
        assert viewed is not None and viewed.body == b"adm-4"
        by_key = await until_async(lambda: admin.query_message(topic, "adm-key"), lambda found: len(found) == 6)
        assert sorted(m.body for m in by_key) == sorted(b"adm-%d" % i for i in range(6))
        unique_key = await admin.query_message_by_unique_key(topic, sent[1].msg_id)
        assert unique_key is not None and unique_key.body == b"adm-1"

        consumed: list[MessageExt] = []

        async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
            consumed.extend(msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = push_consumer(server, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        try:
            await until(lambda: len(consumed) == 6)
            consume = await until_async(lambda: admin.examine_consume_stats(group, topic),
                                        lambda s: s.compute_total_diff() == 0)
            assert sorted(w.broker_offset for w in consume.offset_table.values()) == [2, 2, 2]
            connection = await admin.examine_consumer_connection_info(group)
            assert len(connection.connection_set) == 1 and topic in connection.subscription_table
            assert connection.consume_type == "CONSUME_PASSIVELY"
        finally:
            await consumer.shutdown()
        reset = await admin.reset_offset_by_timestamp(topic, group, 0)
        assert sorted(reset.offsets.values()) == [0, 0, 0]
        config = await admin.get_broker_config(broker_addr)
        assert config["brokerName"] == server.broker_name and config["autoCreateTopicEnable"] == "true"
        runtime = await admin.fetch_broker_runtime_stats(broker_addr)
        assert int(runtime["msgPutTotalTodayNow"]) >= 6
        await admin.delete_topic(topic, server.cluster)
        await until_async(admin.fetch_all_topic_list, lambda topics: topic not in topics)
