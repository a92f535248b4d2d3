"""Timer messages in the store (RocketMQ 5's TimerMessageStore) on real files: routing at put time, delivery no
earlier than the time and in the slot before it, the roll of far-off messages, restarts, and recovery of a torn
timer log. Precision is 20 ms, so a test waits a few hundred milliseconds."""

from __future__ import annotations

import os
import time

import pytest

from pocketmq.common.codec import decode_all
from pocketmq.storage.results import PutMessageStatus
from pocketmq.storage.timer.timer_log import UNIT_SIZE, need_roll
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC, slot_time

from .conftest import msg, put_ok, wait_until

P = 20  # timer precision, ms
FAST = {"timer_precision_ms": P, "timer_flush_interval": 0.05, "mapped_file_size_timer_log": UNIT_SIZE * 64 + 16}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def all_messages(store, topic: str, queue_id: int = 0) -> list:
    out, offset = [], 0
    while True:
        result = store.get_message("G", topic, queue_id, offset, 32)
        msgs = decode_all(result.body) if result.buffers else []
        if not msgs:
            return out
        out += msgs
        offset = result.next_begin_offset


def test_routing_at_put(stores) -> None:
    store = stores.open(**FAST)
    deliver = now_ms() + 60_000
    for props in ({"TIMER_DELIVER_MS": str(deliver)}, {"TIMER_DELAY_SEC": "60"}, {"TIMER_DELAY_MS": "60000"},
                  {"__STARTDELIVERTIME": str(deliver)}):
        put_ok(store, msg("T", **props))
    wait_until(lambda: store.timer_message_store.enqueued == 4)
    parked = all_messages(store, TIMER_TOPIC)
    assert len(parked) == 4 and store.get_max_offset_in_queue("T", 0) == 0
    first = parked[0].properties
    assert (first["REAL_TOPIC"], first["REAL_QID"]) == ("T", "0")
    out = int(first["TIMER_OUT_MS"])
    assert out == slot_time(deliver, P) and deliver - P <= out < deliver and out % P == 0
    assert slot_time(1_000, 20) == 980 and slot_time(1_001, 20) == 1_000
    # Due already: an ordinary message. A delay level wins (the timer properties are dropped).
    put_ok(store, msg("T", TIMER_DELIVER_MS=str(now_ms() - 1)))
    put_ok(store, msg("T", DELAY="1", TIMER_DELAY_SEC="5"))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    wait_until(lambda: store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 0) == 1)
    scheduled = all_messages(store, "SCHEDULE_TOPIC_XXXX", 0)
    assert len(scheduled) == 1 and "TIMER_DELAY_SEC" not in scheduled[0].properties


@pytest.mark.parametrize(("props", "status"), [
    ({"TIMER_DELAY_SEC": "x"}, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL),
    ({"TIMER_DELAY_SEC": str(3 * 86400 + 10)}, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL),
    # Past Java's long once multiplied or added to now: Apache's arithmetic wraps (due at once), pocketmq's does not.
    ({"TIMER_DELAY_SEC": "9223372036854776"}, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL),
    ({"TIMER_DELAY_SEC": "9223372036854775"}, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL),
    ({"TIMER_DELAY_MS": str(2**63 - 1)}, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL),
])
def test_refused_timers(stores, props, status) -> None:
    store = stores.open(**FAST)
    assert store.put_message(msg("T", **props)).status is status


def test_timer_wheel_disabled(stores) -> None:
    store = stores.open(**FAST, timer_wheel_enable=False)
    assert store.timer_message_store is None
    result = store.put_message(msg("T", TIMER_DELAY_SEC="1"))
    assert result.status is PutMessageStatus.WHEEL_TIMER_NOT_ENABLE
    assert not os.path.exists(os.path.join(store.root, "timerwheel"))


def test_delivered_not_before_its_time(stores) -> None:
    store = stores.open(**FAST)
    put_at = now_ms()
    deliver = put_at + 300
    put_ok(store, msg("T", body=b"later", TIMER_DELIVER_MS=str(deliver), TAGS="a"))
    while now_ms() < deliver - 5:  # before its time it is nowhere to be read
        assert store.get_max_offset_in_queue("T", 0) == 0
        time.sleep(0.01)
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    [m] = all_messages(store, "T")
    assert m.body == b"later" and m.properties["TAGS"] == "a"
    assert m.store_timestamp >= deliver and int(m.properties["TIMER_DEQUEUE_MS"]) >= deliver
    assert (m.properties["REAL_TOPIC"], m.properties["REAL_QID"]) == ("T", "0")  # kept, as RocketMQ 5 keeps them
    assert int(m.properties["TIMER_OUT_MS"]) == slot_time(deliver, P)
    assert m.properties["WAIT"] == "false" and store.timer_message_store.delivered == 1
    # The slot of the clock when the wheel took it in, as RocketMQ 5 records it.
    enqueued = int(m.properties["TIMER_ENQUEUE_MS"])
    assert enqueued % P == 0 and put_at - P < enqueued <= int(m.properties["TIMER_OUT_MS"])


def test_far_off_messages_roll(stores) -> None:
    store = stores.open(**FAST, timer_roll_window_slot=5)  # anything over 100 ms ahead rolls
    deliver = now_ms() + 1_500  # (ahead enough to roll on a machine that stalls the test for a second)
    put_ok(store, msg("T", body=b"far", TIMER_DELIVER_MS=str(deliver)))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    [m] = all_messages(store, "T")
    assert m.store_timestamp >= deliver
    # 400 ms ahead with a 100 ms window: parked at the window's end and put again at least once (more often
    # when the threads keep up: each turn parks it another window ahead).
    rolls = int(m.properties["TIMER_ROLL_TIMES"])
    assert rolls >= 1 and store.timer_message_store.rolled == rolls
    assert store.get_max_offset_in_queue(TIMER_TOPIC, 0) == 1 + rolls  # the message and its re-puts


def test_a_producers_roll_count_that_is_no_number_stops_no_delivery(stores) -> None:
    # TIMER_ROLL_TIMES is the broker's, but a producer can set it: read as a number at the roll, "x" stopped the
    # wheel at that slot for good, and every timer message of the broker with it.
    store = stores.open(**FAST, timer_roll_window_slot=5)
    start = now_ms() + 1_000  # (the odd one still rolls after a stall of the test of up to a second)
    put_ok(store, msg("T", body=b"odd", TIMER_DELIVER_MS=str(start + 300), TIMER_ROLL_TIMES="x"))
    for i in range(5):
        put_ok(store, msg("T", body=b"%d" % i, TIMER_DELIVER_MS=str(start + 150 + 100 * i)))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 6)
    delivered = {m.body: m for m in all_messages(store, "T")}
    assert sorted(delivered) == [b"0", b"1", b"2", b"3", b"4", b"odd"]
    assert int(delivered[b"odd"].properties["TIMER_ROLL_TIMES"]) >= 1


def test_restart_delivers_each_once(stores) -> None:
    config = stores.config(**FAST)
    store = stores.open(config)
    start = now_ms()
    n = 1_000
    for i in range(n):
        put_ok(store, msg("T", body=b"%d" % i, queue_id=i % 2, TIMER_DELIVER_MS=str(start + 200 + i % 400)))
    wait_until(lambda: store.timer_message_store.delivered > n // 4)
    store.shutdown()  # in the middle of the deliveries
    store = stores.open(config)
    wait_until(lambda: sum(store.get_max_offset_in_queue("T", q) for q in (0, 1)) >= n)
    time.sleep(5 * P / 1000)  # (a duplicate would come within a few slots)
    bodies = sorted(int(m.body) for q in (0, 1) for m in all_messages(store, "T", q))
    assert bodies == list(range(n))
    assert os.path.getsize(os.path.join(store.root, "timerwheel")) == 7 * 86400 * 2 * 32


def test_torn_timer_log_tail_is_cut(stores) -> None:
    """A process crash can leave half a unit at the end of the log: recovery cuts it, keeps the whole units."""
    config = stores.config(**FAST)
    store = stores.open(config)
    deliver = now_ms() + 60_000
    for i in range(3):
        put_ok(store, msg("T", body=b"%d" % i, TIMER_DELIVER_MS=str(deliver)))
    wait_until(lambda: store.timer_message_store.enqueued == 3)
    store.shutdown()
    path = os.path.join(store.root, "timerlog", "0" * 20)
    with open(path, "r+b") as f:
        f.seek(3 * UNIT_SIZE)
        f.write(b"\x00\x00\x00\x34" + b"\x07" * 20)  # a torn fourth unit
    store = stores.open(config)
    timer = store.timer_message_store
    assert timer.timer_log.mapped_file_queue.get_max_offset() == 3 * UNIT_SIZE
    with open(path, "rb") as f:
        assert f.read()[3 * UNIT_SIZE:4 * UNIT_SIZE] == bytes(UNIT_SIZE)
    slot = timer.timer_wheel.get_slot(slot_time(deliver, P))
    assert (slot.first_pos, slot.last_pos) == (0, 2 * UNIT_SIZE)
    assert timer.curr_queue_offset == 3  # nothing enqueued twice


def _timer_log_of_three_files(stores):
    """A store whose timer log holds 150 records due in a minute, over three files."""
    store = stores.open(**FAST)
    deliver = now_ms() + 60_000
    for i in range(150):
        put_ok(store, msg("T", body=b"%d" % i, TIMER_DELIVER_MS=str(deliver)))
    wait_until(lambda: store.timer_message_store.enqueued == 150)
    return store.timer_message_store.timer_log


def test_timer_log_files_cleaned_with_the_commit_log(stores) -> None:
    tlog = _timer_log_of_three_files(stores)
    assert len(tlog.files) == 3
    assert tlog.clean_expired_files(0) == 0
    second_last = tlog.last_unit_of(tlog.files[1])
    assert tlog.clean_expired_files(second_last.offset_py + 1) == 2 and len(tlog.files) == 1


def test_a_timer_log_file_whose_last_unit_does_not_read_is_kept(stores) -> None:
    # It was deleted like an expired one, with whatever it held still due; RocketMQ logs "Found error data" and
    # stops there.
    tlog = _timer_log_of_three_files(stores)
    first = tlog.files[0]
    with open(first.path, "r+b") as f:
        f.write(bytes(first.file_size))  # no unit of it reads
    assert tlog.last_unit_of(first) is None
    assert tlog.clean_expired_files(2**62) == 0 and tlog.files[0] is first


def test_a_lost_timercheck_loses_no_message(stores) -> None:
    """Without config/timercheck but with a timer log, delivery starts a wheel's turn back (as RocketMQ's does)
    and the queue is enqueued again from its start: every message comes, some twice (nothing says otherwise)."""
    config = stores.config(**FAST)
    store = stores.open(config)
    deliver = now_ms() + 300
    for i in range(20):
        put_ok(store, msg("T", body=b"%d" % i, TIMER_DELIVER_MS=str(deliver)))
    wait_until(lambda: store.timer_message_store.enqueued == 20)
    store.shutdown()
    os.remove(os.path.join(store.root, "config", "timercheck"))
    time.sleep(0.4)  # (due while the store is down)
    store = stores.open(config)
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) >= 20, timeout=60)
    assert {int(m.body) for m in all_messages(store, "T")} == set(range(20))


def _due_already(topic: str, body: bytes):
    """A message in the wheel's queue whose slot has passed by the time it is enqueued (one put while the enqueue
    thread was behind): it is delivered without the wheel and leaves no timer-log unit."""
    return msg(TIMER_TOPIC, body=body, TIMER_OUT_MS=str(now_ms() - 1_000), REAL_TOPIC=topic, REAL_QID="0")


def test_a_clean_restart_enqueues_nothing_again(stores) -> None:
    """After a clean stop the checkpoint's queue offset is exact: the messages after the timer log's last unit,
    delivered without the wheel, are not enqueued (and delivered) a second time."""
    config = stores.config(**FAST)
    store = stores.open(config)
    put_ok(store, msg("T", body=b"far", TIMER_DELIVER_MS=str(now_ms() + 60_000)))  # the log's last unit
    for i in range(3):
        put_ok(store, _due_already("T", b"%d" % i))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 3)
    # Never in the wheel: RocketMQ 5 marks such a message with Long.MAX_VALUE.
    assert {m.properties["TIMER_ENQUEUE_MS"] for m in all_messages(store, "T")} == {str(2**63 - 1)}
    store.shutdown()
    store = stores.open(config)
    assert store.last_exit_ok
    put_ok(store, _due_already("T", b"after"))  # the queue is enqueued in order: this one comes last
    wait_until(lambda: b"after" in {m.body for m in all_messages(store, "T")})
    assert [m.body for m in all_messages(store, "T")] == [b"0", b"1", b"2", b"after"]


def test_a_crash_enqueues_the_last_unit_once(stores) -> None:
    """After a crash the queue offset comes from the timer log's last unit: the message after it, not that one
    again (which was delivered already)."""
    config = stores.config(**FAST)
    store = stores.open(config)
    deliver = now_ms() + 200
    for i in range(3):
        put_ok(store, msg("T", body=b"%d" % i, TIMER_DELIVER_MS=str(deliver)))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 3)
    store.shutdown()
    open(os.path.join(store.root, "abort"), "w").close()  # as a killed process leaves it
    store = stores.open(config)
    assert not store.last_exit_ok
    put_ok(store, _due_already("T", b"after"))
    wait_until(lambda: b"after" in {m.body for m in all_messages(store, "T")})
    time.sleep(5 * P / 1000)  # (a duplicate from the wheel would come within a few slots)
    assert sorted(m.body for m in all_messages(store, "T")) == [b"0", b"1", b"2", b"after"]


def test_the_roll_window_boundary(stores) -> None:
    """A message due exactly the roll window after the wheel takes it in rolls (the window is the first slot out
    of reach); one less than a third of the window past it is parked half a window ahead, one further off at the
    window's end. Each is delivered once, not before its slot."""
    p, slots = 100, 30
    window = slots * p
    store = stores.open(**{**FAST, "timer_precision_ms": p}, timer_roll_window_slot=slots)
    timer = store.timer_message_store
    outs: dict[bytes, int] = {}  # every put of every attempt, by body
    for attempt in range(5):  # the boundary needs the put and its enqueue in the same slot of the clock
        while now_ms() % p > p // 5:
            time.sleep(0.002)
        t0 = now_ms() // p * p
        first = timer.enqueued
        batch = {b"edge%d" % attempt: t0 + window, b"near%d" % attempt: t0 + window + 5 * p,
                 b"far%d" % attempt: t0 + window + 15 * p}
        outs.update(batch)
        for body, out in batch.items():
            put_ok(store, msg(TIMER_TOPIC, body=body, TIMER_OUT_MS=str(out), REAL_TOPIC="T", REAL_QID="0"))
        wait_until(lambda first=first: timer.enqueued == first + 3)
        units = [timer.timer_log.read_unit((first + i) * UNIT_SIZE) for i in range(3)]
        if units[0].enqueue_time == t0:
            break
    else:
        pytest.fail("no put was enqueued in its own slot")
    edge, near, far = units
    assert all(need_roll(u.magic) for u in units)
    assert edge.delayed_time == near.delayed_time == t0 + slots // 2 * p
    assert far.enqueue_time == t0 and far.delayed_time == t0 + window
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) >= len(outs), timeout=30)
    time.sleep(5 * p / 1000)  # (a duplicate would come within a few slots)
    delivered = all_messages(store, "T")
    assert sorted(m.body for m in delivered) == sorted(outs)
    for m in delivered:
        assert m.store_timestamp >= outs[m.body] and int(m.properties["TIMER_ROLL_TIMES"]) >= 1


def test_the_slot_just_passed_is_due_already(stores) -> None:
    """A message whose slot is the one just before the clock's is delivered at once, without the wheel (the wheel
    has read that slot already: parked there it would be lost); one of the clock's own slot goes in the wheel."""
    p = 100
    store = stores.open(**{**FAST, "timer_precision_ms": p})
    while now_ms() % p > p // 5:  # (the put and its enqueue in the same slot of the clock)
        time.sleep(0.002)
    t0 = now_ms() // p * p
    put_ok(store, msg(TIMER_TOPIC, body=b"passed", TIMER_OUT_MS=str(t0 - p), REAL_TOPIC="T", REAL_QID="0"))
    put_ok(store, msg(TIMER_TOPIC, body=b"now", TIMER_OUT_MS=str(t0), REAL_TOPIC="T", REAL_QID="0"))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) >= 2)
    time.sleep(5 * p / 1000)  # (a duplicate would come within a few slots)
    delivered = {m.body: m for m in all_messages(store, "T")}
    assert sorted(delivered) == [b"now", b"passed"] and store.get_max_offset_in_queue("T", 0) == 2
    assert delivered[b"passed"].properties["TIMER_ENQUEUE_MS"] == str(2**63 - 1)
    now = delivered[b"now"]
    # (enqueued a slot late, on a machine that stalled, it is due already too)
    assert now.store_timestamp >= t0 + p and now.properties["TIMER_ENQUEUE_MS"] in (str(t0), str(2**63 - 1))


@pytest.mark.parametrize("slots", [0, 1])
def test_a_roll_window_under_two_slots_is_the_wheels_turn(stores, slots) -> None:
    """timerRollWindowSlot below 2 is taken as the wheel's whole turn (less its blank slots), as RocketMQ's
    constructor does: a message a few slots ahead goes into its own slot, not round the wheel every slot."""
    store = stores.open(**FAST, timer_roll_window_slot=slots)
    put_ok(store, msg("T", body=b"soon", TIMER_DELIVER_MS=str(now_ms() + 300)))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    [m] = all_messages(store, "T")
    assert "TIMER_ROLL_TIMES" not in m.properties and store.timer_message_store.rolled == 0
    assert store.get_max_offset_in_queue(TIMER_TOPIC, 0) == 1


@pytest.mark.parametrize(("refusals", "until_success", "delivered"), [(2, False, True), (3, False, False),
                                                                     (5, True, True)])
def test_a_put_the_store_refuses_is_tried_three_times(stores, refusals, until_success, delivered) -> None:
    """A due message whose put is refused (SERVICE_NOT_AVAILABLE: the disk is full) is tried again half a slot
    later, three times in all, then dropped with a log line; with timerEnableRetryUntilSuccess, until it goes in
    (RocketMQ 5.3's dequeue). The full disk is simulated as in tests/broker/test_broker_send.py (the usage the store
    reads, and its flag): a real one cannot be made to refuse exactly n puts and then take the next."""
    store = stores.open(**FAST, disk_recheck_interval=0, timer_enable_retry_until_success=until_success)
    due = now_ms() + 2_000  # (still ahead once the disk is full, on a machine that stalls the test for a second)
    put_ok(store, msg("T", body=b"refused", TIMER_DELIVER_MS=str(due)))
    put_ok(store, msg("T", body=b"next", TIMER_DELIVER_MS=str(due + 5 * P)))
    answers = [0.95] * refusals  # one per put while the disk is flagged full (looked at again at every put)
    store.disk_usage = lambda path: answers.pop() if answers else 0.10
    store.running_flags.make_disk_full()
    wait_until(lambda: b"next" in {m.body for m in all_messages(store, "T")})
    time.sleep(5 * P / 1000)  # (a late try of the dropped one would come within a few slots)
    assert [m.body for m in all_messages(store, "T")] == ([b"refused", b"next"] if delivered else [b"next"])
    assert not answers
