"""TimerMessageStore: RocketMQ 5's timer wheel service (store/timer/TimerMessageStore), on threads.

A timer message is stored in rmq_sys_wheel_timer queue 0 (timer_routing.py). The enqueue thread reads that
queue in order and, for each message, appends a unit to the timer log and links it into the wheel slot of its
TIMER_OUT_MS (one already due is delivered at once). The dequeue thread walks the wheel one slot (one
precision) at a time behind the clock: every message of a slot whose time has passed is read back from the
commit log and put again in its real topic and queue. A message further off than the roll window goes into a
slot at the window's end (magic ROLL) and, when that slot comes, is written to rmq_sys_wheel_timer again.

A recall (RocketMQ 5's RecallMessage) is a delete marker: a message with TIMER_DEL_UNIQKEY = ``<real topic>+<UNIQ_KEY>``
due in the same slot as the message it cancels. Its unit carries magic DELETE; when the slot comes, its markers are
read first and a message they name is dropped instead of delivered. A marker is never delivered itself. Markers
are commit-log messages and timer-log units like any other, so a recall survives a restart.

Progress is kept in ``config/timercheck`` (timer_checkpoint.py): how far the queue was enqueued and the wheel
delivered. After a crash both resume from there, so a message of the last moments may be delivered twice,
never lost; after a clean stop, from exactly where they were (timer_recovery.py).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.codec import decode_all
from pocketmq.common.constants import (
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from pocketmq.common.java_hash import java_string_hash
from pocketmq.common.java_numbers import LONG_MAX

from ..results import GetMessageStatus
from .timer_checkpoint import TimerCheckpoint
from .timer_delivery import TimerDelivery
from .timer_log import (
    MAGIC_DEFAULT,
    MAGIC_DELETE,
    MAGIC_ROLL,
    TimerLog,
    TimerLogUnit,
    need_delete,
    need_roll,
    pack_unit,
)
from .timer_recovery import recover
from .timer_routing import TIMER_TOPIC
from .timer_services import TimerDequeueService, TimerEnqueueService, TimerFlushService
from .timer_wheel import TimerWheel

if TYPE_CHECKING:
    from pocketmq.common.message import MessageExt

    from ..config import MessageStoreConfig
    from ..message_store import DefaultMessageStore

log = logging.getLogger(__name__)

TIMER_WHEEL_TTL_DAY = 7  # the wheel holds this many days of slots at 1 s precision
DAY_SECS = 24 * 3600
TIMER_BLANK_SLOTS = 60
ENQUEUE_BATCH = 32
TIMER_GROUP = "TIMER_CONSUMER"  # (the store's reads take a group name; nothing is recorded under it)


def build_delete_key(real_topic: str | None, unique_key: str | None) -> str:
    """What a delete marker's TIMER_DEL_UNIQKEY holds for a message: its topic and id, as a query names one."""
    return f"{real_topic}+{unique_key}"


class TimerMessageStore:
    def __init__(self, store: DefaultMessageStore, config: MessageStoreConfig) -> None:
        self.store = store
        self.config = config
        self.precision_ms = config.timer_precision_ms
        self.slots_total = TIMER_WHEEL_TTL_DAY * DAY_SECS  # fixed whatever the precision, as RocketMQ's
        window = config.timer_roll_window_slot
        if window > self.slots_total - TIMER_BLANK_SLOTS or window < 2:
            window = self.slots_total - TIMER_BLANK_SLOTS
        self.timer_roll_window_slots = window
        self.poll_interval = config.timer_poll_interval or self.precision_ms / 10_000
        self.timer_wheel: TimerWheel | None = None
        self.timer_log = TimerLog(config.timer_log_path, config.mapped_file_size_timer_log)
        self.timer_checkpoint: TimerCheckpoint | None = None
        self.delivery = TimerDelivery(self)
        # Times are multiples of the precision, in ms; queue offsets are of rmq_sys_wheel_timer queue 0.
        self.curr_read_time_ms = 0  # the next slot to deliver
        self.curr_write_time_ms = 0  # the clock as the enqueue thread last saw it: slots before it are due
        self.commit_read_time_ms = 0
        self.curr_queue_offset = 0
        self.commit_queue_offset = 0
        self.enqueued = self.delivered = self.rolled = self.recalled = 0  # since start
        self.lock = threading.Lock()  # the checkpoint's fields (enqueue, dequeue and flush threads)
        self.enqueue_service = TimerEnqueueService(self)
        self.dequeue_service = TimerDequeueService(self)
        self.flush_service = TimerFlushService(self)
        self.running = False

    # -- lifecycle --------------------------------------------------------------------------------
    def load(self) -> None:
        """Open the files and recover; the store's consume queues must be dispatched up to its commit log."""
        self.timer_wheel = TimerWheel(self.config.timer_wheel_path, self.slots_total, self.precision_ms)
        self.timer_checkpoint = TimerCheckpoint(self.config.timer_check_path)
        self.timer_log.load()
        recover(self)

    def start(self) -> None:
        self.maybe_move_write_time()
        self.running = True
        self.enqueue_service.start()
        self.dequeue_service.start()
        self.flush_service.start()

    def shutdown(self) -> None:
        """Stop after the batch and the slot in hand (so a clean stop delivers nothing twice), then write
        everything down."""
        self.running = False
        for service in (self.enqueue_service, self.dequeue_service, self.flush_service):
            service.shutdown(30.0)
        if self.timer_checkpoint is None or self.timer_wheel is None:
            return
        self.timer_log.mapped_file_queue.flush_all()
        self.prepare_timer_checkpoint()
        self.timer_log.shutdown()
        self.timer_wheel.shutdown()
        self.timer_checkpoint.shutdown()
        self.timer_wheel = None
        self.timer_checkpoint = None

    # -- time -------------------------------------------------------------------------------------
    def format_time_ms(self, time_ms: int) -> int:
        return time_ms // self.precision_ms * self.precision_ms

    def maybe_move_write_time(self) -> None:
        now = self.format_time_ms(now_ms())
        if self.curr_write_time_ms < now:
            self.curr_write_time_ms = now

    def move_read_time(self) -> None:
        self.curr_read_time_ms += self.precision_ms
        self.commit_read_time_ms = self.curr_read_time_ms

    # -- enqueue (rmq_sys_wheel_timer -> timer log and wheel) -------------------------------------
    def enqueue(self) -> bool:
        """One batch of the wheel's queue into the wheel; False when there was nothing to enqueue."""
        self.maybe_move_write_time()
        result = self.store.get_message(TIMER_GROUP, TIMER_TOPIC, 0, self.curr_queue_offset, ENQUEUE_BATCH)
        if result.status is not GetMessageStatus.FOUND:
            if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
                log.warning("timer queue offset %d corrected to %d", self.curr_queue_offset, result.next_begin_offset)
                self.curr_queue_offset = result.next_begin_offset
            self._commit_queue_offset(self.curr_queue_offset)
            return False
        for queue_offset, msg in zip(result.queue_offsets, decode_all(result.body), strict=True):
            if not self._enqueue_one(msg):
                break  # stopping: this message is enqueued again at the next start
            self.curr_queue_offset = queue_offset + 1
        self._commit_queue_offset(self.curr_queue_offset)
        return True

    def _enqueue_one(self, msg: MessageExt) -> bool:
        """Into the wheel, or delivered when due already; False when the store stopped before it was done."""
        try:
            delayed_time = int(msg.properties[PROPERTY_TIMER_OUT_MS])
        except (KeyError, ValueError):
            log.error("dropping %s from %s: no TIMER_OUT_MS", msg.msg_id, TIMER_TOPIC)
            return True
        # Due already: delivered without the wheel, its TIMER_ENQUEUE_MS Long.MAX_VALUE
        if delayed_time < self.curr_write_time_ms:
            return self.delivery.deliver(msg, LONG_MAX, roll=False)
        props = msg.properties
        while not self.do_enqueue(msg.commit_log_offset, msg.store_size, delayed_time,
                                  props.get(PROPERTY_REAL_TOPIC), PROPERTY_TIMER_DEL_UNIQKEY in props):
            if not self.running:
                return False
            time.sleep(0.05)  # (the timer log could not grow: a full disk) RocketMQ holds on the same way
        return True

    def do_enqueue(self, offset_py: int, size_py: int, delayed_time: int, real_topic: str | None,
                   is_delete: bool = False) -> bool:
        """Append a unit for the message at ``offset_py`` and link it into its slot (TimerMessageStore.doEnqueue)."""
        wheel = self.timer_wheel
        assert wheel is not None
        write_time = self.curr_write_time_ms
        window = self.timer_roll_window_slots * self.precision_ms
        magic = MAGIC_DEFAULT
        if delayed_time - write_time >= window:  # too far off: park it at the window's end, to go round again
            magic |= MAGIC_ROLL
            if delayed_time - write_time - window < self.timer_roll_window_slots // 3 * self.precision_ms:
                delayed_time = write_time + self.timer_roll_window_slots // 2 * self.precision_ms
            else:
                delayed_time = write_time + window
        if is_delete:
            magic |= MAGIC_DELETE
        try:
            wheel.reserve_slot(delayed_time)  # (before the unit: one appended and never linked would be lost)
        except OSError as e:
            log.error("cannot reserve the timer wheel's slot: %s", e)
            return False
        slot = wheel.get_slot(delayed_time)
        unit = pack_unit(slot.last_pos, magic, write_time, delayed_time, offset_py, size_py,
                         java_string_hash(real_topic) if real_topic else 0)
        try:
            pos = self.timer_log.append(unit)
        except OSError as e:
            log.error("cannot append to the timer log: %s", e)
            return False
        # (a marker counts one message less in its slot, as RocketMQ's does)
        wheel.put_slot(delayed_time, pos if slot.first_pos == -1 else slot.first_pos, pos,
                       slot.num - 1 if is_delete else slot.num + 1, slot.magic)
        self.enqueued += 1
        return True

    # -- dequeue (wheel -> real topics) -----------------------------------------------------------
    def dequeue(self) -> int:
        """Deliver the slot at the read time: -1 when it is not due yet, 0 for an empty slot, 1 otherwise."""
        wheel = self.timer_wheel
        assert wheel is not None
        if self.curr_read_time_ms >= self.curr_write_time_ms:
            return -1
        slot = wheel.get_slot(self.curr_read_time_ms)
        if slot.time_ms != -1:
            units = self._slot_units(slot.last_pos)
            deleted = self._delete_keys(units)
            for unit in units:
                if need_delete(unit.magic) and not need_roll(unit.magic):
                    continue  # a marker: read above, never delivered
                msg = self.store.look_message_by_offset(unit.offset_py, unit.size_py)
                if msg is None:
                    log.warning("timer message at %d is gone from the commit log", unit.offset_py)
                    continue
                props = msg.properties
                if deleted and build_delete_key(props.get(PROPERTY_REAL_TOPIC),
                                                props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)) in deleted:
                    self.recalled += 1
                    continue
                if not self.delivery.deliver(msg, unit.enqueue_time, roll=need_roll(unit.magic)):
                    return -1  # stopping: the slot is delivered again at the next start
        with self.lock:
            self.move_read_time()
            self._write_checkpoint()
        return 0 if slot.time_ms == -1 else 1

    def _delete_keys(self, units: list[TimerLogUnit]) -> set[str]:
        """The TIMER_DEL_UNIQKEY of the slot's markers (a rolled marker is not one yet: it goes round first)."""
        keys = set()
        for unit in units:
            if need_delete(unit.magic) and not need_roll(unit.magic):
                marker = self.store.look_message_by_offset(unit.offset_py, unit.size_py)
                key = None if marker is None else marker.properties.get(PROPERTY_TIMER_DEL_UNIQKEY)
                if key is not None:
                    keys.add(key)
        return keys

    def _slot_units(self, last_pos: int) -> list[TimerLogUnit]:
        """A slot's units, oldest first (the log links them newest first)."""
        units: list[TimerLogUnit] = []
        pos = last_pos
        while pos != -1:
            unit = self.timer_log.read_unit(pos)
            if unit is None or (units and unit.pos >= units[-1].pos):
                break  # a file cleaned away, or a link that does not point back
            units.append(unit)
            pos = unit.prev_pos
        units.reverse()
        return units

    # -- checkpoint -------------------------------------------------------------------------------
    def _commit_queue_offset(self, offset: int) -> None:
        with self.lock:
            self.commit_queue_offset = offset
            self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        cp = self.timer_checkpoint
        if cp is not None:
            self._fill_checkpoint(cp)
            cp.write()

    def _fill_checkpoint(self, cp: TimerCheckpoint) -> None:
        """prepareTimerCheckPoint (the dequeue always runs here: a master)."""
        cp.last_timer_log_flush_pos = self.timer_log.flushed_where
        changed = (cp.last_read_time_ms, cp.master_timer_queue_offset) != (self.commit_read_time_ms,
                                                                           self.commit_queue_offset)
        cp.last_read_time_ms = self.commit_read_time_ms
        cp.master_timer_queue_offset = self.commit_queue_offset
        if changed:
            cp.update_data_version(0)
        cp.last_timer_queue_offset = min(self.commit_queue_offset, cp.master_timer_queue_offset)

    def prepare_timer_checkpoint(self) -> None:
        with self.lock:
            if self.timer_checkpoint is not None:
                self._fill_checkpoint(self.timer_checkpoint)
