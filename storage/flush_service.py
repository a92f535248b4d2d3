"""Flush services: when mapped pages reach the disk.

ASYNC_FLUSH: FlushRealTimeService msyncs every 500 ms once 4 pages are dirty, and everything
every 10 s. SYNC_FLUSH: GroupCommitService flushes for whoever is waiting and releases every
waiter the flush covered (group commit). FlushConsumeQueueService does the same for the queues.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore


class FlushRealTimeService(ServiceThread):
    name = "flush-commitlog"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self._last_thorough = time.monotonic()

    def run(self) -> None:
        cfg = self.store.config
        while not self.stopped:
            self._stopped.wait(cfg.flush_interval_commit_log)
            least = cfg.flush_commit_log_least_pages
            now = time.monotonic()
            if now - self._last_thorough >= cfg.flush_commit_log_thorough_interval:
                self._last_thorough = now
                least = 0
            self.store.flush_commit_log(least)
        self.store.flush_commit_log(0)


class GroupCommitService(ServiceThread):
    name = "group-commit"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self._lock = threading.Lock()
        self._requests: list[tuple[int, Future]] = []

    def submit(self, next_offset: int) -> Future:
        """A future that completes with True once the log is flushed up to `next_offset`."""
        fut: Future = Future()
        with self._lock:
            self._requests.append((next_offset, fut))
        self.wakeup()
        return fut

    def run(self) -> None:
        while not self.stopped:
            self.wait_for_running(0.01)
            self._do_commit()
        self._do_commit()

    def _do_commit(self) -> None:
        with self._lock:
            requests, self._requests = self._requests, []
        if not requests:
            return
        target = max(off for off, _ in requests)
        # The data may span two files, so up to two flush rounds (RocketMQ does the same).
        for _ in range(2):
            if self.store.commit_log.mapped_file_queue.flushed_where >= target:
                break
            self.store.flush_commit_log(0)
        flushed = self.store.commit_log.mapped_file_queue.flushed_where
        for off, fut in requests:
            if not fut.done():
                fut.set_result(flushed >= off)


class FlushConsumeQueueService(ServiceThread):
    name = "flush-consumequeue"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self._last_thorough = time.monotonic()

    def run(self) -> None:
        cfg = self.store.config
        while not self.stopped:
            self._stopped.wait(cfg.flush_interval_consume_queue)
            now = time.monotonic()
            thorough = now - self._last_thorough >= cfg.flush_consume_queue_thorough_interval
            if thorough:
                self._last_thorough = now
            self.do_flush(0 if thorough else cfg.flush_consume_queue_least_pages, thorough)
        self.do_flush(0, True)

    def do_flush(self, least_pages: int, thorough: bool) -> None:
        logics_ts = self.store.checkpoint.logics_msg_timestamp
        for cq in list(self.store.consume_queue_table.values()):
            cq.flush(least_pages)
        if thorough:
            # Only what was dispatched before this flush started is known to be on disk.
            self.store.checkpoint.logics_msg_timestamp = logics_ts
            self.store.checkpoint.flush()
