"""ScheduleMessageService: deliver SCHEDULE_TOPIC_XXXX messages to their real topic once their delay is up.

The store already reroutes a message with ``DELAY`` = level > 0 to queue ``level - 1`` of SCHEDULE_TOPIC_XXXX
(saving REAL_TOPIC / REAL_QID). This service is RocketMQ's (4.9.8 in the store, 5.x in the broker): one
worker per level walks its queue in order; a message is due ``delay(level)`` after it was stored. A due
message is rebuilt (``messageTimeup``: real topic and queue restored, DELAY dropped, WAIT=false) and written
again; progress per level is kept in ``delayOffset.json``.

Instead of RocketMQ's 100 ms re-polling, a worker sleeps until its head message is due, and an idle worker
waits for the store's arrival listener to report a new message at its level (with a 1 s safety re-check).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.codec import decode_all
from pocketmq.common.constants import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from pocketmq.common.message import LOOPBACK_HOST, MessageExt, MessageExtBrokerInner, pack_host
from pocketmq.common.mix_all import SCHEDULE_CONSUMER_GROUP
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC
from pocketmq.remoting.transport import parse_address
from pocketmq.storage.config import parse_delay_levels
from pocketmq.storage.results import GetMessageStatus, PutMessageResult

from ..config_file import ConfigManager

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

SCHEDULE_GROUP = SCHEDULE_CONSUMER_GROUP
DELAY_FOR_A_PERIOD = 10.0  # seconds to wait after a failed re-put (RocketMQ's DELAY_FOR_A_PERIOD)
IDLE_RECHECK = 1.0  # an idle level re-reads its queue at least this often
BATCH = 32
SHUTDOWN_PUT_WAIT = 10.0  # seconds shutdown waits for a cancelled delivery's put, to record its offset

_EMPTY = (
    GetMessageStatus.NO_MESSAGE_IN_QUEUE,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
    GetMessageStatus.OFFSET_OVERFLOW_ONE,
)


class ScheduleMessageService(ConfigManager):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(os.path.join(controller.broker_config.config_dir, "delayOffset.json"))
        self.controller = controller
        self.delay_levels = parse_delay_levels(controller.broker_config.message_delay_level)  # ms, level 1 first
        self.offset_table: dict[int, int] = {}  # level -> next queue offset to deliver
        self._events: list[asyncio.Event] = []
        self._signal_pending = [False] * len(self.delay_levels)
        self._signal_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.delivered = 0

    @property
    def max_delay_level(self) -> int:
        return len(self.delay_levels)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._events = [asyncio.Event() for _ in self.delay_levels]
        tasks = self.controller.tasks
        for level in range(1, self.max_delay_level + 1):
            tasks.spawn(self._deliver_loop(level), name=f"schedule-level-{level}")
        tasks.periodic(
            "persist-delay-offsets", self.controller.broker_config.flush_delay_offset_interval, self.persist_if_changed
        )

    def shutdown(self) -> None:
        self._loop = None

    # --- arrivals (dispatcher thread) ---

    def on_message_arriving(self, queue_id: int) -> None:
        """A message was dispatched to SCHEDULE_TOPIC_XXXX queue ``queue_id``: wake that level's worker."""
        loop = self._loop
        if loop is None or not 0 <= queue_id < len(self._signal_pending):
            return
        with self._signal_lock:
            if self._signal_pending[queue_id]:
                return
            self._signal_pending[queue_id] = True
        try:
            loop.call_soon_threadsafe(self._signal, queue_id)
        except RuntimeError:  # loop closed: shutting down
            pass

    def _signal(self, queue_id: int) -> None:
        with self._signal_lock:
            self._signal_pending[queue_id] = False
        self._events[queue_id].set()

    # --- delivery (event loop) ---

    async def _deliver_loop(self, level: int) -> None:
        c = self.controller
        queue_id = level - 1
        delay = self.delay_levels[queue_id]
        event = self._events[queue_id]
        while True:
            offset = self.offset_table.get(level, 0)
            event.clear()  # arrivals from here on are not lost: they set it again
            result = await c.run_in_pull_executor(
                c.store.get_message, SCHEDULE_GROUP, RMQ_SYS_SCHEDULE_TOPIC, queue_id, offset, BATCH, None
            )
            if result.status in _EMPTY:
                if result.status is not GetMessageStatus.OFFSET_OVERFLOW_ONE and offset != result.next_begin_offset:
                    self._set_offset(level, result.next_begin_offset)
                # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that arrives while the event is
                # being set, and then shutdown waits on this loop forever.
                try:
                    async with asyncio.timeout(IDLE_RECHECK):
                        await event.wait()
                except TimeoutError:
                    pass
                continue
            if result.status is not GetMessageStatus.FOUND:
                # Removed data or a corrected offset: move on to where the store says to continue.
                if result.next_begin_offset == offset:
                    await asyncio.sleep(IDLE_RECHECK)
                self._set_offset(level, result.next_begin_offset)
                continue
            if level not in self.offset_table:
                # RocketMQ 5's task writes the offset of a message not due yet (updateOffset): a level whose
                # messages all wait is in the runtime info (scheduleMessageOffset_<level>) and delayOffset.json.
                self._set_offset(level, offset)
            for msg in decode_all(result.body):
                due = msg.store_timestamp + delay
                now = now_ms()
                if due > now + delay:
                    due = now  # correctDeliverTimestamp: a store time in the future (clock moved back)
                # (a loop, not one sleep: the loop's timers round to the millisecond and may wake one early)
                while due > now:
                    await asyncio.sleep((due - now) / 1000.0)
                    now = now_ms()
                while not await self._deliver(msg, level):
                    await asyncio.sleep(DELAY_FOR_A_PERIOD)
                self._set_offset(level, msg.queue_offset + 1)
            if self.offset_table.get(level, 0) < result.next_begin_offset:
                self._set_offset(level, result.next_begin_offset)  # entries skipped by the store

    async def _deliver(self, msg: MessageExt, level: int) -> bool:
        """messageTimeup + put. False when the store refused it (retried later); unusable messages are dropped."""
        inner = self.message_timeup(msg)
        if inner is None:
            log.error("dropping scheduled message %s: no REAL_TOPIC/REAL_QID", msg.msg_id)
            return True
        put = self.controller.store.put_message_nowait(inner)
        if isinstance(put, PutMessageResult):
            result = put
        else:
            try:
                result = await asyncio.shield(asyncio.wrap_future(put))
            except asyncio.CancelledError:
                # Shutdown cancels this loop while the store writes: the message is stored whatever happens here,
                # so its offset must be too, or the restarted broker (or Apache's, on this store) fires it again.
                try:
                    stored = put.result(timeout=SHUTDOWN_PUT_WAIT).is_ok
                except Exception:
                    stored = False
                if stored:
                    self._set_offset(level, msg.queue_offset + 1)
                raise
        if not result.is_ok:
            log.error(
                "re-putting scheduled message %s to %s failed: %s %s",
                msg.msg_id,
                inner.topic,
                result.status.value,
                result.remark,
            )
            return False
        self.delivered += 1
        ar = result.append_result
        if ar is not None:
            self.controller.broker_stats_manager.metrics.delivered_delayed(inner.topic, ar.msg_num, ar.wrote_bytes)
        return True

    def message_timeup(self, msg: MessageExt) -> MessageExtBrokerInner | None:
        props = dict(msg.properties)
        topic = props.get(PROPERTY_REAL_TOPIC)
        try:
            queue_id = int(props.get(PROPERTY_REAL_QUEUE_ID, ""))
        except ValueError:
            return None
        if not topic:
            return None
        props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
        # No flush wait for the re-put (RocketMQ's setWaitStoreMsgOK(false)), but only in place of a WAIT the
        # message has: an added one would make the properties longer than the copy already stored, and a copy at
        # the 32 KiB limit would then be refused at every try, holding back its whole level.
        if PROPERTY_WAIT_STORE_MSG_OK in props:
            props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        try:
            born_host = pack_host(*parse_address(msg.born_host))
        except (ValueError, OSError):
            born_host = LOOPBACK_HOST
        return MessageExtBrokerInner(
            topic=topic,
            body=msg.body,
            properties=props,
            queue_id=queue_id,
            flag=msg.flag,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=born_host,
            store_host=self.controller.store_host,
            reconsume_times=msg.reconsume_times,
        )

    def build_running_stats(self) -> dict[str, str]:
        """buildRunningStats: per level in the offset table (each whose queue had a message, delivered or not),
        ``scheduleMessageOffset_<level>`` = ``delivered,stored``
        (the next offset to deliver and the level queue's max offset), as GET_BROKER_RUNTIME_INFO shows them."""
        store = self.controller.store
        return {
            f"scheduleMessageOffset_{level}":
                f"{offset},{store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)}"
            for level, offset in self.offset_table.items()
        }

    def _set_offset(self, level: int, offset: int) -> None:
        self.offset_table[level] = offset
        self.mark_changed()  # written every flushDelayOffsetInterval

    # --- delayOffset.json ---

    def encode(self) -> dict[str, Any]:
        return {"offsetTable": {str(level): offset for level, offset in sorted(self.offset_table.items())}}

    def decode(self, data: Any) -> None:
        table = data.get("offsetTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            raise ValueError("no offsetTable map")
        self.offset_table = {int(level): int(offset) for level, offset in table.items()}
