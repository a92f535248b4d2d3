"""Consume queues (reference §2): 20-byte entries, file naming, min/max offsets, lookup by time."""

from __future__ import annotations

import os
import struct
import time

from pocketmq.common import decode, decode_all
from pocketmq.common.java_hash import tags_code

from .conftest import CQ_FILE_SIZE, cq_dir, msg, put_ok, read_cq_entries, wait_until


def test_entries_are_20_bytes_in_20_digit_files_and_point_at_their_records(store, store_root):
    tags = ["TagA", "TagB", "", "Tag-é"]
    results = {0: [], 3: []}
    for i in range(130):
        qid = 0 if i % 3 else 3
        props = {"TAGS": tags[i % 4]} if tags[i % 4] else {}
        results[qid].append(put_ok(store, msg(queue_id=qid, body=f"body-{i}".encode() * (i % 7 + 1), **props)))
    assert store.wait_dispatched()
    d = cq_dir(store_root, "TopicA", 0)
    names = sorted(os.listdir(d))
    n0 = len(results[0])
    assert names == [f"{i * CQ_FILE_SIZE:020d}" for i in range(-(-n0 // 50))]
    assert all(os.path.getsize(os.path.join(d, n)) == CQ_FILE_SIZE for n in names)
    for qid, puts in results.items():
        entries = read_cq_entries(store_root, "TopicA", qid)
        assert len(entries) == len(puts)
        for n, ((phys, size, code), r) in enumerate(zip(entries, puts, strict=True)):
            assert (phys, size) == (r.wrote_offset, r.wrote_bytes)
            m = decode(store.select_one_message_by_offset(phys, size))
            assert (m.topic, m.queue_id, m.queue_offset, m.store_size) == ("TopicA", qid, n, size)
            assert code == tags_code(m.tags)
    # entry n sits at byte n * 20 of the queue: check one in the second file by hand
    with open(os.path.join(d, names[1]), "rb") as f:
        f.seek((57 - 50) * 20)
        phys, size, _ = struct.unpack(">qiq", f.read(20))
    assert (phys, size) == (results[0][57].wrote_offset, results[0][57].wrote_bytes)


def test_min_and_max_offsets(store):
    assert store.get_max_offset_in_queue("TopicA", 0) == 0
    assert store.get_min_offset_in_queue("TopicA", 0) == -1  # no such queue
    for i in range(77):
        put_ok(store, msg(queue_id=1, body=str(i).encode()))
    assert store.wait_dispatched()
    assert store.get_min_offset_in_queue("TopicA", 1) == 0
    assert store.get_max_offset_in_queue("TopicA", 1) == 77  # exclusive: the next offset
    cq = store.get_consume_queue("TopicA", 1)
    assert cq.get_max_offset_in_queue() == 77
    assert store.get_commit_log_offset_in_queue("TopicA", 1, 76) == store.get_consume_queue(
        "TopicA", 1).get_entry(76)[0]


def _put_at_distinct_times(store, groups: int, per_group: int = 3):
    """Groups >= 2 ms apart; a group is one batch, so its messages share a store timestamp."""
    out = []
    for _ in range(groups):
        last_ts = out[-1].store_timestamp if out else 0
        wait_until(lambda last_ts=last_ts: time.time_ns() // 1_000_000 >= last_ts + 2, timeout=5)
        r = store.put_messages([msg(queue_id=2, body=f"t{len(out) + k}".encode()) for k in range(per_group)])
        assert r.status.name == "PUT_OK"
        ar = r.append_result
        out += [ar] * per_group
    return out


def test_offset_in_queue_by_time(store):
    puts = _put_at_distinct_times(store, 15)
    assert store.wait_dispatched()
    times = [store.get_message_store_timestamp("TopicA", 2, i) for i in range(len(puts))]
    assert times == [r.store_timestamp for r in puts]
    assert times == sorted(times)
    assert len(set(times)) == 15  # three messages per millisecond, gaps between the groups

    def first_at_or_after(ts):
        return next((i for i, t in enumerate(times) if t >= ts), len(times))

    for i, t in enumerate(times):
        got = store.get_offset_in_queue_by_time("TopicA", 2, t)
        assert got == first_at_or_after(t) and times[got] == t  # exact: the first message of that ms
        assert got <= i
        between = t + 1
        assert between not in times
        assert store.get_offset_in_queue_by_time("TopicA", 2, between) == first_at_or_after(between)
    assert store.get_offset_in_queue_by_time("TopicA", 2, times[0] - 60_000) == 0  # before the first
    assert store.get_offset_in_queue_by_time("TopicA", 2, 0) == 0
    assert store.get_offset_in_queue_by_time("TopicA", 2, times[-1] + 60_000) == len(times)  # after the last
    assert store.get_offset_in_queue_by_time("TopicA", 9, times[0]) == 0  # no such queue


def test_queue_spanning_files_reads_across_the_file_boundary(store):
    puts = [put_ok(store, msg(queue_id=0, body=f"m{i}".encode())) for i in range(120)]
    assert store.wait_dispatched()
    offset = 45
    bodies = []
    while offset < 120:
        res = store.get_message("g", "TopicA", 0, offset, 32)
        assert res.status.name == "FOUND"
        got = decode_all(res.body)
        assert [m.queue_offset for m in got] == list(range(offset, offset + len(got)))
        assert res.next_begin_offset == offset + len(got)
        bodies += [m.body for m in got]
        offset = res.next_begin_offset
    assert bodies == [f"m{i}".encode() for i in range(45, 120)]
    assert len(puts) == 120


def test_next_file_is_made_ahead_by_the_flush_service_and_adopted_by_the_dispatcher(stores, store_root):
    store = stores.open()
    d = cq_dir(store_root, "TopicA", 0)
    puts = [put_ok(store, msg(queue_id=0, body=f"a{i}".encode())) for i in range(24)]
    assert store.wait_dispatched()
    mfq = store.get_consume_queue("TopicA", 0).mapped_file_queue
    store.flush_cq_service.prepare_next_files()  # what each round of the service does
    assert mfq._spare is None and len(os.listdir(d)) == 1  # below half a file: nothing prepared

    puts += [put_ok(store, msg(queue_id=0, body=f"b{i}".encode())) for i in range(6)]
    assert store.wait_dispatched()
    store.flush_cq_service.prepare_next_files()
    assert len(os.listdir(d)) == 2  # 30 of 50 entries: the next file exists before it is needed
    spare = mfq._spare
    assert spare is not None and spare.file_from_offset == CQ_FILE_SIZE
    assert len(mfq.files) == 1 and store.get_max_offset_in_queue("TopicA", 0) == 30  # it holds no entry yet

    puts += [put_ok(store, msg(queue_id=0, body=f"c{i}".encode())) for i in range(40)]
    assert store.wait_dispatched()
    assert mfq.files[1] is spare  # the dispatcher took the prepared file instead of making its own
    assert store.get_max_offset_in_queue("TopicA", 0) == 70
    entries = read_cq_entries(store_root, "TopicA", 0)
    assert [(p, s) for p, s, _t in entries] == [(r.wrote_offset, r.wrote_bytes) for r in puts]

    # Past half of the second file, the service makes the third on its own; a clean shutdown deletes it.
    store.shutdown()
    store = stores.open(flush_interval_consume_queue=0.005)
    puts += [put_ok(store, msg(queue_id=0, body=f"d{i}".encode())) for i in range(10)]
    assert store.wait_dispatched()
    wait_until(lambda: len(os.listdir(d)) == 3)
    store.shutdown()
    assert sorted(os.listdir(d)) == [f"{0:020d}", f"{CQ_FILE_SIZE:020d}"]
    store = stores.open()
    assert store.get_max_offset_in_queue("TopicA", 0) == 80
    res = store.get_message("g", "TopicA", 0, 50, 4)  # the first entries of the adopted file
    assert [m.body for m in decode_all(res.body)] == [b"c20", b"c21", b"c22", b"c23"]
