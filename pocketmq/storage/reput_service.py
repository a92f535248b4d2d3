"""ReputMessageService: the dispatcher thread that turns commit-log records into consume-queue and
index entries, and tells a listener about every arrival (long polling hangs on it).

It reads the commit log from reput_from_offset, as RocketMQ does, so whatever is in the log,
however it got there, ends up indexed. Dispatch has two forms that do the same:

- the reference, ``_dispatch_file_by_record``: each record read by ``check_message_and_return_size``
  (dispatch_request.py) into a DispatchRequest, handed to each of ``dispatchers`` in turn
  (commit_log_dispatcher.py: index, consume queue, arrival listener), as RocketMQ's doReput does;
- its fast twin, ``_dispatch_file`` (reput_fast_twin.py), which runs while no other dispatcher is
  added. Records come decoded in runs of one shape (``_records``: one iter_unpack over one slice for up to 64 records,
  only the fields dispatch needs, properties as bytes, no message objects); properties seen before
  give their tags code from a cache (``_classify`` for the others, which also indexes them). The
  entries of consecutive records of one queue (most of a batch; one record in mixed traffic) are
  collected as a run and written by one ``ConsumeQueue.put_entries``, and the listener hears of
  those records right after (a reader it wakes must find the entries). The first entry of a run is
  written at once, alone: mixed traffic makes runs of one, and those then cost one call and no list.
  A run ends at a record of another queue, so the queues are written in log order: after a crash,
  dispatch resumes after the furthest record any queue holds, which must leave no earlier record of
  another queue out.

tests/storage/test_dispatch_twins.py holds the two to the same consume-queue entries, index keys and
listener calls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .commit_log_dispatcher import (
    ArrivingListener,
    CommitLogDispatcher,
    CommitLogDispatcherBuildConsumeQueue,
    CommitLogDispatcherBuildIndex,
    CommitLogDispatcherNotifyArriving,
)
from .dispatch_request import UnusableTopicError, check_message_and_return_size
from .log_point_tasks import LogPointTasks
from .reput_fast_twin import ReputFastTwin
from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore

__all__ = ["ArrivingListener", "ReputMessageService"]

log = logging.getLogger(__name__)


class ReputMessageService(ReputFastTwin, ServiceThread):
    name = "reput"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self.reput_from_offset = 0
        self.listener: ArrivingListener | None = None
        self._progress = threading.Condition()
        self._waiters = 0
        # Busy, the thread polls every busy_poll_interval seconds, as RocketMQ's sleeps 1 ms between rounds;
        # idle, it waits for a wakeup. Appends wake only an idle dispatcher: per append, a wakeup plus the GIL
        # handoff would cost more than the dispatch.
        self._idle = True
        self.busy_poll_interval = 0.001
        # Each round costs the writer's thread a GIL handoff, which matters only when someone waits for the
        # arrivals: with `prompt_needed` set and answering False (the broker: no pull is parked), a busy
        # dispatcher polls every relaxed_poll_interval instead; hurry() (a pull parks, wait_caught_up) ends
        # such a sleep at once. Unset, every round is prompt, as in RocketMQ.
        self.relaxed_poll_interval = 0.01
        self.prompt_needed: Callable[[], bool] | None = None
        # Held through a round, by this thread or by a caller of dispatch_in_caller: one round at a time.
        self._round = threading.Lock()
        # The most a caller dispatches (dispatch_in_caller): more is the thread's, not an event loop's, to do.
        self.caller_round_max_bytes = 64 * 1024
        self._init_fast_twin()
        # Work that must happen at a point of the log (run_at); dispatch stops at the first one's offset until
        # it has run.
        self._tasks = LogPointTasks()
        # Rounds in a row that may fail (0.1 s apart) before the store refuses puts (WRITE_LOGICS_QUEUE_ERROR).
        self.failures_before_refusing = 3
        # Every record goes to these, in order (DefaultMessageStore.dispatcherList): the index first (after a crash,
        # dispatch resumes after the last consume-queue entry, so all before it must be indexed), the listener last.
        self.dispatchers: list[CommitLogDispatcher] = [
            CommitLogDispatcherBuildIndex(store),
            CommitLogDispatcherBuildConsumeQueue(store),
            CommitLogDispatcherNotifyArriving(lambda: self.listener),
        ]
        self._extra_dispatchers = False
        # True: every record through the dispatchers (the reference), even without extra ones; tests compare.
        self.per_record = False

    def run_at(self, offset: int, fn: Callable[[], Any]) -> Future:
        """Run `fn` on the dispatcher thread once everything below `offset` is dispatched and nothing after it
        is yet: a Future of its result (log_point_tasks.py says what for)."""
        fut = self._tasks.add(offset, fn)
        self.hurry()
        return fut

    def _run_due_tasks(self) -> int | None:
        return self._tasks.run_due(self.reput_from_offset)

    def behind(self) -> int:
        return self.store.commit_log.get_max_offset() - self.reput_from_offset

    def wait_caught_up(self, target: int, timeout: float | None) -> bool:
        with self._progress:
            self._waiters += 1
            self.hurry()
            try:
                return self._progress.wait_for(lambda: self.reput_from_offset >= target or self.stopped, timeout) \
                    and self.reput_from_offset >= target
            finally:
                self._waiters -= 1

    def wakeup(self) -> None:
        """An append: wake an idle dispatcher; a busy one only while someone waits for what it dispatches (a
        parked pull, wait_caught_up), whose latency would otherwise include the rest of a polling round."""
        if not self._wake.is_set() and (self._idle or self._waiters or self._prompt_now()):
            self._wake.set()

    def _prompt_now(self) -> bool:
        needed = self.prompt_needed
        return needed is not None and needed()

    def hurry(self) -> None:
        """Someone waits for arrivals: dispatch now, and promptly from here on (see prompt_needed)."""
        ServiceThread.wakeup(self)  # (this class's wakeup only wakes an idle dispatcher)

    def dispatch_in_caller(self) -> bool:
        """Run a dispatch round on the calling thread now, unless one is under way, a task is due (run_at) or more
        than caller_round_max_bytes wait: False then, and the dispatcher thread does it. For a writer whose put
        someone waits for (a parked pull).

        Woken by the append, the dispatcher thread still has to take CPython's GIL from the thread that put the
        message, and a thread that drops the GIL at every system call (an event loop answering requests) takes
        it straight back each time before the woken thread runs; the waiter asks for a switch only after 5 ms
        in which no thread took the GIL at all. Beside a busy client the dispatcher waited many intervals that way,
        and every parked pull with it (bench/README.md, "The Java client's latency tail"). A round that fails
        here is left to the thread, which retries it and counts the failures."""
        if self._tasks or self.behind() > self.caller_round_max_bytes or not self._round.acquire(blocking=False):
            return False
        try:
            self.do_reput()
        except Exception:
            log.debug("a dispatch round in the caller failed; the dispatcher thread retries it", exc_info=True)
            return False
        finally:
            self._round.release()
        return True

    def busy_interval(self) -> float:
        """How long a busy dispatcher sleeps between rounds: RocketMQ's 1 ms while anyone may wait for what
        it dispatches, the relaxed interval while prompt_needed says nobody does."""
        needed = self.prompt_needed
        if needed is None or self._waiters > 0 or needed():
            return self.busy_poll_interval
        return self.relaxed_poll_interval

    def run(self) -> None:
        busy = False
        failures = 0  # consecutive rounds that failed
        try:
            while not self.stopped:
                if busy:
                    # (appends do not set _wake while it is busy; hurry() and shutdown() do)
                    self.wait_for_running(self.busy_interval())
                else:
                    self._idle = True
                    if self.behind() <= 0:  # (an append just before _idle was set woke nobody)
                        self.wait_for_running(0.01)
                    self._idle = False
                before = self.reput_from_offset
                try:
                    with self._round:
                        self.do_reput()
                    busy = self.reput_from_offset != before
                    if failures:
                        failures = 0
                        self.store.running_flags.clear_logics_queue_error()
                        log.warning("dispatch works again at offset %d: accepting puts", self.reput_from_offset)
                except Exception:
                    # RocketMQ logs and keeps dispatching; the failed record is retried next round. A failure
                    # that persists (no space, no descriptors) stops puts: the store must not acknowledge
                    # messages nobody can pull.
                    failures += 1
                    if failures == self.failures_before_refusing:
                        self.store.running_flags.make_logics_queue_error()
                        log.exception("dispatch failed at offset %d %d times: refusing puts until it works",
                                      self.reput_from_offset, failures)
                    elif failures < self.failures_before_refusing or failures % 100 == 0:
                        log.exception("dispatch failed at offset %d; retrying", self.reput_from_offset)
                    self._stopped.wait(0.1)
        finally:
            self._stopped.set()
            self._tasks.fail_all()
            with self._progress:
                self._progress.notify_all()

    def do_reput(self) -> None:
        commit_log = self.store.commit_log
        mfq = commit_log.mapped_file_queue
        # Dispatchers beyond the three built in (index, consume queue, listener) have no fast twin: with one, every
        # record goes through the list, as in RocketMQ.
        dispatch_file = self._dispatch_file_by_record if self.per_record or self._extra_dispatchers \
            else self._dispatch_file
        stop_at = self._run_due_tasks() if self._tasks else None
        while self.reput_from_offset < commit_log.get_max_offset() and not self.stopped:
            if self._tasks:  # (one registered meanwhile: its offset is at or past what is written now)
                stop_at = self._run_due_tasks()
            min_offset = mfq.get_min_offset()
            if self.reput_from_offset < min_offset:
                self.reput_from_offset = min_offset
            mf = mfq.find_mapped_file_by_offset(self.reput_from_offset)
            if mf is None:
                break
            try:
                if self.reput_from_offset < (deleted_end := self.store.deleted_records_end):
                    # (A crash restart going over deleted topics' records: the reference leaves them out.)
                    self._dispatch_file_by_record(mf, deleted_end if stop_at is None else min(stop_at, deleted_end))
                else:
                    dispatch_file(mf, stop_at)
            except ValueError:  # the file was deleted while we read it: move on to what remains
                if mf.available:
                    raise
            except UnusableTopicError as e:  # (both twins stop at such a record, its offset reached: go past it)
                self._file_done(e.skip(), e.store_timestamp)  # (as if dispatched: the twins agree)
            if self._waiters:
                with self._progress:
                    self._progress.notify_all()
        if self._waiters:
            with self._progress:
                self._progress.notify_all()

    def _file_range(self, mf, stop_at: int | None) -> tuple[int, int]:
        """Where dispatch of ``mf`` starts and ends (as positions in the file): from reput_from_offset to what is
        written, or to ``stop_at``, where a task is due (run_at)."""
        base = mf.file_from_offset
        end = mf.wrote_position if stop_at is None else min(mf.wrote_position, stop_at - base)
        return self.reput_from_offset - base, end

    def _file_done(self, offset: int, store_ts: int) -> None:
        """Dispatch of a file got to ``offset`` (the last record stored at ``store_ts``)."""
        store = self.store
        if store.config.message_index_enable:
            store.index_service.sync_header()
        self.reput_from_offset = offset
        if store_ts:
            store.checkpoint.logics_msg_timestamp = store_ts  # type: ignore[union-attr]  # set while running

    # --- the reference: one record at a time, to every dispatcher ---

    def add_dispatcher(self, dispatcher: CommitLogDispatcher) -> None:
        """Hand every record to ``dispatcher`` too, after the index and the consume queue, before the listener
        (DefaultMessageStore.dispatcherList: where the timer and POP stores would hook in)."""
        self.dispatchers.insert(len(self.dispatchers) - 1, dispatcher)
        self._extra_dispatchers = True

    def _dispatch_file_by_record(self, mf, stop_at: int | None = None) -> None:
        """The records of ``mf`` from reput_from_offset, each read by check_message_and_return_size and handed to
        every dispatcher in turn (RocketMQ's ReputMessageService.doReput). _dispatch_file is its fast twin."""
        base = mf.file_from_offset
        pos, end = self._file_range(mf, stop_at)
        delivery_timestamp = self.store.delivery_timestamp
        store_ts = 0
        try:
            while pos < end:
                request = check_message_and_return_size(mf.mm, pos, base, delivery_timestamp)
                if request is None:  # the blank record that ends a file: go on in the next one
                    pos = self.store.commit_log.roll_next_file(base + pos) - base
                    return
                for dispatcher in self.dispatchers:
                    dispatcher.dispatch(request)
                store_ts = request.store_timestamp
                pos += request.msg_size
        finally:
            self._file_done(base + pos, store_ts)
