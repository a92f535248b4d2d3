"""Batches in the commit log: one file for a whole batch, consecutive offsets, every field of every
record, the batch's message ids; and the batches the store refuses, each with why, writing nothing."""

from __future__ import annotations

import pytest

from pocketmq.common import MessageExtBrokerInner, decode, decode_message_id, pack_host
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE
from pocketmq.common.message import MessageExtBatch, create_message_id, unpack_host
from pocketmq.storage import PutMessageStatus
from pocketmq.storage.results import AppendMessageResult, AppendMessageStatus

from .conftest import (
    BLANK_MAGIC,
    COMMIT_LOG_FILE_SIZE,
    commit_log_files,
    msg,
    put_ok,
    scan_commit_log,
    walk_file,
)


def test_batch_lands_in_one_file_with_consecutive_offsets_even_when_it_forces_a_roll(store, store_root):
    first = put_ok(store, msg(body=b"before", queue_id=1))
    # fill the first file until a 10 x 1400-byte batch no longer fits in it
    while True:
        r = put_ok(store, msg(body=b"f" * 900, queue_id=1))
        end = r.wrote_offset + r.wrote_bytes
        if COMMIT_LOG_FILE_SIZE - end < 12_000:
            break
    assert end < COMMIT_LOG_FILE_SIZE
    batch = [msg(body=f"batch-{i}-".encode().ljust(1300, b"."), queue_id=1, KEYS=f"bk{i}") for i in range(10)]
    res = store.put_messages(batch)
    assert res.status == PutMessageStatus.PUT_OK
    ar = res.append_result
    offsets = [decode_message_id(x)[1] for x in ar.msg_id.split(",")]
    assert len(offsets) == 10
    assert all(o // COMMIT_LOG_FILE_SIZE == 1 for o in offsets)  # all in the second file
    assert offsets[0] == COMMIT_LOG_FILE_SIZE  # it rolled: the batch starts the new file
    assert ar.logics_offset == r.logics_offset + 1
    assert first.logics_offset == 0
    _, entries = walk_file(commit_log_files(store_root)[0])
    assert entries[-1][2] == BLANK_MAGIC and entries[-1][0] == end
    records = {p: m for p, m in scan_commit_log(store_root)}
    for i, off in enumerate(offsets):
        m = records[off]
        assert m.body == f"batch-{i}-".encode().ljust(1300, b".")
        assert m.queue_offset == ar.logics_offset + i and m.queue_id == 1
        assert m.properties["KEYS"] == f"bk{i}"
    for a, b in zip(offsets, offsets[1:], strict=False):
        assert b == a + records[a].store_size  # contiguous
    assert ar.wrote_bytes == sum(records[o].store_size for o in offsets) > COMMIT_LOG_FILE_SIZE - end
    assert store.wait_dispatched()
    assert store.get_max_offset_in_queue("TopicA", 1) == ar.logics_offset + 10
    after = put_ok(store, msg(body=b"after", queue_id=1))
    assert after.logics_offset == ar.logics_offset + 10


def test_batch_must_share_topic_and_queue_and_carry_no_delay(store):
    r = store.put_messages([msg(queue_id=0), msg(queue_id=1)])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL
    r = store.put_messages([msg(topic="TopicA"), msg(topic="TopicB")])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL
    r = store.put_messages([msg(DELAY="2"), msg()])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == 0


def test_batch_with_ipv6_born_hosts(store):
    v6 = pack_host("2001:db8::9", 1234)
    res = store.put_messages([MessageExtBrokerInner(
        topic="TopicA", body=b"b%d" % i, born_host=v6 if i % 2 else pack_host(
        "10.1.1.1", 1)) for i in range(4)])
    assert res.status == PutMessageStatus.PUT_OK
    offsets = [decode_message_id(x)[1] for x in res.append_result.msg_id.split(",")]
    got = [decode(store.select_one_message_by_offset(o), check_crc=True) for o in offsets]
    assert [m.body for m in got] == [b"b0", b"b1", b"b2", b"b3"]
    assert [m.sys_flag & 0x30 for m in got] == [0, 0x10, 0, 0x10]
    assert got[1].born_host == "[2001:db8::9]:1234" and got[2].born_host == "10.1.1.1:1"
    assert [m.queue_offset for m in got] == [0, 1, 2, 3]
    assert store.wait_dispatched()
    assert store.get_message("g", "TopicA", 0, 0, 32).message_count == 4


@pytest.mark.parametrize("store_host", [pack_host("10.0.0.1", 10911), pack_host("2001:db8::1", 10911)])
def test_batch_msg_id_lists_each_records_offset_msg_id(store_host):
    # A batch's msgId is built in bulk; it must read as RocketMQ's: one offsetMsgId per record, comma-joined.
    offsets = [0, 1, 255, 2**32 + 7, 2**62]
    ar = AppendMessageResult(AppendMessageStatus.PUT_OK, offsets[0], 100, store_host, 0, 0, msg_num=len(offsets),
                             record_offsets=offsets)
    assert ar.msg_id == ",".join(create_message_id(store_host, o) for o in offsets)
    assert [decode_message_id(x)[1] for x in ar.msg_id.split(",")] == offsets


@pytest.mark.parametrize("born_host", [pack_host("10.1.1.1", 7), pack_host("2001:db8::9", 1234)])
@pytest.mark.parametrize("one_shape", [True, False])
def test_a_broker_batch_writes_every_field_of_every_record(store, born_host, one_shape):
    # A batch whose records share one shape takes a shortcut; both ways must write the same fields.
    n = 5
    bodies = [bytes([65 + i]) * (10 if one_shape else 10 + i) for i in range(n)]
    props = [f"UNIQ_KEY\x01U{i}\x02".encode() for i in range(n)]
    batch = MessageExtBatch("TopicA", 2, list(range(n)), bodies, props, 0, 1234, born_host, None, 3)
    put_ok(store, msg(body=b"first", queue_id=2))
    res = store.put_messages(batch)
    assert res.status == PutMessageStatus.PUT_OK
    ar = res.append_result
    offsets = [decode_message_id(x)[1] for x in ar.msg_id.split(",")]
    got = [decode(store.select_one_message_by_offset(o), check_crc=True) for o in offsets]
    assert [(m.topic, m.queue_id, m.flag, m.body, m.properties_string) for m in got] == [
        ("TopicA", 2, i, bodies[i], props[i].decode()) for i in range(n)]
    assert [m.queue_offset for m in got] == [1, 2, 3, 4, 5] and ar.logics_offset == 1
    assert [m.commit_log_offset for m in got] == offsets and offsets[0] == ar.wrote_offset
    assert sum(m.store_size for m in got) == ar.wrote_bytes
    assert all(offsets[i] + got[i].store_size == offsets[i + 1] for i in range(n - 1))
    v6 = 0x10 if len(born_host) == 20 else 0
    assert {(m.born_timestamp, m.reconsume_times, m.sys_flag, m.store_timestamp) for m in got} == {
        (1234, 3, v6, ar.store_timestamp)}
    assert {m.born_host for m in got} == {unpack_host(born_host)}
    assert store.wait_dispatched()
    assert store.get_message("g", "TopicA", 2, 0, 32).message_count == n + 1


def test_a_batch_of_one_shape_with_a_delay_level_is_refused(store):
    props = [b"DELAX\x012\x02", b"DELAY\x012\x02"]  # one shape: the shortcut must still see the delay
    res = store.put_messages(MessageExtBatch("TopicA", 0, [0, 0], [b"a", b"b"], props))
    assert res.status == PutMessageStatus.MESSAGE_ILLEGAL and "delay" in res.remark


def test_a_batch_whose_delay_level_is_no_delay_is_stored(store):
    # (Message.getDelayTimeLevel() > 0 is a delay; a level the put cannot read is refused as a single message is)
    for props in ([b"DELAY\x010\x02", b""], [b"DELAY\x01-1\x02", b"DELAY\x01-1\x02"]):
        res = store.put_messages(MessageExtBatch("TopicA", 0, [0, 0], [b"a", b"b"], props))
        assert res.status == PutMessageStatus.PUT_OK, (props, res)
    res = store.put_messages([msg(body=b"a", DELAY="x"), msg(body=b"b", DELAY="0")])
    assert res.status == PutMessageStatus.MESSAGE_ILLEGAL and "delay" in res.remark


def test_a_batch_with_a_timer_that_asks_for_a_delay_is_refused(store):
    before = store.get_max_phy_offset()
    for timer in ({"TIMER_DELAY_MS": "5000"}, {"TIMER_DELIVER_MS": "4102444800000"}):
        res = store.put_messages([msg(body=b"a"), msg(body=b"b", **timer)])
        assert res.status == PutMessageStatus.MESSAGE_ILLEGAL and "cannot carry a timer" in res.remark
    props = [b"X\x01TIMER_DELAY_MS\x01\x02", b"TIMER_DELAY_MS\x010\x02"]  # (a value named so; no delay)
    res = store.put_messages(MessageExtBatch("TopicA", 0, [0, 0], [b"a", b"b"], props))
    assert res.status == PutMessageStatus.PUT_OK
    assert store.get_max_phy_offset() > before


# -- batches the store refuses, and why -------------------------------------------------------------------

def test_refused_batches_say_why_and_write_nothing(store):
    v4 = pack_host("10.0.0.1", 5000)
    cases = [
        ([], "empty batch"),
        (MessageExtBatch("TopicA", 0, [], [], [], 0, 0, v4), "empty batch"),
        ([msg(body=b"a"), MessageExtBrokerInner(topic="TopicA", body=b"b", sys_flag=TRANSACTION_PREPARED_TYPE)],
         "cannot carry transactional"),
        (MessageExtBatch("TopicA", 0, [0], [b"a"], [b""], TRANSACTION_PREPARED_TYPE, 0, v4),
         "cannot carry transactional"),
        (MessageExtBatch("TopicA", 0, [0], [b"a"], [b""], 0, 0, b"\x01\x02\x03\x04\x05"), "a host is 8 bytes"),
        ([MessageExtBrokerInner(topic="TopicA", body=b"a", born_host=v4 + b"\x00")], "a host is 8 bytes"),
    ]
    before = store.get_max_phy_offset()
    for batch, why in cases:
        r = store.put_messages(batch)
        assert r.status.name == "MESSAGE_ILLEGAL", (batch, r)
        assert why in r.remark
    assert store.get_max_phy_offset() == before


def test_a_host_of_another_width_is_refused_not_written(store):
    before = store.get_max_phy_offset()
    for born, stored in ((b"\x7f\x00\x00\x01\x00", None), (pack_host("::1", 1), b"\x00" * 9)):
        r = store.put_message(MessageExtBrokerInner(topic="TopicA", body=b"x", born_host=born, store_host=stored))
        assert r.status.name == "MESSAGE_ILLEGAL" and "a host is 8 bytes" in r.remark
    assert store.get_max_phy_offset() == before
