"""The timer store after a crash (TimerMessageStore.recover) on real files: states a killed process or a machine
that lost its last pages leaves behind, built by writing what the crash would have left (the abort file, a
timer log whose tail is zeros, an older config/timercheck). Precision is 20 ms."""

from __future__ import annotations

import os
import struct
import time

import pytest

from pocketmq.storage.timer.timer_log import UNIT_SIZE
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC

from .conftest import msg, put_ok, wait_until
from .test_timer_store import FAST, P, all_messages, now_ms

FILE_UNITS = 64  # units in one timer-log file of FAST's size


def crashed(store) -> None:
    """What a killed process leaves: the abort file (this store was shut down cleanly to get its files)."""
    open(os.path.join(store.root, "abort"), "w").close()


@pytest.mark.parametrize("lost_first, at_file_start", [("u1", False), ("s2", False), ("u1", True)])
def test_a_timer_log_that_lost_its_tail_loses_no_message(stores, lost_first, at_file_start) -> None:
    """The last units of the log were lost (zeros where they were), the wheel kept its slots. Slot S had one unit
    before the loss and one after: recovery re-links S from its first unit (checkPhyPos: S's last unit is at or
    past the log's end), or S1 would be cut off its slot. Slot U lost both units: they are enqueued again at the
    same positions, so the first one links forward to where the second comes: the slot is read once, not round
    that loop for good (RocketMQ's dequeue follows the links without a check). With S2 the first unit lost, S's
    last position is the log's end itself: RocketMQ's checkPhyPos, which revises only past it, loses S1 there.
    At a file's start, the unit before the log's end is the previous file's last, not the blank that fills that
    file (RocketMQ's reviseQueueOffset reads the blank, finds no unit and takes the checkpoint's queue offset,
    which is past the lost units: they were never enqueued again)."""
    config = stores.config(**FAST)
    store = stores.open(config)
    due, far = now_ms() + 1_500, now_ms() + 60_000  # (S and U still ahead when the store stops)
    put_ok(store, msg("T", body=b"s1", TIMER_DELIVER_MS=str(due)))
    filler = 2 * FILE_UNITS - 1 if at_file_start else 2 * FILE_UNITS + 1  # on to the third file
    for i in range(filler):
        put_ok(store, msg("T", body=b"f%d" % i, TIMER_DELIVER_MS=str(far)))
    tail = [(b"u1", due + 5 * P), (b"s2", due), (b"u2", due + 5 * P)]
    if lost_first == "s2":
        tail[:2] = tail[1::-1]
    for body, at in tail:
        put_ok(store, msg("T", body=body, TIMER_DELIVER_MS=str(at)))
    wait_until(lambda: store.timer_message_store.enqueued == filler + 4)
    store.shutdown()
    third = sorted(os.listdir(os.path.join(store.root, "timerlog")))[2]
    kept = 0 if at_file_start else 2
    with open(os.path.join(store.root, "timerlog", third), "r+b") as f:
        f.seek(kept * UNIT_SIZE)  # from the first of the three on
        f.write(bytes(os.path.getsize(f.name) - kept * UNIT_SIZE))
    crashed(store)
    store = stores.open(config)
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) >= 4)
    time.sleep(5 * P / 1000)  # (a duplicate would come within a few slots)
    assert sorted(m.body for m in all_messages(store, "T")) == [b"s1", b"s2", b"u1", b"u2"]


def test_the_enqueue_resumes_from_a_checkpoint_behind_the_timer_log(stores) -> None:
    """A crash in the middle of a batch: its units are in the timer log, the batch's queue offset is not in
    config/timercheck. The enqueue resumes from the checkpoint's offset, not after the log's last unit (RocketMQ's
    recover takes the smaller): a message the batch delivered at once is delivered again, as its put was in the
    commit log's tail a crash of the machine may have lost with it; twice rather than never."""
    config = stores.config(**FAST)
    store = stores.open(config)
    timer = store.timer_message_store
    put_ok(store, msg("T", body=b"far1", TIMER_DELIVER_MS=str(now_ms() + 60_000)))
    checkpoint = os.path.join(store.root, "config", "timercheck")

    def read_checkpoint() -> bytes:
        with open(checkpoint, "rb") as f:
            return f.read()

    wait_until(lambda: struct.unpack_from(">qqqq", read_checkpoint())[3] == 1)  # (its queue offset)
    before_the_batch = read_checkpoint()
    put_ok(store, msg(TIMER_TOPIC, body=b"due", TIMER_OUT_MS=str(now_ms() - 1_000), REAL_TOPIC="T",
                      REAL_QID="0"))
    put_ok(store, msg("T", body=b"far2", TIMER_DELIVER_MS=str(now_ms() + 60_000)))  # the log's last unit
    wait_until(lambda: timer.enqueued == 2 and store.get_max_offset_in_queue("T", 0) == 1)
    store.shutdown()
    with open(checkpoint, "r+b") as f:
        f.write(before_the_batch)
    crashed(store)
    store = stores.open(config)
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) >= 2)
    assert [m.body for m in all_messages(store, "T")] == [b"due", b"due"]
