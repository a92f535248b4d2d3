"""ReputMessageService: the dispatcher thread that turns commit-log records into consume-queue and
index entries, and tells a listener about every arrival (long polling hangs on it).

It reads the commit log from reput_from_offset, as RocketMQ does, so whatever is in the log,
however it got there, ends up indexed. Dispatch has two forms that do the same:

- the reference, ``_dispatch_file_by_record``: each record read by ``check_message_and_return_size``
  (dispatch_request.py) into a DispatchRequest, handed to each of ``dispatchers`` in turn
  (commit_log_dispatcher.py: index, consume queue, arrival listener), as RocketMQ's doReput does;
- its fast twin, ``_dispatch_file``, which runs while no other dispatcher is added. Records come
  decoded in runs of one shape (``_records``: one iter_unpack over one slice for up to 64 records,
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
import struct
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import raw_property
from pocketmq.common.record_layout import (
    BODY_POS_V4,
    COMMIT_LOG_RECORD,
    IPV4_HOST_LENGTH,
    SIZE_MAGIC,
    RecordFormat,
    field_struct,
    host_widths,
)
from pocketmq.common.validators import stored_topic_error

from .commit_log_dispatcher import (
    ArrivingListener,
    CommitLogDispatcher,
    CommitLogDispatcherBuildConsumeQueue,
    CommitLogDispatcherBuildIndex,
    CommitLogDispatcherNotifyArriving,
)
from .dispatch_request import HEAD_FIELDS, HEADS, UnusableTopicError, check_message_and_return_size, decode_other_record
from .log_point_tasks import LogPointTasks
from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .consume_queue import ConsumeQueue
    from .index_service import IndexService
    from .message_store import DefaultMessageStore

__all__ = ["ArrivingListener", "ReputMessageService"]

log = logging.getLogger(__name__)

_V4_HOSTS = (IPV4_HOST_LENGTH, IPV4_HOST_LENGTH)
DISPATCH_V4 = HEADS[_V4_HOSTS]  # the fixed part of an IPv4 record (through BODYLENGTH), the fields dispatch reads
# A whole IPv4 record, those fields and the topic and properties; open: the lengths of BODY (skipped), TOPIC and
# PROPERTIES, one struct per shape of record.
_RUN_FORMAT = RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*_V4_HOSTS),
                           keep=HEAD_FIELDS + ("TOPICLENGTH", "TOPIC", "PROPERTIESLENGTH", "PROPERTIES"))
_PROPS_LEN = field_struct("PROPERTIESLENGTH")
_SYSFLAG = field_struct("SYSFLAG")
_TOPIC_LEN_SIZE = field_struct("TOPICLENGTH").size
_RUN_BYTES = 256 * 1024  # a run is read with one slice copy; keep it cache-sized
_RUN_RECORDS = 64  # records decoded by one iter_unpack, and entries written by one put_entries, at most
_V6 = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG


class ReputMessageService(ServiceThread):
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
        # Tags repeat, and so do properties when messages carry no unique key: the codes of both are remembered.
        self._tags_codes: BoundedCache[bytes, int] = BoundedCache(
            lambda tags: tags_code(tags.decode(errors="replace")), 65536, max_key_len=1024)
        # Short properties without keys -> their tags code: the dispatch loop's first look, which skips the scan.
        self._props_codes: BoundedCache[bytes, int] = BoundedCache(self._tags_code_of, 4096)
        # Short properties with the UNIQ_KEY pair cut out -> (tags code, KEYS).
        self._rest_codes: BoundedCache[bytes, tuple[int, bytes | None]] = BoundedCache(self._rest_info, 4096)
        # The run struct of each IPv4 record shape (body, topic, properties lengths).
        self._run_structs: BoundedCache[tuple[int, int, int], struct.Struct] = BoundedCache(
            lambda shape: _RUN_FORMAT.struct(*shape), 4096)
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

    def _tags_code_of(self, props: bytes) -> int:
        if not props:
            return 0
        # The last TAGS pair (raw_property's rule, string_to_properties' value); an empty one is not the value.
        i = props.rfind(b"TAGS\x01")
        tags: bytes | None
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            tags = (props[i + 5:j] if j > 0 else props[i + 5:]) or raw_property(props, b"TAGS\x01")
        else:
            tags = raw_property(props, b"TAGS\x01") if i > 0 else None
        if not tags:
            return 0
        return self._tags_codes.get(tags) or self._tags_codes[tags]

    def _rest_info(self, rest: bytes) -> tuple[int, bytes | None]:
        return self._tags_code_of(rest), raw_property(rest, b"KEYS\x01") if rest else None

    def _classify(self, cq: ConsumeQueue, topic_b: bytes, props: bytes, phys: int, store_ts: int, sys_flag: int,
                  index: IndexService | None) -> int:
        """The tags code of properties the cache does not hold; with an ``index``, the record is indexed by its
        keys first (CommitLogDispatcherBuildIndex's work, before the queue entry, as there).

        Every message of a producer carries its own UNIQ_KEY, so such properties never repeat; the others
        around it do, and are cached here without it, with their tags code and KEYS. Only short properties
        are remembered (the caches' bound counts entries, not bytes).
        """
        uniq: bytes | None
        i = props.rfind(b"UNIQ_KEY\x01")
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            uniq, rest = (props[i + 9:j], props[:i] + props[j + 1:]) if j >= 0 else (props[i + 9:], props[:i])
            uniq = uniq or raw_property(props, b"UNIQ_KEY\x01")  # (an empty last pair: an earlier one's value)
            code, keys = self._rest_codes[rest] if len(rest) <= 64 else self._rest_info(rest)
        elif index is None or (b"KEYS\x01" not in props and b"UNIQ_KEY\x01" not in props):
            return self._props_codes[props] if len(props) <= 64 else self._tags_code_of(props)
        else:
            code, keys, uniq = (self._tags_code_of(props), raw_property(props, b"KEYS\x01"),
                                raw_property(props, b"UNIQ_KEY\x01"))
        if index is not None and (keys or uniq):
            index.build_index_raw(cq.topic, topic_b, keys, uniq, phys, store_ts, sys_flag)
        return code

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

    # --- the fast twin: runs of records, decoded together, entries written together ---

    def _dispatch_file(self, mf, stop_at: int | None = None) -> None:
        """What _dispatch_file_by_record does with the three built-in dispatchers, in runs (the module's docstring
        says how). One loop, its state in local variables: a function call per record costs this loop more than
        its readability is worth (bench/README.md), so it is allowed past the size limits."""
        store, base, mm = self.store, mf.file_from_offset, mf.mm
        pos, end = self._file_range(mf, stop_at)
        index = store.index_service if store.config.message_index_enable else None
        index_props = index.index_props if index is not None and index.index_record is not None else None
        listener, known_code, runs, put_run = self.listener, self._props_codes.get, self._run_structs, self._put_run
        cq_table, touch, find_queue = store.dispatch_cq_table, store.cq_lru.touch, store.find_consume_queue_for_dispatch
        unpack, props_len_at, size_at, body_pos = DISPATCH_V4.unpack_from, _PROPS_LEN.unpack_from, \
            _SYSFLAG.unpack_from, BODY_POS_V4
        magic_code, magic_v2, v6_bits, prepared_bit = MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, _V6, \
            TRANSACTION_PREPARED_TYPE
        max_run = 3 * _RUN_RECORDS  # (flat triples)
        # The queue being dispatched to (cq, known by topic bytes and queue id) and its run: flat (commit-log offset,
        # size, tags code) entries from queue offset `first`; `expected` would extend it. `arrivals`: the listener's
        # calls, made once the run's entries are written. _put_run empties both.
        cur_topic = cur_qid = None
        cq: ConsumeQueue = None  # type: ignore[assignment]  # (set by the first record, which mypy cannot follow)
        is_sched, first, expected, store_ts, limit = False, -1, -1, 0, mf.file_size - body_pos
        run: list[int] = []
        arrivals: list[tuple[int, int, int, int, bytes]] = []
        try:
            while pos < end:
                if pos <= limit:
                    size, magic, qid, qoff, phys, sys_flag, store_ts, blen = unpack(mm, pos)
                else:  # only the blank record fits in the last bytes of a file
                    size, magic = SIZE_MAGIC.unpack_from(mm, pos)
                if magic != magic_code and magic != magic_v2:
                    pos = self._end_of_file(base, pos, magic)
                    return
                v6 = sys_flag & v6_bits
                if v6 or magic == magic_v2:  # (one at a time: the runs' structs have a 1-byte TOPICLENGTH)
                    records: Iterable[tuple[Any, ...]] = [decode_other_record(mm, pos)]
                    blen, tlen = records[0][7], records[0][8]  # type: ignore[index]
                else:  # (up to 64 records of this shape: one iter_unpack over one slice; see _run_length)
                    tlen = mm[pos + body_pos + blen]
                    shape = (blen, tlen, props_len_at(mm, pos + body_pos + blen + _TOPIC_LEN_SIZE + tlen)[0])
                    n = self._run_length(pos, size, end) if pos + size < end and size_at(mm, pos + size)[0] == size \
                        else 1
                    records = (runs.get(shape) or runs[shape]).iter_unpack(mm[pos:pos + n * size])
                for (size_, magic_, qid, qoff, phys, sys_flag, store_ts, blen_, tlen_, topic_b, _plen,
                     props) in records:
                    if (magic_ != magic or size_ != size or blen_ != blen or tlen_ != tlen
                            or sys_flag & v6_bits != v6):
                        break  # (the run of one shape ends)
                    if qid != cur_qid or topic_b != cur_topic:
                        if (found := cq_table.get((topic_b, qid))) is None and (why := stored_topic_error(topic_b)):
                            raise UnusableTopicError(base + pos, size, store_ts, why)  # (the run so far: finally)
                        if run or arrivals:
                            put_run(cq, first, run, arrivals)
                        cq = found if found is not None else find_queue(topic_b.decode(), qid)
                        touch(cq)  # mapped, most recently used (ConsumeQueueLru)
                        cur_topic = topic_b
                        cur_qid = qid
                        is_sched = cq.is_schedule
                        expected = -1
                    code = known_code(props)  # (only properties without keys are there)
                    if code is None and index_props is not None:
                        code = index_props(cq.topic, topic_b, props, phys, store_ts, sys_flag)
                    if code is None:
                        code = self._classify(cq, topic_b, props, phys, store_ts, sys_flag, index)
                    if is_sched:
                        code = store.delivery_timestamp(props, store_ts)
                    if sys_flag & prepared_bit:  # (prepared records take no queue slot; the listener hears of them)
                        if listener is not None:
                            arrivals.append((qid, qoff + 1, code, store_ts, props))
                            put_run(cq, first, run, arrivals)
                            first = expected
                    elif qoff == expected and len(run) < max_run:  # the run goes on
                        run += (phys, size, code)
                        expected = qoff + 1
                        if listener is not None:
                            arrivals.append((qid, expected, code, store_ts, props))
                    else:  # a run starts: its first entry is written now, and its listener call made
                        if run or arrivals:
                            put_run(cq, first, run, arrivals)
                        cq.put_entry(qoff, phys, size, code)
                        first = expected = qoff + 1
                        if listener is not None:
                            try:
                                listener(cq.topic, qid, expected, code, store_ts, props)
                            except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                                log.exception("message arriving listener failed")
                    pos += size
        finally:
            put_run(cq, first, run, arrivals)  # (what is left of the last run)
            self._file_done(base + pos, store_ts)

    def _end_of_file(self, base: int, pos: int, magic: int) -> int:
        """The position dispatch goes on from after a record of another magic than a message's at ``pos``: the
        next file's start after the blank record that ends a file; anything else is an error."""
        if magic == BLANK_MAGIC_CODE:
            return self.store.commit_log.roll_next_file(base + pos) - base
        # Recovery guarantees valid records below the write position; stop rather than guess.
        raise RuntimeError(f"dispatch found a bad record at {base + pos}")

    @staticmethod
    def _run_length(pos: int, size: int, end: int) -> int:
        """How many records of ``size`` bytes from ``pos`` to decode together when the next one has the same size:
        up to 64, within 256 KiB (the slice copied). (A record followed by one of another size is a run of one: it
        is copied alone. Mixed traffic is mostly such records, and copying 64 of them to decode one was measurable
        in dispatch.)"""
        return min((end - pos) // size, _RUN_BYTES // size + 1, _RUN_RECORDS)

    def _put_run(self, cq: ConsumeQueue, first: int, entries: list[int],
                 arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        """Write a run's entries to their queue, then tell the listener of its records; both lists are emptied."""
        if entries:
            cq.put_entries(first, entries)
            entries.clear()
        if arrivals:
            self._tell(cq.topic, arrivals)
            arrivals.clear()

    def _tell(self, topic: str, arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        listener = self.listener
        if listener is not None:
            for qid, next_offset, code, store_ts, props in arrivals:
                try:
                    listener(topic, qid, next_offset, code, store_ts, props)
                except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                    log.exception("message arriving listener failed")
