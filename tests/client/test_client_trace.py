"""Message trace over a real name server and broker: producers and consumers with enable_msg_trace write
RocketMQ's trace records (TraceDataEncoder's text) to RMQ_SYS_TRACE_TOPIC or a topic of their own, indexed by
message id, and ``pocketmq queryMsgTraceById`` shows them.

The records are read back with ``reference_decode``, written here from RocketMQ 4.9.7's format (field positions
of Pub / SubBefore / SubAfter / EndTransaction, 0x01 between fields, 0x02 after each record), not with
pocketmq's decoder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from push_helpers import FAST_BROKER, create_topic, make_consumer, unique

from pocketmq.cli import main
from pocketmq.client import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus, Message, Producer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.producer.transaction_producer import LocalTransactionState, TransactionProducer
from pocketmq.client.trace import (
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decoder_from_trace_data_string,
    encoder_from_context_bean,
)
from pocketmq.embedded import EmbeddedCluster

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


def reference_decode(body: bytes) -> list[dict[str, str]]:
    """RocketMQ's trace text, field by field, as its TraceDataEncoder.decoderFromTraceDataString reads it."""
    out = []
    for record in body.decode("utf-8").split("\x02"):
        if not record:
            continue
        f = record.split("\x01")
        if f[0] == "Pub":
            names = ["type", "timestamp", "region", "group", "topic", "msgId", "tags", "keys", "storeHost",
                     "bodyLength", "costTime", "msgType", "offsetMsgId", "success"]
        elif f[0] == "SubBefore":
            names = ["type", "timestamp", "region", "group", "requestId", "msgId", "retryTimes", "keys"]
        elif f[0] == "SubAfter":  # (the time and group since 4.9.4; Java reads neither from a shorter record)
            names = ["type", "requestId", "msgId", "costTime", "success", "keys", "contextCode", "timestamp",
                     "group"]
        elif f[0] == "EndTransaction":
            names = ["type", "timestamp", "region", "group", "topic", "msgId", "tags", "keys", "storeHost",
                     "msgType", "transactionId", "transactionState", "fromTransactionCheck"]
        else:
            raise AssertionError(f"unknown record {record!r}")
        assert len(f) == len(names), (f, names)
        out.append(dict(zip(names, f, strict=True)))
    return out


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, trace_topic_enable=True, **FAST_BROKER) as c:
        yield c


async def trace_records(cluster: EmbeddedCluster, msg_id: str, poll: Any, want: set[str],
                        topic: str = TRACE_TOPIC) -> tuple[list[dict[str, str]], list[Any]]:
    """The records about ``msg_id`` in ``topic`` once every type in ``want`` is there, and the trace messages."""
    found: list[dict[str, str]] = []
    messages: list[Any] = []
    async with MQAdminExt(cluster.namesrv_addr) as admin:

        async def look() -> bool:
            nonlocal found, messages
            messages = await admin.query_message(topic, msg_id, 64)
            found = [r for m in messages for r in reference_decode(m.body) if r["msgId"] == msg_id]
            return want <= {r["type"] for r in found}

        for _ in range(200):
            if await look():
                break
            await asyncio.sleep(0.05)
    assert want <= {r["type"] for r in found}, found
    return found, messages


async def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_send_and_consume_leave_pub_and_sub_records(cluster, poll, capsys, protocol: str) -> None:
    topic, pgroup, cgroup = unique("TraceT"), unique("TracePG"), unique("TraceCG")
    await create_topic(cluster, topic, 2)
    consumed: list[Any] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        consumed.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(cluster, cgroup, enable_msg_trace=True, protocol=protocol)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        await poll(lambda: len(topic_queues(consumer, topic)) == 2)
        async with Producer(pgroup, cluster.namesrv_addr, instance_name=unique("tp"), enable_msg_trace=True,
                            protocol=protocol) as producer:
            result = await producer.send(Message(topic, b"traced body", tags="TagA", keys=["order-1"]))
            await poll(lambda: len(consumed) == 1)
    finally:
        await consumer.shutdown()  # flushes the consumer's records
    records, messages = await trace_records(cluster, result.msg_id, poll, {"Pub", "SubBefore", "SubAfter"})
    pub = next(r for r in records if r["type"] == "Pub")
    assert pub["group"] == pgroup and pub["topic"] == topic and pub["tags"] == "TagA" and pub["keys"] == "order-1"
    assert pub["offsetMsgId"] == result.offset_msg_id and pub["success"] == "true"
    assert pub["storeHost"] == cluster.broker_addr and pub["bodyLength"] == str(len(b"traced body"))
    assert pub["msgType"] == "0" and pub["region"] == "DefaultRegion" and int(pub["costTime"]) >= 0
    before = next(r for r in records if r["type"] == "SubBefore")
    after = next(r for r in records if r["type"] == "SubAfter")
    assert before["group"] == cgroup and before["retryTimes"] == "0" and before["keys"] == "order-1"
    assert after["requestId"] == before["requestId"] and after["group"] == cgroup
    assert after["success"] == "true" and after["contextCode"] == "0"
    # each trace message is indexed by the ids (and keys) of the messages it traces
    assert all(result.msg_id in m.keys for m in messages)
    assert all(m.topic == TRACE_TOPIC for m in messages)

    code, out, err = await run_cli(capsys, "queryMsgTraceById", "-n", cluster.namesrv_addr, "-i", result.msg_id,
                                   "--protocol", protocol)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"]
    assert lines[1].split()[:2] == ["Pub", pgroup] and lines[1].split()[-1] == "success"
    sub_header = lines.index(next(line for line in lines if line.startswith("#Type") and "#ConsumerGroup" in line))
    sub = lines[sub_header + 1].split()
    assert sub[:2] == ["Sub", cgroup] and sub[-1] == "success"


async def test_failed_consume_and_custom_trace_topic(cluster, poll, capsys) -> None:
    topic, trace_topic = unique("TraceT"), unique("MyTrace")
    pgroup, cgroup = unique("TracePG"), unique("TraceCG")
    await create_topic(cluster, topic, 1)
    await create_topic(cluster, trace_topic, 1)
    calls: list[int] = []

    async def fail_once(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        calls.append(msgs[0].reconsume_times)
        if len(calls) == 1:
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(cluster, cgroup, enable_msg_trace=True, custom_trace_topic=trace_topic)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(fail_once)
    await consumer.start()
    try:
        await poll(lambda: len(topic_queues(consumer, topic)) == 1)
        async with Producer(pgroup, cluster.namesrv_addr, instance_name=unique("tp"), enable_msg_trace=True,
                            custom_trace_topic=trace_topic) as producer:
            result = await producer.send(Message(topic, b"fails once"))
            await poll(lambda: len(calls) == 2, timeout=20)
    finally:
        await consumer.shutdown()
    records, messages = await trace_records(cluster, result.msg_id, poll, {"Pub", "SubAfter"}, trace_topic)
    afters = sorted((r for r in records if r["type"] == "SubAfter"), key=lambda r: int(r["timestamp"]))
    assert [(a["success"], a["contextCode"]) for a in afters] == [("false", "4"), ("true", "0")]
    befores = sorted((r for r in records if r["type"] == "SubBefore"), key=lambda r: int(r["timestamp"]))
    assert [b["retryTimes"] for b in befores] == ["0", "1"]
    assert pub_count(records) == 1  # the retry is the broker's copy, not a second send
    assert all(m.topic == trace_topic for m in messages)
    code, out, err = await run_cli(capsys, "queryMsgTraceById", "-n", cluster.namesrv_addr, "-i", result.msg_id,
                                   "-t", trace_topic)
    assert code == 0, err
    subs = [line.split() for line in out.splitlines() if line.startswith("Sub ")]
    assert sorted(s[-1] for s in subs) == ["failed", "success"]
    # nothing about it in the default trace topic
    async with MQAdminExt(cluster.namesrv_addr) as admin:
        assert await admin.query_message(TRACE_TOPIC, result.msg_id, 64) == []


def topic_queues(consumer: Any, topic: str) -> list[Any]:
    return [q for q in consumer.assigned_queues() if q.topic == topic]


def pub_count(records: list[dict[str, str]]) -> int:
    return sum(r["type"] == "Pub" for r in records)


async def test_orderly_consumer_is_traced_and_oneway_sends_are_not(cluster, poll) -> None:
    topic, cgroup = unique("TraceT"), unique("TraceCG")
    await create_topic(cluster, topic, 1)
    consumed: list[Any] = []
    calls = 0

    async def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the first call fails")  # (its SubAfter says EXCEPTION, not FAILED)
        consumed.extend(msgs)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = make_consumer(cluster, cgroup, enable_msg_trace=True)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    await consumer.start()
    try:
        await poll(lambda: len(topic_queues(consumer, topic)) == 1)
        async with Producer(unique("TracePG"), cluster.namesrv_addr, instance_name=unique("tp"),
                            enable_msg_trace=True) as producer:
            await producer.send_oneway(Message(topic, b"oneway"))
            await poll(lambda: len(consumed) == 1)
    finally:
        await consumer.shutdown()
    msg_id = consumed[0].msg_id
    records, _ = await trace_records(cluster, msg_id, poll, {"SubBefore", "SubAfter"})
    assert pub_count(records) == 0  # RocketMQ traces sends that got an answer only
    afters = [(r["success"], r["contextCode"]) for r in records if r["type"] == "SubAfter"]
    assert sorted(afters) == [("false", "2"), ("true", "0")]  # ConsumeReturnType EXCEPTION, then SUCCESS


def test_encoder_writes_what_the_reference_decoder_reads_and_back() -> None:
    pub = TraceContext(TraceType.Pub, 1700000000123, "DefaultRegion", "PG", cost_time=7, trace_beans=[
        TraceBean(topic="T", msg_id="ID1", offset_msg_id="OFF1", tags="", keys="k1 k2", store_host="1.2.3.4:10911",
                  body_length=5)])
    sub = TraceContext(TraceType.SubBefore, 1700000000200, "DefaultRegion", "CG", request_id="R1", trace_beans=[
        TraceBean(msg_id="ID1", retry_times=2, keys=""), TraceBean(msg_id="ID2", retry_times=0, keys="x")])
    after = TraceContext(TraceType.SubAfter, 1700000000300, group_name="CG", request_id="R1", cost_time=3,
                         success=False, context_code=2, trace_beans=sub.trace_beans)
    beans = [encoder_from_context_bean(c) for c in (pub, sub, after)]
    body = "".join(b.trans_data for b in beans).encode()
    ref = reference_decode(body)
    assert [r["type"] for r in ref] == ["Pub", "SubBefore", "SubBefore", "SubAfter", "SubAfter"]
    assert ref[0]["tags"] == "null" and ref[0]["keys"] == "k1 k2"  # a missing value is Java's null
    assert ref[2]["keys"] == "x" and ref[1]["keys"] == "null" and ref[4]["contextCode"] == "2"
    assert beans[0].trans_key == {"ID1", "k1 k2"} and beans[1].trans_key == {"ID1", "ID2", "x"}
    back = decoder_from_trace_data_string(body.decode())
    assert back[0].trace_beans[0].offset_msg_id == "OFF1" and back[0].cost_time == 7 and back[0].success
    assert back[1].request_id == "R1" and back[1].trace_beans[0].retry_times == 2
    assert back[4].success is False and back[4].time_stamp == 1700000000300 and back[4].group_name == "CG"
    end = TraceContext(TraceType.EndTransaction, 1700000000400, "DefaultRegion", "PG", request_id="", trace_beans=[
        TraceBean(topic="T", msg_id="ID1", tags="TagT", keys="k", store_host="1.2.3.4:10911",
                  msg_type=MessageType.Trans_msg_Commit, transaction_id="TX1", transaction_state="COMMIT_MESSAGE",
                  from_transaction_check=True)])
    [ref_end] = reference_decode(encoder_from_context_bean(end).trans_data.encode())
    assert (ref_end["msgType"], ref_end["transactionId"], ref_end["transactionState"],
            ref_end["fromTransactionCheck"]) == ("2", "TX1", "COMMIT_MESSAGE", "true")
    [back_end] = decoder_from_trace_data_string(encoder_from_context_bean(end).trans_data)
    back_end.request_id = ""  # (not in the record)
    assert back_end == end


_text = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20)


@given(topic=_text, msg_id=_text.filter(bool), tags=_text, keys=_text, group=_text, cost=st.integers(0, 10**6),
       ok=st.booleans(), retry=st.integers(0, 16), code=st.integers(0, 4))
def test_records_survive_encoding_whatever_the_text(topic: str, msg_id: str, tags: str, keys: str, group: str,
                                                    cost: int, ok: bool, retry: int, code: int) -> None:
    """Any field value (but the separators) comes back from pocketmq's decoder, an empty one as Java's
    "null", and the reference decoder reads every record."""
    null = lambda v: v or "null"  # noqa: E731
    pub = TraceContext(TraceType.Pub, 1, "R", group, cost_time=cost, success=ok, trace_beans=[
        TraceBean(topic=topic, msg_id=msg_id, tags=tags, keys=keys, offset_msg_id="O", body_length=3)])
    before = TraceContext(TraceType.SubBefore, 2, "R", group, request_id="Q", trace_beans=[
        TraceBean(msg_id=msg_id, retry_times=retry, keys=keys)])
    after = TraceContext(TraceType.SubAfter, 3, request_id="Q", cost_time=cost, success=ok, context_code=code,
                         trace_beans=before.trace_beans)
    body = "".join(encoder_from_context_bean(c).trans_data for c in (pub, before, after))
    assert len(reference_decode(body.encode())) == 3
    p, b, a = decoder_from_trace_data_string(body)
    assert (p.trace_beans[0].topic, p.trace_beans[0].tags, p.trace_beans[0].keys) == (null(topic), null(tags),
                                                                                       null(keys))
    assert (p.group_name, p.cost_time, p.success, p.trace_beans[0].msg_id) == (null(group), cost, ok, msg_id)
    assert (b.trace_beans[0].retry_times, b.request_id, b.group_name) == (retry, "Q", null(group))
    assert (a.success, a.context_code, a.cost_time, a.time_stamp, a.trace_beans[0].msg_id) == (ok, code, cost, 3,
                                                                                                msg_id)


async def test_lite_pull_consumer_is_traced(cluster, poll) -> None:
    from pocketmq.client import LitePullConsumer

    topic, cgroup = unique("TraceT"), unique("TraceLG")
    await create_topic(cluster, topic, 1)
    async with Producer(unique("TracePG"), cluster.namesrv_addr, instance_name=unique("tp")) as producer:
        result = await producer.send(Message(topic, b"polled"))  # untraced producer: Sub records only
    consumer = LitePullConsumer(cgroup, cluster.namesrv_addr, instance_name=unique("lp"), enable_msg_trace=True,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", rebalance_interval=0.2)
    consumer.subscribe(topic, "*")
    async with consumer:
        polled: list[Any] = []
        for _ in range(100):
            polled += await consumer.poll(timeout=0.1)
            if polled:
                break
    assert [m.body for m in polled] == [b"polled"]
    records, _ = await trace_records(cluster, result.msg_id, poll, {"SubBefore", "SubAfter"})
    assert pub_count(records) == 0
    assert next(r for r in records if r["type"] == "SubBefore")["group"] == cgroup
    assert next(r for r in records if r["type"] == "SubAfter")["success"] == "true"


class _Commit:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_a_traced_transaction_leaves_an_end_transaction_record(cluster, poll) -> None:
    # (EndTransactionTraceHookImpl: Apache's traced transaction producer writes one; pocketmq's wrote none)
    topic, group = unique("TopicTxTrace"), unique("PGTx")
    await create_topic(cluster, topic, 1)
    async with TransactionProducer(group, cluster.namesrv_addr, transaction_listener=_Commit(),
                                   instance_name=unique("txp"), enable_msg_trace=True) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"tx", tags="TagT", keys=["k-tx"]))
    records, _ = await trace_records(cluster, result.msg_id, poll, {"Pub", "EndTransaction"})
    end = next(r for r in records if r["type"] == "EndTransaction")
    assert (end["group"], end["topic"], end["tags"], end["keys"], end["storeHost"]) == (
        group, topic, "TagT", "k-tx", cluster.broker_addr)
    assert (end["msgType"], end["transactionState"], end["fromTransactionCheck"]) == ("2", "COMMIT_MESSAGE", "false")
    assert end["transactionId"] == result.transaction_id


@pytest.mark.parametrize("protocol", ["rocketmq", "msgpack"])
async def test_pub_records_take_the_brokers_region_and_none_is_written_when_it_says_trace_off(
    tmp_path, poll, protocol
) -> None:
    # Both come with the broker's answer to a send (MSG_REGION, TRACE_ON); the client wrote DefaultRegion, and a Pub
    # record whatever the broker said. (A msgpack answer carried neither: the client took the defaults.)
    for trace_on in (True, False):
        async with EmbeddedCluster(tmp_path / str(trace_on), trace_topic_enable=True, region_id="R1",
                                   trace_on=trace_on, **FAST_BROKER) as c:
            topic = unique("TopicRegion")
            await create_topic(c, topic, 1)
            async with Producer(unique("PGRegion"), c.namesrv_addr, instance_name=unique("rp"), protocol=protocol,
                                enable_msg_trace=True) as producer:
                result = await producer.send(Message(topic, b"x"))
            # (the producer's shutdown sent every record it had)
            if trace_on:
                records, _ = await trace_records(c, result.msg_id, poll, {"Pub"})
                assert records[0]["region"] == "R1"
            else:
                assert c.broker.store.get_max_offset_in_queue(TRACE_TOPIC, 0) <= 0


async def test_trace_records_past_the_keys_a_message_holds_go_in_several_trace_messages(cluster, poll) -> None:
    """Forty batch sends of 32 in one window: each Pub record is keyed by its batch's joined ids (about 1 KB), and
    the one trace message holding them all had 40 KB of KEYS, which the broker refuses (properties over 32,767
    bytes): every record of the window was lost (RocketMQ's dispatcher the same). They now go in several."""
    topic = unique("TopicTraceKeys")
    await create_topic(cluster, topic, 1)
    async with Producer(unique("PGTraceKeys"), cluster.namesrv_addr, instance_name=unique("tk"),
                        enable_msg_trace=True) as producer:
        dispatcher = producer.trace_dispatcher
        assert dispatcher is not None
        dispatcher.flush_interval = 30.0  # (every record in one window, whatever the machine's pace)
        results = [await producer.send_batch([Message(topic, b"x") for _ in range(32)]) for _ in range(40)]
        await dispatcher.flush()
        assert dispatcher.sent_messages >= 2
    for result in (results[0], results[19], results[-1]):
        records, _ = await trace_records(cluster, result.msg_id, poll, {"Pub"})
        assert records[0]["topic"] == topic


async def test_a_record_whose_own_keys_pass_the_budget_is_stored_without_them(cluster, poll) -> None:
    """A batch of 1,000: its Pub record's one key (the joined ids) is 33 KB, past what a message's properties may
    hold; the trace message goes without it rather than be refused."""
    topic = unique("TopicTraceBig")
    await create_topic(cluster, topic, 1)
    async with Producer(unique("PGTraceBig"), cluster.namesrv_addr, instance_name=unique("tb"),
                        enable_msg_trace=True) as producer:
        dispatcher = producer.trace_dispatcher
        assert dispatcher is not None
        await producer.send_batch([Message(topic, b"x") for _ in range(1000)])
        await dispatcher.flush()
        assert dispatcher.sent_messages == 1
