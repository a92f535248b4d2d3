"""Commit log through DefaultMessageStore (reference §1.4, §1.5, §1.7, §7.8): files, rolling,
queue offsets, ids, put-time checks, IPv6 hosts, delay-level rerouting (batches: test_commit_log_batches.py)."""

from __future__ import annotations

import os
import struct

import pytest

from pocketmq.common import MessageExtBrokerInner, decode, decode_all, decode_message_id, pack_host
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE
from pocketmq.storage import PutMessageStatus
from pocketmq.storage.config import parse_delay_levels

from .conftest import (
    BLANK_MAGIC,
    COMMIT_LOG_FILE_SIZE,
    MESSAGE_MAGIC,
    commit_log_dir,
    commit_log_files,
    msg,
    put_ok,
    read_cq_entries,
    scan_commit_log,
    small_config,
    walk_file,
)


def test_files_are_named_by_20_digit_start_offset_and_have_the_configured_size(store, store_root):
    for i in range(400):
        put_ok(store, msg(body=bytes([i % 256]) * 400))
    names = sorted(os.listdir(commit_log_dir(store_root)))
    assert len(names) >= 3
    assert names == [f"{i * COMMIT_LOG_FILE_SIZE:020d}" for i in range(len(names))]
    assert names[1] == "00000000000000065536"
    for name in names:
        assert os.path.getsize(os.path.join(commit_log_dir(store_root), name)) == COMMIT_LOG_FILE_SIZE


def test_rolling_writes_blank_record_with_remaining_bytes(store, store_root):
    sizes = [37, 1500, 250, 4000, 999, 64, 3333]
    i = 0
    while not os.path.isdir(commit_log_dir(store_root)) or len(commit_log_files(store_root)) < 4:
        put_ok(store, msg(body=b"z" * sizes[i % len(sizes)], queue_id=i % 3))
        i += 1
    files = commit_log_files(store_root)
    for n, path in enumerate(files[:-1]):
        data, entries = walk_file(path)
        pos, size, magic = entries[-1]
        assert magic == BLANK_MAGIC, f"{path} does not end with the blank record"
        assert size == COMMIT_LOG_FILE_SIZE - pos  # TOTALSIZE = all remaining bytes
        assert all(m == MESSAGE_MAGIC for _, _, m in entries[:-1])
        # the roll was needed: the next record + the 8-byte blank would not have fit
        _, next_entries = walk_file(files[n + 1])
        next_size = next_entries[0][1]
        assert pos + next_size + 8 > COMMIT_LOG_FILE_SIZE
        assert data[pos + 8:] == bytes(COMMIT_LOG_FILE_SIZE - pos - 8)  # the rest is left zeroed
        first = decode(walk_file(files[n + 1])[0], 0)
        assert first.commit_log_offset == (n + 1) * COMMIT_LOG_FILE_SIZE
    assert store.wait_dispatched()
    # every record is still reachable through its queue
    for qid in range(3):
        got = [decode(store.select_one_message_by_offset(p, s)).queue_offset
               for p, s, _ in read_cq_entries(store_root, "TopicA", qid)]
        assert got == list(range(len(got)))


def test_records_carry_their_physical_offset_and_monotonic_store_time(store, store_root):
    results = [put_ok(store, msg(body=os.urandom(700), queue_id=i % 2)) for i in range(250)]
    records = scan_commit_log(store_root)
    assert [p for p, _ in records] == [r.wrote_offset for r in results]
    assert all(m.commit_log_offset == p for p, m in records)
    assert [m.store_size for _, m in records] == [r.wrote_bytes for r in results]
    times = [m.store_timestamp for _, m in records]
    assert times == sorted(times)
    assert [r.store_timestamp for r in results] == times


def test_queue_offsets_are_consecutive_per_topic_queue(store, store_root):
    seen: dict[tuple[str, int], list[int]] = {}
    for i in range(300):
        topic = ("TopicA", "TopicB", "%RETRY%group_1")[i % 3]
        qid = (i // 3) % 4
        r = put_ok(store, msg(topic=topic, queue_id=qid, body=f"{i}".encode()))
        seen.setdefault((topic, qid), []).append(r.logics_offset)
    for key, offsets in seen.items():
        assert offsets == list(range(len(offsets))), key
    # the QUEUEOFFSET written in each record is the one the put returned
    by_body = {}
    for _p, m in scan_commit_log(store_root):
        by_body.setdefault((m.topic, m.queue_id), []).append(m.queue_offset)
    assert by_body == seen


def test_prepared_and_rollback_records_take_no_queue_slot(store, store_root):
    a = put_ok(store, msg(body=b"a"))
    prepared = put_ok(store, MessageExtBrokerInner(topic="TopicA", body=b"half", sys_flag=0x4))
    rollback = put_ok(store, MessageExtBrokerInner(topic="TopicA", body=b"rb", sys_flag=0xC))
    commit = put_ok(store, MessageExtBrokerInner(topic="TopicA", body=b"commit", sys_flag=0x8))
    b = put_ok(store, msg(body=b"b"))
    assert (a.logics_offset, prepared.logics_offset, rollback.logics_offset) == (0, 0, 0)
    assert (commit.logics_offset, b.logics_offset) == (1, 2)
    assert store.wait_dispatched()
    entries = read_cq_entries(store_root, "TopicA", 0)
    assert [e[0] for e in entries] == [a.wrote_offset, commit.wrote_offset, b.wrote_offset]


def test_offset_msg_id_decodes_to_physical_offset_and_store_host(stores):
    store = stores.open(store_host="10.0.0.1", store_port=10911)
    results = [put_ok(store, msg(body=f"m{i}".encode() * 50)) for i in range(30)]
    for r in results:
        host, phys = decode_message_id(r.msg_id)
        assert (host, phys) == ("10.0.0.1:10911", r.wrote_offset)
        assert len(r.msg_id) == 32 and r.msg_id.startswith("0A00000100002A9F")
        m = store.look_message_by_offset(phys)
        assert m.commit_log_offset == phys and m.msg_id == r.msg_id


def test_oversized_body_is_illegal_with_remark_and_store_keeps_working(stores):
    store = stores.open(max_message_size=2048)
    ok = put_ok(store, msg(body=b"a" * 2048))
    r = store.put_message(msg(body=b"a" * 2049))
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.append_result is None
    assert "2049" in r.remark and r.remark
    r = store.put_messages([msg(body=b"x"), msg(body=b"a" * 4096)])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.remark
    after = put_ok(store, msg(body=b"after"))
    assert after.logics_offset == ok.logics_offset + 1  # nothing half-written in between
    assert after.wrote_offset == ok.wrote_offset + ok.wrote_bytes
    assert store.wait_dispatched()
    assert store.get_message("g", "TopicA", 0, 0, 32).message_count == 2


def test_put_totals_count_every_record_appended_and_its_bytes(stores):
    # StoreStatsService's putMessageTimesTotal / putMessageSizeTotal, read by the broker's runtime info.
    store = stores.open(max_message_size=2048)
    put_ok(store, msg(body=b"a" * 10))
    assert store.put_messages([msg(body=b"b"), msg(body=b"cc")]).is_ok
    put_ok(store, MessageExtBrokerInner(topic="TopicA", body=b"half", sys_flag=TRANSACTION_PREPARED_TYPE))
    assert not store.put_message(msg(body=b"a" * 2049)).is_ok  # refused: not counted
    assert not store.put_messages([msg(body=b"x"), msg(body=b"a" * 4096)]).is_ok
    log = store.commit_log
    assert (log.put_message_times_total, log.put_message_size_total) == (4, store.get_max_phy_offset())

def test_refused_shape_stays_refused_and_limits_are_per_store(stores, tmp_path):
    # The put path caches a struct per record shape and skips the size checks on a hit: a refused shape
    # must never get in, and one store's accepted shapes must not pass another's smaller limit.
    big = stores.open(max_message_size=4096)
    put_ok(big, msg(body=b"a" * 3000))
    small = stores.open(small_config(tmp_path / "small", max_message_size=2048))
    for _ in range(3):
        r = small.put_message(msg(body=b"a" * 3000))
        assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and "3000" in r.remark
        r = small.put_messages([msg(body=b"a" * 3000)])
        assert r.status == PutMessageStatus.MESSAGE_ILLEGAL
    assert small.get_max_phy_offset() == 0
    put_ok(big, msg(body=b"a" * 3000))


@pytest.mark.parametrize("queue_id", [-1, 2**31])
def test_queue_id_out_of_range_is_illegal(store, queue_id):
    put_ok(store, msg(queue_id=0))  # the shape is known now: the queue id is still checked
    r = store.put_message(msg(queue_id=queue_id))
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and "queue id" in r.remark
    r = store.put_messages([msg(queue_id=queue_id)])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and "queue id" in r.remark
    assert store.wait_dispatched() and store.get_max_offset_in_queue("TopicA", 0) == 1


def test_record_bigger_than_a_commit_log_file_is_illegal(store):
    r = store.put_message(msg(body=b"b" * COMMIT_LOG_FILE_SIZE))  # under the 4 MiB body limit
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.remark
    put_ok(store, msg(body=b"fine"))


@pytest.mark.parametrize("topic", ["", "bad topic", "a/b", "../../etc", "x" * 128, "tópico", "T\x00"])
def test_invalid_topic_name_is_illegal(store, store_root, topic):
    r = store.put_message(msg(topic=topic))
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.remark
    r = store.put_messages([msg(topic=topic)])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == 0
    assert not os.path.exists(os.path.join(str(store_root), "etc"))
    put_ok(store, msg(topic="x" * 127))  # 127 is the limit


def test_properties_size_limit_is_in_bytes(store):
    # "K" 0x01 value 0x02 = 3 + len(value) bytes
    put_ok(store, msg(K="v" * (32767 - 3)))
    r = store.put_message(msg(K="v" * (32768 - 3)))
    assert r.status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED and r.remark
    r = store.put_message(msg(K="é" * 16383))  # 16386 chars, 32769 UTF-8 bytes
    assert r.status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    r = store.put_messages([msg(K="v" * 40000)])
    assert r.status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    put_ok(store, msg(body=b"still fine"))


def test_ipv6_born_host_sets_sysflag_and_decodes(store, store_root):
    m = MessageExtBrokerInner(
        topic="TopicV6", body=b"from v6", born_host=pack_host("fe80::1:2", 40000), born_timestamp=1234,
                properties={"TAGS": "T6", "KEYS": "v6key"})
    r = put_ok(store, m)
    put_ok(store, msg(topic="TopicV6", body=b"v4 after"))
    raw = store.select_one_message_by_offset(r.wrote_offset)
    assert struct.unpack_from(">i", raw, 36)[0] & 0x30 == 0x10
    got = decode(raw, check_crc=True)
    assert got.born_host == "[fe80::1:2]:40000" and got.body == b"from v6" and got.born_timestamp == 1234
    assert got.store_timestamp == r.store_timestamp
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicV6", 0, 0, 32)
    assert [x.body for x in decode_all(res.body)] == [b"from v6", b"v4 after"]
    assert store.get_message_store_timestamp("TopicV6", 0, 0) == r.store_timestamp
    assert len(store.query_message("TopicV6", "v6key", 10, 0, 2**62).buffers) == 1


def test_ipv6_store_host_sets_sysflag_and_long_msg_id(store):
    m = MessageExtBrokerInner(
        topic="TopicV6", body=b"x", born_host=pack_host("::1", 1), store_host=pack_host("2001:db8::7", 10911))
    r = put_ok(store, m)
    assert len(r.msg_id) == 56
    assert decode_message_id(r.msg_id) == ("[2001:db8::7]:10911", r.wrote_offset)
    raw = store.select_one_message_by_offset(r.wrote_offset)
    assert struct.unpack_from(">i", raw, 36)[0] & 0x30 == 0x30


def test_delay_level_reroutes_to_schedule_topic(store, store_root):
    levels = parse_delay_levels(store.config.message_delay_level)
    r = put_ok(store, msg(topic="TopicA", queue_id=5, body=b"later", DELAY="3", TAGS="TagA"))
    assert store.wait_dispatched()
    m = store.look_message_by_offset(r.wrote_offset)
    assert m.topic == "SCHEDULE_TOPIC_XXXX" and m.queue_id == 2
    assert m.properties["REAL_TOPIC"] == "TopicA" and m.properties["REAL_QID"] == "5"
    assert m.properties["DELAY"] == "3" and m.properties["TAGS"] == "TagA"
    assert store.get_max_offset_in_queue("TopicA", 5) == 0
    entries = read_cq_entries(store_root, "SCHEDULE_TOPIC_XXXX", 2)
    assert entries == [(r.wrote_offset, r.wrote_bytes, m.store_timestamp + levels[2])]
    assert levels[2] == 10_000


def test_delay_level_above_max_is_capped_and_zero_is_not_delayed(store, store_root):
    levels = parse_delay_levels(store.config.message_delay_level)
    r = put_ok(store, msg(body=b"capped", DELAY="99"))
    z = put_ok(store, msg(body=b"now", DELAY="0"))
    signed = put_ok(store, msg(body=b"signed", DELAY="+1"))  # (a level Integer.parseInt reads, kept as sent)
    assert store.wait_dispatched()
    m = store.look_message_by_offset(signed.wrote_offset)
    assert (m.topic, m.queue_id, m.properties["DELAY"]) == ("SCHEDULE_TOPIC_XXXX", 0, "+1")
    m = store.look_message_by_offset(r.wrote_offset)
    assert m.topic == "SCHEDULE_TOPIC_XXXX" and m.queue_id == len(levels) - 1 == 17
    assert m.properties["DELAY"] == "18"
    (entry,) = read_cq_entries(store_root, "SCHEDULE_TOPIC_XXXX", 17)
    assert entry[2] == m.store_timestamp + 2 * 3600 * 1000
    assert store.look_message_by_offset(z.wrote_offset).topic == "TopicA"
    assert store.get_max_offset_in_queue("TopicA", 0) == 1


def test_look_message_by_made_up_offsets_never_raises(store):
    # a body that looks like a record header whose lengths run far past it (VIEW_MESSAGE_BY_ID
    # takes the offset from the client, so it may point anywhere, e.g. into a body)
    fake = bytearray(200)
    struct.pack_into(">iI", fake, 0, 150, MESSAGE_MAGIC)
    struct.pack_into(">i", fake, 84, 100_000)  # body length
    r = put_ok(store, msg(body=bytes(fake)))
    real = put_ok(store, msg(body=b"real"))
    assert store.look_message_by_offset(r.wrote_offset + 88) is None
    for off in (-1, 1, r.wrote_offset + 3, real.wrote_offset + real.wrote_bytes, 10**12):
        assert store.look_message_by_offset(off) is None
    assert store.look_message_by_offset(real.wrote_offset).body == b"real"


def test_a_record_that_leaves_no_room_for_the_blank_record_is_refused(stores):
    # A file ends with the blank record (8 bytes) or with a record that leaves at least those 8 free: a record
    # bigger than that fits no file, and once written it left the roll no room, so every later put failed.
    store = stores.open()
    overhead = put_ok(store, msg(body=b"")).wrote_bytes
    largest = COMMIT_LOG_FILE_SIZE - 8 - overhead
    r = store.put_message(msg(body=b"a" * (largest + 1)))
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.append_result is None
    big = put_ok(store, msg(body=b"a" * largest))
    assert big.wrote_offset == COMMIT_LOG_FILE_SIZE and big.wrote_bytes == COMMIT_LOG_FILE_SIZE - 8
    after = put_ok(store, msg(body=b"after"))
    assert after.wrote_offset == 2 * COMMIT_LOG_FILE_SIZE and after.logics_offset == 2
    # A batch likewise: all of it in one file, the blank record's 8 bytes left.
    half = largest // 2 - overhead // 2
    r = store.put_messages([msg(body=b"b" * half), msg(body=b"b" * (largest - overhead - half + 1))])
    assert r.status == PutMessageStatus.MESSAGE_ILLEGAL and r.append_result is None
    batch = store.put_messages([msg(body=b"b" * half), msg(body=b"b" * (largest - overhead - half))])
    assert batch.status == PutMessageStatus.PUT_OK and batch.append_result.wrote_bytes == COMMIT_LOG_FILE_SIZE - 8
    assert put_ok(store, msg(body=b"last")).wrote_offset == 4 * COMMIT_LOG_FILE_SIZE
    assert store.wait_dispatched()
    got = decode_all(store.get_message("g", "TopicA", 0, 0, 32).body)
    assert [len(m.body) for m in got] == [0, largest, 5, half, largest - overhead - half, 4]
