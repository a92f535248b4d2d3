"""The timer store's threads (TimerEnqueueGetService + TimerEnqueuePutService, TimerDequeueGetService with its
get and put services, TimerFlushService): one each here, as a put in this store is a memory write."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..service_thread import ServiceThread

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

log = logging.getLogger(__name__)

CLEAN_INTERVAL = 30.0  # seconds between timer-log cleanups (RocketMQ's)


class _TimerService(ServiceThread):
    def __init__(self, timer: TimerMessageStore) -> None:
        super().__init__()
        self.timer = timer

    def run(self) -> None:
        while not self.stopped:
            try:
                if not self.step():
                    self.wait_for_running(self.timer.poll_interval)
            except Exception:  # a failed round is retried; the thread must not die
                log.exception("%s failed", self.name)
                self.wait_for_running(max(self.timer.poll_interval, 0.05))

    def step(self) -> bool:
        raise NotImplementedError


class TimerEnqueueService(_TimerService):
    name = "TimerEnqueueService"

    def step(self) -> bool:
        return self.timer.enqueue()


class TimerDequeueService(_TimerService):
    name = "TimerDequeueService"

    def step(self) -> bool:
        return self.timer.dequeue() != -1


class TimerFlushService(ServiceThread):
    name = "TimerFlushService"

    def __init__(self, timer: TimerMessageStore) -> None:
        super().__init__()
        self.timer = timer

    def run(self) -> None:
        next_clean = time.monotonic() + CLEAN_INTERVAL
        while not self.stopped:
            self.wait_for_running(self.timer.config.timer_flush_interval)
            try:
                self.flush()
                if time.monotonic() >= next_clean:
                    next_clean = time.monotonic() + CLEAN_INTERVAL
                    self.timer.timer_log.clean_expired_files(self.timer.store.get_min_phy_offset())
            except Exception:
                log.exception("timer flush failed")

    def flush(self) -> None:
        timer = self.timer
        cp, wheel = timer.timer_checkpoint, timer.timer_wheel
        if cp is None or wheel is None:
            return
        timer.prepare_timer_checkpoint()
        timer.timer_log.flush()
        wheel.flush()
        with timer.lock:
            cp.flush()
