"""SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE: checks, response codes, and what ends up stored."""

from __future__ import annotations

import struct

import pytest
from broker_harness import MQ
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.message import properties_to_string
from pocketmq.common.message_batch import (
    BatchItem,
    MessageBatchError,
    _split_each,
    _split_one_shape,
    decode_message_batch,
    encode_message_batch,
)
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import ViewMessageRequestHeader
from pocketmq.remoting.wire_protocol import WireProtocol

# What the broker appends to every message it stores, as Apache RocketMQ 5's does.
REGION_STAMP = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
STAMP = "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02"


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2])
async def test_send_then_pull_back_the_identical_record(broker, mq, dispatched, code) -> None:
    props = mq.props("TagA", "k1 k2", UNIQ_KEY="ABCDEF0123")
    resp = await mq.send("TopicSend", b"\x00payload\xff", queue_id=2, properties=props, code=code, flag=7)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["queueId"] == 2 and resp.ext_fields["queueOffset"] == 0
    host, phy = decode_message_id(resp.ext_fields["msgId"])
    assert host == broker.address
    await dispatched(broker)

    pulled = await mq.pull("G", "TopicSend", 2, 0)
    assert pulled.code == ResponseCode.SUCCESS
    assert (pulled.ext_fields["nextBeginOffset"], pulled.ext_fields["maxOffset"]) == (1, 1)
    [msg] = decode_all(pulled.body)
    assert msg.body == b"\x00payload\xff" and msg.flag == 7 and msg.topic == "TopicSend"
    assert msg.queue_id == 2 and msg.queue_offset == 0 and msg.commit_log_offset == phy
    assert msg.store_host == broker.address
    assert msg.born_host == await mq.local_address()
    # The producer's encoded properties are stored as they came, the region stamp (Apache 5's) appended.
    assert msg.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABCDEF0123", **REGION_STAMP}
    assert pulled.body.endswith((props + STAMP).encode())

    # The same bytes as the record VIEW_MESSAGE_BY_ID reads straight from the commit log.
    viewed = await mq.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(phy))
    assert viewed.code == ResponseCode.SUCCESS and viewed.body == pulled.body


async def test_batch_send_stores_consecutive_records(broker, mq, dispatched) -> None:
    items = [
        BatchItem(1, b"first", properties_to_string({"TAGS": "A", "UNIQ_KEY": "U1"})),
        BatchItem(2, b"2", properties_to_string({"UNIQ_KEY": "U2"})),  # (an empty body is refused: test_broker_hostile)
        BatchItem(3, b"x" * 300, ""),
    ]
    await mq.send("TopicBatch", b"before", queue_id=1)
    resp = await mq.send_batch("TopicBatch", items, queue_id=1)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    ids = resp.ext_fields["msgId"].split(",")
    assert len(ids) == 3 and resp.ext_fields["queueOffset"] == 1
    offsets = [decode_message_id(i)[1] for i in ids]
    assert offsets == sorted(offsets) and len(set(offsets)) == 3
    await dispatched(broker)
    pulled = await mq.pull("G", "TopicBatch", 1, 1)
    msgs = decode_all(pulled.body)
    assert [(m.flag, m.body, m.queue_offset) for m in msgs] == [(1, b"first", 1), (2, b"2", 2), (3, b"x" * 300, 3)]
    assert msgs[0].properties == {"TAGS": "A", "UNIQ_KEY": "U1", **REGION_STAMP}
    assert msgs[2].properties == REGION_STAMP
    assert [m.commit_log_offset for m in msgs] == offsets


async def test_the_region_stamp_follows_the_brokers_config(cluster, dispatched) -> None:
    # A message that carries the stamp already (sent again) is re-stamped with this broker's values, as Apache
    # 5's buildMsgContext puts them; traceOn=false tells clients to skip their traces of the message.
    broker = await cluster.broker(region_id="EastRegion", trace_on=False)
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)  # (the answer's stamp is the native protocol's)
    cluster.clients.append(client)
    mq = MQ(client, broker.address)
    again = MQ.props("T", MSG_REGION="DefaultRegion", TRACE_ON="true")
    resp = await mq.send("TopicStamp", b"again", queue_id=0, properties=again)
    assert (resp.ext_fields["MSG_REGION"], resp.ext_fields["TRACE_ON"]) == ("EastRegion", "false")
    assert (await mq.send("TopicStamp", b"new", queue_id=0, properties=MQ.props("T"))).code == ResponseCode.SUCCESS
    items = [BatchItem(0, b"b1", properties_to_string({"MSG_REGION": "Old"})), BatchItem(0, b"b2", "K\x01V")]
    assert (await mq.send_batch("TopicStamp", items, queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    msgs = decode_all((await mq.pull("G", "TopicStamp", 0, 0)).body)
    stamp = {"MSG_REGION": "EastRegion", "TRACE_ON": "false"}
    assert [m.properties for m in msgs] == [{"TAGS": "T", **stamp}, {"TAGS": "T", **stamp}, stamp, {"K": "V", **stamp}]
    # A batch record appends the stamp as Apache 5 appends the batch's properties: twice there, the last counts.
    assert msgs[2].properties_string == "MSG_REGION\x01Old\x02MSG_REGION\x01EastRegion\x02TRACE_ON\x01false\x02"


async def test_properties_with_no_room_for_the_region_stamp_are_stored_without_it(broker, mq, dispatched) -> None:
    # 4.9.7 stores a message whose own properties fit the 32,767 bytes a record's take: pocketmq's stamp, which
    # would take them past, is left off rather than the message refused; one stamp short of the limit is stamped,
    # and so is a batch record
    full = MQ.props("T", V="v" * (32767 - len(MQ.props("T", V=""))))
    roomy = MQ.props("T", V="v" * (32767 - len(STAMP) - len(MQ.props("T", V=""))))
    for props in (full, roomy):
        assert (await mq.send("TopicFull", b"one", queue_id=0, properties=props)).code == ResponseCode.SUCCESS
    assert (await mq.send("TopicFull", b"over", queue_id=0, properties=full + "X\x01Y\x02")).code == (
        ResponseCode.MESSAGE_ILLEGAL)
    # Past the limit as sent, within it as 4.9.7 stores it (decoded and encoded again: the item without a
    # name-value separator, and the first of a key given twice, dropped)
    junk = "TAGS" + "v" * 40_000 + "\x02K\x01old\x02K\x01new"
    assert (await mq.send("TopicFull", b"junk", queue_id=0, properties=junk)).code == ResponseCode.SUCCESS
    items = [BatchItem(0, b"b1", full), BatchItem(0, b"b2", "K\x01V")]
    assert (await mq.send_batch("TopicFull", items, queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    msgs = decode_all((await mq.pull("G", "TopicFull", 0, 0)).body)
    assert [m.properties_string for m in msgs] == [full, roomy + STAMP, "K\x01new\x02" + STAMP, full,
                                                   "K\x01V\x02" + STAMP]


def test_batch_codec_checks_total_size_and_lengths() -> None:
    data = encode_message_batch([BatchItem(0, b"ab", "K\x01V\x02"), BatchItem(5, b"", "")])
    assert [(i.flag, i.body, i.properties) for i in decode_message_batch(data)] == [
        (0, b"ab", "K\x01V\x02"),
        (5, b"", ""),
    ]
    bad_total = struct.pack(">i", 99) + data[4:]
    with pytest.raises(MessageBatchError, match="TOTALSIZE"):
        decode_message_batch(bad_total)
    with pytest.raises(MessageBatchError, match="truncated|past the end"):
        decode_message_batch(data[:-3])
    not_utf8 = encode_message_batch([BatchItem(0, b"ab", "K\x01V\x02")]).replace(b"V", b"\xff")
    with pytest.raises(MessageBatchError, match="not UTF-8"):
        decode_message_batch(not_utf8)
    utf8 = encode_message_batch([BatchItem(0, b"ab", "K\x01\u00e9\x02")])
    assert decode_message_batch(utf8)[0].properties == "K\x01\u00e9\x02"


@pytest.mark.parametrize("split", [_split_each, _split_one_shape])
def test_batch_properties_length_is_a_signed_short_as_in_java(split) -> None:
    """PROPERTIESLENGTH 0xFFFF is -1 to Java's getShort: refused, not read as 65535 bytes of properties."""
    one = struct.pack(">iiiii", 22 + 1, 0, 0, 0, 1) + b"x" + struct.pack(">H", 0xFFFF)
    if split is _split_one_shape:
        assert split(one + one) is None  # (not one shape it can split: the message-by-message loop says why)
    else:
        with pytest.raises(MessageBatchError, match="properties length -1"):
            split(one)


async def test_bad_batches_are_message_illegal(broker, mq) -> None:
    await mq.create_topic("TopicBatchBad")
    resp = await mq.invoke(
        RequestCode.SEND_BATCH_MESSAGE,
        {"a": "PG", "b": "TopicBatchBad", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 0, "h": 0, "m": True},
        b"\x00\x00\x00\x30garbage",
    )
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "batch" in resp.remark
    resp = await mq.send_batch("%RETRY%G1", [BatchItem(0, b"x", "")])
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "retry" in resp.remark
    delayed = [BatchItem(0, b"x", ""), BatchItem(0, b"y", properties_to_string({"DELAY": "2"}))]
    resp = await mq.send_batch("TopicBatchBad", delayed)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "delay" in resp.remark


@pytest.mark.parametrize("level", ["0", "-1"])
async def test_a_batch_whose_delay_level_asks_for_no_delay_is_stored(broker, mq, dispatched, level) -> None:
    """Apache 5.5.0 stores such a batch (a level of 0 or less is no delay), and the Java client's batch check only
    refuses a level above 0: the messages are stored in their own topic, at once."""
    await mq.create_topic("TopicBatchLevel")
    items = [BatchItem(0, b"x", properties_to_string({"DELAY": level})), BatchItem(0, b"y", "")]
    resp = await mq.send_batch("TopicBatchLevel", items)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    await dispatched(broker)
    pulled = await mq.pull("G", "TopicBatchLevel", 0, 0)
    assert [m.body for m in decode_all(pulled.body)] == [b"x", b"y"]


@pytest.mark.parametrize(
    "timer", [{"TIMER_DELAY_SEC": "3"}, {"TIMER_DELAY_MS": "3000"}, {"TIMER_DELIVER_MS": "4102444800000"},
              {"__STARTDELIVERTIME": "4102444800000"}, {"TIMER_DELAY_SEC": "three"}])
async def test_a_batch_whose_timer_asks_for_a_delay_is_refused(broker, mq, timer) -> None:
    """RocketMQ's batch put reads no timer property and delivers such messages at once; pocketmq refuses the batch,
    as it refuses one with a delay level, rather than drop what was asked for silently."""
    await mq.create_topic("TopicBatchTimer")
    items = [BatchItem(0, b"x", ""), BatchItem(0, b"y", properties_to_string(timer))]
    resp = await mq.send_batch("TopicBatchTimer", items)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL, resp
    assert "(a batch cannot carry a timer (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS))" in resp.remark


@pytest.mark.parametrize(("timer", "code", "remark"), [
    ({"TIMER_DELAY_SEC": "abc"}, ResponseCode.MESSAGE_ILLEGAL, "timer message illegal, the delay time should not"),
    ({"TIMER_DELAY_MS": str(4 * 86_400_000)}, ResponseCode.MESSAGE_ILLEGAL, "timer message illegal, the delay"),
    ({"TIMER_DELAY_MS": "0", "TIMER_DEL_UNIQKEY": "k"}, ResponseCode.MESSAGE_ILLEGAL, "timer message illegal"),
    ({"TIMER_DELAY_MS": "3000"}, ResponseCode.MESSAGE_ILLEGAL, "a batch cannot carry a timer (TIMER_DELIVER_MS"),
    ({"TIMER_DELIVER_MS": "1000"}, ResponseCode.SUCCESS, None),
    ({"TIMER_DELAY_MS": "3000", "TIMER_OUT_MS": "5"}, ResponseCode.SUCCESS, None),  # (routed already)
])
async def test_a_batch_headers_timer_is_read_as_a_single_messages(broker, mq, timer, code, remark) -> None:
    """RocketMQ 5's put reads the timer of a batch header's properties as a single message's: what it refuses is
    refused with its answer; one due later, which 5.5.0 parks where it is never delivered, is refused."""
    await mq.create_topic("TopicBatchHeaderTimer")
    resp = await mq.send_batch("TopicBatchHeaderTimer", [BatchItem(0, b"x", "")],
                               properties=properties_to_string(timer))
    assert (resp.code, resp.remark and resp.remark[:len(remark or "")]) == (code, remark), resp.remark


async def test_a_batch_whose_timer_is_due_already_is_stored(broker, mq, dispatched) -> None:
    await mq.create_topic("TopicBatchDue")
    items = [BatchItem(0, b"x", properties_to_string({"TIMER_DELAY_SEC": "0"})),
             BatchItem(0, b"y", properties_to_string({"TIMER_DELIVER_MS": "1000"}))]
    resp = await mq.send_batch("TopicBatchDue", items)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    await dispatched(broker)
    pulled = await mq.pull("G", "TopicBatchDue", 0, 0)
    assert [m.body for m in decode_all(pulled.body)] == [b"x", b"y"]


@pytest.mark.parametrize(
    ("topic", "remark"),
    [("bad topic!", "illegal characters"), ("t" * 128, "longer than"), ("", "blank")],
)
async def test_invalid_topic_is_system_error_with_reason(broker, mq, topic, remark) -> None:
    resp = await mq.send(topic)
    # RocketMQ 4.9.8 msgCheck answers SYSTEM_ERROR for an invalid topic name.
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert remark in resp.remark


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC"])
async def test_system_topics_refuse_sends(broker, mq, topic) -> None:
    resp = await mq.send(topic)
    assert resp.code == ResponseCode.NO_PERMISSION and "forbidden" in resp.remark


async def test_unknown_topic_without_auto_create_is_topic_not_exist(cluster) -> None:
    broker = await cluster.broker(auto_create_topic_enable=False)
    mq = cluster.mq(broker)
    assert broker.topic_config_manager.select_topic_config("TBW102") is None
    resp = await mq.send("NoSuchTopic")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in resp.remark
    assert broker.topic_config_manager.select_topic_config("NoSuchTopic") is None


async def test_auto_create_takes_min_of_client_and_default_queue_nums(broker, mq) -> None:
    resp = await mq.send("AutoTopic", default_topic_queue_nums=3)
    assert resp.code == ResponseCode.SUCCESS
    tc = broker.topic_config_manager.select_topic_config("AutoTopic")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (3, 3, 6)
    await mq.send("AutoTopic2", default_topic_queue_nums=100)
    assert broker.topic_config_manager.select_topic_config("AutoTopic2").write_queue_nums == 8  # TBW102's


async def test_auto_create_from_a_default_topic_without_inherit_fails(broker, mq) -> None:
    await mq.create_topic("PlainDefault")
    resp = await mq.send("ChildTopic", default_topic="PlainDefault")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


async def test_retry_topic_falls_back_to_one_queue(broker, mq) -> None:
    resp = await mq.send("%RETRY%GroupR", default_topic="NoDefault")
    assert resp.code == ResponseCode.SUCCESS
    tc = broker.topic_config_manager.select_topic_config("%RETRY%GroupR")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


async def test_retry_send_past_max_reconsume_goes_to_dlq(broker, mq, poll) -> None:
    resp = await mq.send("%RETRY%GroupD", default_topic="NoDefault", reconsume_times=4, max_reconsume_times=3)
    assert resp.code == ResponseCode.SUCCESS
    await poll(lambda: broker.store.get_max_offset_in_queue("%DLQ%GroupD", 0) == 1)
    assert broker.topic_config_manager.select_topic_config("%DLQ%GroupD").perm == 6
    assert broker.store.get_max_offset_in_queue("%RETRY%GroupD", 0) == 0
    # A DELAY that is no int is refused there too: 4.9.7 keeps it on the rerouted message and its put throws
    bad = await mq.send("%RETRY%GroupD", reconsume_times=4, max_reconsume_times=3, properties=MQ.props(DELAY=" "))
    assert bad.code == ResponseCode.SYSTEM_ERROR and "DELAY" in (bad.remark or "")


async def test_oversized_body_is_message_illegal(cluster) -> None:
    broker = await cluster.broker(max_message_size=1024)
    mq = cluster.mq(broker)
    assert (await mq.send("Big", b"x" * 1024)).code == ResponseCode.SUCCESS
    resp = await mq.send("Big", b"x" * 1025)
    assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, (
        "the message is illegal, maybe msg body or properties length not matched. msg body length limit 1024B, "
        "msg properties length limit 32KB."))
    resp = await mq.send_batch("Big", [BatchItem(0, b"y" * 600, ""), BatchItem(0, b"y" * 600, "")])
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL


async def test_queue_id_checks(broker, mq) -> None:
    await mq.create_topic("TopicQ", queues=4)
    resp = await mq.send("TopicQ", queue_id=4)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId[4] is illegal" in resp.remark
    # The topic as RocketMQ's TopicConfig.toString shows it.
    assert ("TopicConfig [topicName=TopicQ, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, "
            "topicSysFlag=0, order=false] Producer: ") in resp.remark
    seen = set()
    for _ in range(20):
        resp = await mq.send("TopicQ", queue_id=-1)
        assert resp.code == ResponseCode.SUCCESS
        seen.add(resp.ext_fields["queueId"])
    assert seen <= {0, 1, 2, 3} and len(seen) > 1


async def test_missing_header_field_and_body(broker, mq) -> None:
    resp = await mq.invoke(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T", "c": "TBW102", "d": 4})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "'e'" in resp.remark and "missing" in resp.remark
    resp = await mq.invoke(RequestCode.SEND_MESSAGE, {"topic": "T", "queueId": "zero"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "bad request" in resp.remark
    resp = await mq.send("TopicNoBody", None)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert (await mq.send("TopicNoBody", b"fine")).code == ResponseCode.SUCCESS


async def test_transaction_half_messages_are_held_back(broker, mq, dispatched) -> None:
    # Stored as a half message (tests/broker/test_broker_transaction.py): nothing in the topic's queue until a
    # commit.
    resp = await mq.send("TopicTx", properties=mq.props(TRAN_MSG="true", PGROUP="PG"), sys_flag=0x4)
    assert resp.code == ResponseCode.SUCCESS
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue("TopicTx", 0) == 0


async def test_full_disk_is_service_not_available(broker, mq) -> None:
    # A simulated full disk (the usage the store reads, and its flag); tests/broker/test_broker_disk_full.py
    # fills a real one.
    broker.store.disk_usage = lambda path: 0.95
    broker.store.running_flags.make_disk_full()
    try:
        resp = await mq.send("TopicDisk")
    finally:
        broker.store.disk_usage = lambda path: 0.10
        broker.store.running_flags.make_disk_ok()
    assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE and "disk" in resp.remark
    assert (await mq.send("TopicDisk")).code == ResponseCode.SUCCESS


async def test_oneway_send_is_stored(broker, mq, poll) -> None:
    header = {"a": "PG", "b": "TopicOneway", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 0, "h": 0}
    await mq.oneway(RequestCode.SEND_MESSAGE_V2, header, b"fire and forget")
    await poll(lambda: broker.store.get_max_offset_in_queue("TopicOneway", 0) == 1)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(0, 12),
    st.integers(0, 8),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=2),
)
def test_property_a_batch_of_one_shape_splits_as_message_by_message(count, body_len, props_len, edits) -> None:
    # The one-shape shortcut may only take what the message-by-message loop takes, and give the same.
    items = [BatchItem(i, bytes([65 + i]) * body_len, "P" * props_len) for i in range(count)]
    data = bytearray(encode_message_batch(items))
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        expected = _split_each(bytes(data))
    except MessageBatchError:
        expected = None
    shortcut = _split_one_shape(bytes(data))
    if shortcut is not None:
        assert shortcut == expected
    if not edits:
        assert shortcut == expected == ([i.flag for i in items], [i.body for i in items],
                                         [i.properties.encode() for i in items])
