"""Bringing the timer store back after a stop (TimerMessageStore.recover / recoverAndRevise /
reviseQueueOffset).

The timer log is checked from the file before its last flushed position: every unit found re-links itself
into its wheel slot (the wheel may have missed the last ones), and the log is cut at the first bytes that are not
a unit. The queue offset to enqueue from is the checkpoint's, and no later than the message of the log's last
unit (RocketMQ's rule: after a crash a message whose unit was lost is enqueued again). After a clean stop
(the store's abort file absent) the checkpoint is exact and is taken as it is: RocketMQ's rule would enqueue
again, and deliver twice, the messages after the last unit that were delivered without the wheel.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from .timer_log import BLANK_MAGIC_CODE, UNIT, UNIT_SIZE, TimerLogUnit, is_magic_ok
from .timer_routing import TIMER_TOPIC
from .timer_wheel import IGNORE

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

log = logging.getLogger(__name__)

_REVISE_QUEUE_OFFSET_STEPS = 20_000


def recover(timer: TimerMessageStore) -> None:
    cp = timer.timer_checkpoint
    assert cp is not None
    tlog = timer.timer_log
    last_flush_pos = cp.last_timer_log_flush_pos
    if tlog.files:
        last_flush_pos -= tlog.file_size
    process_offset = recover_and_revise(timer, max(last_flush_pos, 0), check=True)
    tlog.mapped_file_queue.flushed_where = process_offset
    queue_offset = revise_queue_offset(timer, process_offset)
    curr = cp.last_timer_queue_offset if queue_offset == -1 else queue_offset + 1
    curr = min(curr, cp.master_timer_queue_offset)
    if timer.store.last_exit_ok:
        curr = cp.last_timer_queue_offset
    cq = timer.store.get_consume_queue(TIMER_TOPIC, 0)
    if cq is not None:
        curr = min(max(curr, cq.get_min_offset_in_queue()), cq.get_max_offset_in_queue())
    timer.curr_queue_offset = timer.commit_queue_offset = curr
    timer.curr_read_time_ms = _read_time(timer, cp.last_read_time_ms, cp.existed or bool(tlog.files))
    if tlog.files and not timer.store.last_exit_ok:  # (a clean stop flushed the log before the wheel)
        assert timer.timer_wheel is not None
        min_first = timer.timer_wheel.check_phy_pos(timer.curr_read_time_ms, process_offset)
        if min_first < process_offset:
            log.warning("timer wheel points past the timer log (%d < %d): revising again", min_first, process_offset)
            recover_and_revise(timer, min_first, check=False)
    timer.commit_read_time_ms = timer.curr_read_time_ms
    log.info("timer store recovered: read time %d, queue offset %d, timer log end %d",
             timer.curr_read_time_ms, curr, process_offset)
    timer.prepare_timer_checkpoint()


def _read_time(timer: TimerMessageStore, last_read_time_ms: int, used: bool) -> int:
    """Where delivery resumes: the checkpoint's time, but no further back than the wheel reaches. A store that
    never had a timer starts now (RocketMQ starts a wheel's turn back and walks a week of empty slots)."""
    now = timer.format_time_ms(time.time_ns() // 1_000_000)
    if not used:
        return now
    oldest = now - timer.slots_total * timer.precision_ms + 60 * timer.precision_ms
    return max(last_read_time_ms, oldest)


def recover_and_revise(timer: TimerMessageStore, begin_offset: int, check: bool) -> int:
    """Re-link every unit from the file holding ``begin_offset`` on into the wheel; with ``check``, cut the log
    at the first bytes that are not a unit. Returns where the units end."""
    tlog = timer.timer_log
    wheel = timer.timer_wheel
    assert wheel is not None
    files = tlog.files
    if not files:
        return 0
    index = max((i for i, mf in enumerate(files) if begin_offset >= mf.file_from_offset), default=0)
    check_offset = files[index].file_from_offset
    for mf in files[index:]:
        end = tlog.file_size if check else mf.wrote_position
        pos, stop = 0, False
        while pos + UNIT_SIZE <= end:
            size, _, magic, enqueue_time, delay, *_ = UNIT.unpack_from(mf.mm, pos)
            if magic == BLANK_MAGIC_CODE:
                break
            if check and (not is_magic_ok(magic) or size != UNIT_SIZE):
                stop = True
                break
            if size == UNIT_SIZE and is_magic_ok(magic):
                wheel.revise_slot(enqueue_time + delay, IGNORE, mf.file_from_offset + pos, True)
            pos += UNIT_SIZE
        check_offset = mf.file_from_offset + pos
        if stop:
            break
    if check:
        tlog.mapped_file_queue.set_positions_after_recovery(check_offset)
    return check_offset


def _last_unit_before(timer: TimerMessageStore, process_offset: int) -> TimerLogUnit | None:
    """The log's last unit before ``process_offset``. At a file's start it is the previous file's last unit: the
    bytes just before are that file's blank (RocketMQ reads them, finds no unit and falls back to the checkpoint's
    queue offset, which may be past units the crash cut off, so they were never enqueued again)."""
    tlog = timer.timer_log
    if process_offset < UNIT_SIZE:
        return None
    if process_offset % tlog.file_size == 0:
        previous = tlog.mapped_file_queue.find_mapped_file_by_offset(process_offset - tlog.file_size)
        return tlog.last_unit_of(previous) if previous is not None else None
    return tlog.read_unit(process_offset - UNIT_SIZE)


def revise_queue_offset(timer: TimerMessageStore, process_offset: int) -> int:
    """The wheel queue's offset of the message of the log's last unit, or -1 when there is none to read."""
    unit = _last_unit_before(timer, process_offset)
    if unit is None:
        return -1
    msg = timer.store.look_message_by_offset(unit.offset_py, unit.size_py)
    if msg is None:
        return -1
    cq = timer.store.get_consume_queue(TIMER_TOPIC, msg.queue_id)
    if cq is None:
        return msg.queue_offset
    offset = msg.queue_offset
    for _ in range(_REVISE_QUEUE_OFFSET_STEPS):  # the record's offset may be past the queue's: look back
        if offset < 0:
            break
        entry = cq.get_entry(offset)
        if entry is not None and entry[0] == unit.offset_py and entry[1] == unit.size_py:
            return offset
        offset -= 1
    return msg.queue_offset
