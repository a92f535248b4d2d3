"""Flush services: when mapped pages reach the disk.

ASYNC_FLUSH: FlushRealTimeService msyncs every 500 ms once 4 pages are dirty, and everything
every 10 s. SYNC_FLUSH: GroupCommitService flushes for whoever is waiting and releases every
waiter the flush covered (group commit). FlushConsumeQueueService does the same for the queues.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING

from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore

log = logging.getLogger(__name__)


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
            self.survive(self.store.flush_commit_log, least)
        self.store.flush_commit_log(0)


def _settle(fut: Future, ok: bool) -> None:
    """Complete a flush request unless the other side (flush or watcher) did first."""
    try:
        fut.set_result(ok)
    except InvalidStateError:
        pass


class FlushDiskWatcher(ServiceThread):
    """Answers a group-commit request its flush did not cover within ``sync_flush_timeout`` with False
    (FLUSH_DISK_TIMEOUT), RocketMQ's FlushDiskWatcher: a put that does not block on the request (the broker's,
    which awaits it) otherwise waits for however long a slow fdatasync takes.

    Requests are watched in submission order, so their deadlines are in order too; the watcher looks every
    ``CHECK_INTERVAL`` while any is pending, dropping the answered ones, so what it holds stays small.
    """

    name = "flush-disk-watcher"
    CHECK_INTERVAL = 0.01

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.timeout = timeout
        self._watched: deque[tuple[float, Future]] = deque()

    def add(self, fut: Future) -> None:
        self._watched.append((time.monotonic() + self.timeout, fut))
        self.wakeup()  # (a flag check while the watcher is busy: it clears its wakeup only when idle)

    def run(self) -> None:
        watched = self._watched
        while not self.stopped:
            if not watched:
                self.wait_for_running(1.0)
                continue
            now = time.monotonic()
            while watched:
                deadline, fut = watched[0]
                if fut.done():
                    watched.popleft()
                elif deadline <= now:
                    watched.popleft()
                    _settle(fut, False)
                else:
                    break
            self._stopped.wait(self.CHECK_INTERVAL)


class GroupCommitService(ServiceThread):
    name = "group-commit"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self._lock = threading.Lock()
        self._requests: list[tuple[int, Future]] = []
        self._closed = False  # shut down: nobody is left to flush for a request
        self.watcher = FlushDiskWatcher(store.config.sync_flush_timeout)

    def start(self) -> None:
        with self._lock:
            self._closed = False
        self.watcher.start()
        super().start()

    def submit(self, next_offset: int) -> Future:
        """A future that completes with True once the log is flushed up to `next_offset`
        (False if the service could not get it there)."""
        fut: Future = Future()
        with self._lock:
            closed = self._closed
            if not closed:
                self._requests.append((next_offset, fut))
        if closed:
            fut.set_result(self.store.commit_log.mapped_file_queue.flushed_where >= next_offset)
        else:
            self.watcher.add(fut)
            self.wakeup()
        return fut

    def run(self) -> None:
        while not self.stopped:
            self.wait_for_running(0.01)
            self._do_commit()
        self._do_commit()

    def shutdown(self, join_timeout: float = 10.0) -> None:
        super().shutdown(join_timeout)
        # Answer whatever arrived after the last round, and everything from now on, at once:
        # a waiter (an awaiting broker above all) must never hang on a stopped service.
        with self._lock:
            self._closed = True
            requests, self._requests = self._requests, []
        self._answer(requests)
        self.watcher.shutdown()

    def _answer(self, requests: list[tuple[int, Future]]) -> None:
        flushed = self.store.commit_log.mapped_file_queue.flushed_where
        for off, fut in requests:
            if not fut.done():
                _settle(fut, flushed >= off)

    def _do_commit(self) -> None:
        with self._lock:
            requests, self._requests = self._requests, []
        if not requests:
            return
        target = max(off for off, _ in requests)
        # One flush round covers one file. RocketMQ gives each request two rounds (its data may
        # span two files); here one pass serves every waiter, whose data together may span many
        # files, so flush file after file for as long as that makes progress.
        mfq = self.store.commit_log.mapped_file_queue
        try:
            while mfq.flushed_where < target:
                before = mfq.flushed_where
                self.store.flush_commit_log(0)
                if mfq.flushed_where == before:
                    break
        except Exception:  # e.g. msync failing: answer these waiters (FLUSH_DISK_TIMEOUT), keep serving
            log.exception("group commit: flushing the commit log failed")
        finally:
            self._answer(requests)


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
            self.survive(self.do_flush, 0 if thorough else cfg.flush_consume_queue_least_pages, thorough)
            self.prepare_next_files()
        self.do_flush(0, True)

    def prepare_next_files(self) -> None:
        """Create each half-written queue's next file ahead of the dispatcher (docs/storage.md 3.2)."""
        for cq in list(self.store.consume_queue_table.values()):
            try:
                cq.prepare_next_file()
            except Exception:  # e.g. a stray file of the wrong size: the dispatcher will meet it and say so
                log.exception("preparing the next file of %r failed", cq)

    def do_flush(self, least_pages: int, thorough: bool) -> None:
        checkpoint = self.store.checkpoint
        assert checkpoint is not None  # the store's checkpoint lives as long as this service runs
        logics_ts = checkpoint.logics_msg_timestamp
        failed = 0
        for cq in list(self.store.consume_queue_table.values()):
            try:
                cq.flush(least_pages)
            except OSError as e:  # a file deleted under the flush (a topic deleted, the clean service): this one
                failed += 1
                log.warning("flushing %r failed: %s", cq, e)
        if thorough and not failed:
            # Only what was dispatched before this flush started is known to be on disk.
            checkpoint.logics_msg_timestamp = logics_ts
            checkpoint.flush()
