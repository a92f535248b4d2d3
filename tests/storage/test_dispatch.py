"""Dispatch (reference §5.1): the reput thread builds queues and index and notifies a listener."""

from __future__ import annotations

import threading
import time

from pocketmq.common import MessageExtBrokerInner, decode_all
from pocketmq.common.java_hash import tags_code
from pocketmq.storage.config import parse_delay_levels

from .conftest import msg, put_ok, read_cq_entries, scan_commit_log, wait_until


def test_wait_dispatched_and_behind_bytes(store):
    for i in range(300):
        put_ok(store, msg(queue_id=i % 4, body=b"d" * 500, KEYS=f"k{i}"))
    assert store.wait_dispatched() is True
    assert store.dispatch_behind_bytes() == 0
    assert sum(store.get_max_offset_in_queue("TopicA", q) for q in range(4)) == 300
    assert store.reput_service.reput_from_offset == store.get_max_phy_offset()


def test_arriving_listener_called_once_per_message_in_log_order(store, store_root):
    calls = []
    store.message_arriving_listener = lambda *args: calls.append(args)
    levels = parse_delay_levels(store.config.message_delay_level)
    expected = []
    for i in range(200):
        topic = "TopicA" if i % 2 else "TopicB"
        props = {"TAGS": f"Tag{i % 3}", "KEYS": f"key-{i}", "custom": "x" * (i % 5 + 1)}
        if i == 77:
            props["DELAY"] = "1"
        r = put_ok(store, MessageExtBrokerInner(topic=topic, body=b"%d" % i, queue_id=i % 3, properties=props))
        expected.append(r)
    assert store.wait_dispatched()
    assert len(calls) == 200
    records = scan_commit_log(store_root)
    assert [r.wrote_offset for r in expected] == [p for p, _ in records]
    for (topic, qid, next_offset, code, store_ts, raw_props), (_p, m) in zip(calls, records, strict=True):
        assert (topic, qid) == (m.topic, m.queue_id)
        assert next_offset == m.queue_offset + 1
        assert store_ts == m.store_timestamp
        raw = store.select_one_message_by_offset(m.commit_log_offset)
        assert bytes(raw_props) == raw[len(raw) - len(raw_props):]  # the record's own properties bytes
        assert bytes(raw_props).decode() == "".join(f"{k}\x01{v}\x02" for k, v in m.properties.items())
        if m.topic == "SCHEDULE_TOPIC_XXXX":
            assert code == m.store_timestamp + levels[0]
        else:
            assert code == tags_code(m.tags)
    assert sum(1 for c in calls if c[0] == "SCHEDULE_TOPIC_XXXX") == 1


def test_listener_sees_untagged_messages_with_code_zero(store):
    calls = []
    store.message_arriving_listener = lambda *args: calls.append(args)
    put_ok(store, msg(body=b"plain"))
    put_ok(store, msg(body=b"tagged last", KEYS="a", TAGS="Z"))
    put_ok(store, msg(body=b"tag value contains TAGS", custom="xTAGS\x01no", TAGS="real"))
    assert store.wait_dispatched()
    assert [c[3] for c in calls] == [0, tags_code("Z"), tags_code("real")]
    assert [c[2] for c in calls] == [1, 2, 3]


def test_concurrent_producers_get_dense_unique_queue_offsets(store, store_root):
    errors = []

    def produce(worker: int) -> None:
        try:
            for i in range(150):
                put_ok(store, msg(queue_id=i % 2, body=f"{worker}-{i}".encode()))
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.wait_dispatched()
    for qid in (0, 1):
        entries = read_cq_entries(store_root, "TopicA", qid)
        assert len(entries) == 300
        phys = [e[0] for e in entries]
        assert phys == sorted(phys)  # queue order is log order
        records = {p: m for p, m in scan_commit_log(store_root)}
        assert [records[p].queue_offset for p in phys] == list(range(300))
    # each worker's messages are in its own send order within each queue
    for qid in (0, 1):
        res_bodies = []
        off = 0
        while off < 300:
            res = store.get_message("g", "TopicA", qid, off, 32)
            res_bodies += [m.body.decode() for m in decode_all(res.body)]
            off = res.next_begin_offset
        for w in range(4):
            seq = [int(b.split("-")[1]) for b in res_bodies if b.startswith(f"{w}-")]
            assert seq == sorted(seq) and len(seq) == 75


def test_a_failing_listener_does_not_stop_dispatch(store):
    calls = []

    def listener(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("listener bug")

    store.message_arriving_listener = listener
    for i in range(10):
        put_ok(store, msg(body=str(i).encode()))
    assert store.wait_dispatched(timeout=10)
    assert store.get_max_offset_in_queue("TopicA", 0) == 10
    put_ok(store, msg(body=b"later"))
    assert store.wait_dispatched(timeout=10)
    assert store.get_max_offset_in_queue("TopicA", 0) == 11
    assert [c[2] for c in calls[-10:]] == list(range(2, 12))  # every message reached the listener


def test_a_relaxed_dispatcher_is_hurried_by_hurry_and_by_wait_dispatched(store):
    # With nobody waiting for arrivals (prompt_needed False), a busy dispatcher sleeps the relaxed interval
    # between rounds: 60 s here, so each step below would hit its guard if nothing ended that sleep.
    rs = store.reput_service
    rs.relaxed_poll_interval = 60.0
    rs.prompt_needed = lambda: False
    put_ok(store, msg(body=b"first"))  # wakes the idle dispatcher; having found work, it then sleeps relaxed
    wait_until(lambda: store.dispatch_behind_bytes() == 0)
    put_ok(store, msg(body=b"second"))  # a busy dispatcher is not woken by appends
    rs.hurry()
    wait_until(lambda: store.dispatch_behind_bytes() == 0)  # (guard: 10 s, far below the 60 s sleep)
    put_ok(store, msg(body=b"third"))
    assert store.wait_dispatched(timeout=10.0)  # a waiter hurries it too
    assert store.get_max_offset_in_queue("TopicA", 0) == 3


def test_busy_interval_is_prompt_unless_nobody_waits(store):
    rs = store.reput_service
    assert rs.busy_interval() == rs.busy_poll_interval == 0.001  # the store alone: RocketMQ's 1 ms
    waiting = [False]
    rs.prompt_needed = lambda: waiting[0]
    assert rs.busy_interval() == rs.relaxed_poll_interval == 0.01
    waiting[0] = True
    assert rs.busy_interval() == 0.001
    waiting[0] = False
    stuck = threading.Thread(target=rs.wait_caught_up, args=(2**62, 0.5))
    stuck.start()  # someone in wait_caught_up (wait_dispatched) waits too
    try:
        wait_until(lambda: rs._waiters > 0)
        assert rs.busy_interval() == 0.001
    finally:
        stuck.join()
    assert rs.busy_interval() == 0.01


def _max_lag_after_puts(store, puts: int) -> int:
    worst = 0
    for i in range(puts):
        put_ok(store, msg(queue_id=i % 2, body=b"w" * 200))
        worst = max(worst, store.dispatch_behind_bytes())
    return worst


def test_a_put_waits_for_a_dispatcher_further_behind_than_the_limit(stores):
    # A listener that takes its time makes the dispatcher slower than the writer (docs/storage.md 9.2).
    limit = 4096
    store = stores.open(max_dispatch_lag_bytes=limit)
    store.message_arriving_listener = lambda *args: time.sleep(0.0002)
    worst = _max_lag_after_puts(store, 400)
    record = store.select_one_message_by_offset(0)
    assert worst <= limit + len(record)
    assert store.wait_dispatched()
    assert store.get_max_offset_in_queue("TopicA", 0) + store.get_max_offset_in_queue("TopicA", 1) == 400


def test_without_the_limit_the_writer_runs_ahead_of_a_slow_dispatcher(stores):
    store = stores.open(max_dispatch_lag_bytes=0)
    store.message_arriving_listener = lambda *args: time.sleep(0.0002)
    assert _max_lag_after_puts(store, 400) > 4096 + 400


def test_message_ids_are_indexed_wherever_they_stand_among_the_properties(store):
    """Producers' UNIQ_KEY is unique per message: dispatch caches the properties around it, so the tags
    code and KEYS of the others must still come out right whatever the order."""
    calls = []
    store.message_arriving_listener = lambda *args: calls.append(args)
    cases = [
        ("first", {"UNIQ_KEY": "C0A80001000A1B2C3D4E5F6000000001", "TAGS": "T1", "KEYS": "k1"}),
        ("last", {"TAGS": "T1", "KEYS": "k1", "UNIQ_KEY": "C0A80001000A1B2C3D4E5F6000000002"}),
        ("middle", {"TAGS": "T2", "UNIQ_KEY": "C0A80001000A1B2C3D4E5F6000000003", "WAIT": "true"}),
        ("alone", {"UNIQ_KEY": "C0A80001000A1B2C3D4E5F6000000004"}),
        ("lookalike", {"XUNIQ_KEY": "nope", "TAGS": "T3", "UNIQ_KEY": "C0A80001000A1B2C3D4E5F6000000005"}),
        ("short", {"UNIQ_KEY": "u6", "TAGS": "T1", "KEYS": "k1"}),
        ("non-ascii", {"UNIQ_KEY": "id-é-7", "TAGS": "T1", "KEYS": "k1"}),
        ("none", {"TAGS": "T1", "KEYS": "k1"}),
    ]
    for body, props in cases:
        put_ok(store, MessageExtBrokerInner(topic="TopicA", body=body.encode(), properties=props))
    assert store.wait_dispatched()
    assert [c[3] for c in calls] == [tags_code(props.get("TAGS")) for _, props in cases]

    def found(key: str) -> list[bytes]:
        return sorted(m.body for m in decode_all(b"".join(store.query_message("TopicA", key, 32, 0, 2**62).buffers)))

    for body, props in cases:
        if "UNIQ_KEY" in props:
            assert found(props["UNIQ_KEY"]) == [body.encode()]
    assert found("k1") == sorted([b"first", b"last", b"short", b"non-ascii", b"none"])
    assert found("nope") == []  # XUNIQ_KEY is no key


def test_many_producers_message_ids_all_indexed(store):
    """Message ids of many producers (heads that differ) and one producer over time (tails that differ)."""
    keys = [f"C0A800{p:02X}{p * 7:04X}ABCDEF{t:08X}{c:04X}" for p in range(40) for t, c in ((1, 1), (2**20, 9))]
    for i, key in enumerate(keys):
        put_ok(store, msg(body=b"%d" % i, UNIQ_KEY=key))
    assert store.wait_dispatched()
    for i, key in enumerate(keys):
        res = store.query_message("TopicA", key, 32, 0, 2**62)
        assert [m.body for m in decode_all(b"".join(res.buffers))] == [b"%d" % i]


def _parked_dispatcher(store) -> None:
    """Leave the dispatcher thread asleep for a minute after its next round: busy rounds sleep the relaxed
    interval while nobody waits (prompt_needed), and appends do not wake a busy dispatcher."""
    reput = store.reput_service
    reput.relaxed_poll_interval = 60.0
    reput.prompt_needed = lambda: False
    put_ok(store, msg(body=b"wakes the idle dispatcher"))
    wait_until(lambda: reput.reput_from_offset == store.commit_log.get_max_offset())


def test_a_writer_dispatches_on_its_own_thread_what_it_put(store):
    """dispatch_in_caller (reput_service.py says why: the GIL hand-over that kept parked pulls waiting)."""
    arrivals = []
    store.message_arriving_listener = lambda topic, queue_id, next_offset, *_: arrivals.append(
        (next_offset, threading.get_ident()))
    _parked_dispatcher(store)
    arrivals.clear()
    for i in range(5):
        put_ok(store, msg(body=b"%d" % i))
    assert store.get_max_offset_in_queue("TopicA", 0) == 1  # the thread sleeps: nothing of these dispatched yet
    assert store.reput_service.dispatch_in_caller() is True
    assert arrivals == [(n, threading.get_ident()) for n in range(2, 7)]
    assert store.get_max_offset_in_queue("TopicA", 0) == 6
    assert store.reput_service.dispatch_in_caller() is True and len(arrivals) == 5  # nothing more, nothing twice


def test_a_writer_leaves_the_round_to_the_thread_when_one_is_under_way_or_too_much_waits(store):
    reput = store.reput_service
    _parked_dispatcher(store)
    put_ok(store, msg(body=b"held"))
    with reput._round:  # what the dispatcher thread holds through a round of its own
        assert reput.dispatch_in_caller() is False
    assert store.get_max_offset_in_queue("TopicA", 0) == 1
    reput.caller_round_max_bytes = 10  # less than one record: a long round is no event loop's to run
    assert reput.dispatch_in_caller() is False
    assert store.get_max_offset_in_queue("TopicA", 0) == 1
    reput.caller_round_max_bytes = 64 * 1024
    assert reput.dispatch_in_caller() is True
    assert store.get_max_offset_in_queue("TopicA", 0) == 2


def test_writers_and_the_thread_racing_dispatch_every_message_once_in_order(store, store_root):
    """The thread (woken by every append: someone waits) and the writer both try each message."""
    arrivals = []
    store.message_arriving_listener = lambda topic, queue_id, next_offset, *_: arrivals.append(next_offset)
    store.reput_service.prompt_needed = lambda: True
    written = []
    for i in range(300):
        written.append(put_ok(store, msg(body=b"%d" % i)).wrote_offset)
        store.reput_service.dispatch_in_caller()
    assert store.wait_dispatched()
    assert arrivals == list(range(1, 301))
    assert [entry[0] for entry in read_cq_entries(store_root, "TopicA", 0)] == written
