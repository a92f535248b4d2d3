"""ReputMessageService: the dispatcher thread that turns commit-log records into consume-queue and
index entries, and tells a listener about every arrival (long polling hangs on it).

It reads the commit log from reput_from_offset, as RocketMQ does, so whatever is in the log,
however it got there, ends up indexed. The loop unpacks only the fields it needs with one
struct call per record and reads properties as bytes, without building message objects.
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
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import raw_property
from pocketmq.common.record_layout import (
    BODY_POS_V4,
    COMMIT_LOG_RECORD,
    HOST_SHAPES,
    IPV4_HOST_LENGTH,
    SIZE_MAGIC,
    SYSFLAG_POS,
    RecordFormat,
    field_positions,
    field_struct,
    host_lengths,
    host_widths,
)

from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .consume_queue import ConsumeQueue
    from .message_store import DefaultMessageStore

log = logging.getLogger(__name__)

# What dispatch reads of a record; the other fields are skipped as pad bytes.
_HEAD_FIELDS = ("TOTALSIZE", "MAGICCODE", "QUEUEID", "QUEUEOFFSET", "PHYSICALOFFSET", "SYSFLAG", "STORETIMESTAMP",
                "BODYLENGTH")
_TAIL_FIELDS = ("TOPICLENGTH", "TOPIC", "PROPERTIESLENGTH", "PROPERTIES")
_V4_HOSTS = (IPV4_HOST_LENGTH, IPV4_HOST_LENGTH)
# The fixed part (through BODYLENGTH) for each host shape, those fields only.
_HEADS = {hosts: RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*hosts), keep=_HEAD_FIELDS,
                              through="BODYLENGTH").struct() for hosts in HOST_SHAPES}
DISPATCH_V4 = _HEADS[_V4_HOSTS]
# A whole IPv4 record, those fields and the topic and properties; open: the lengths of BODY (skipped), TOPIC and
# PROPERTIES, one struct per shape of record.
_RUN_FORMAT = RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*_V4_HOSTS), keep=_HEAD_FIELDS + _TAIL_FIELDS)
_PROPS_LEN = field_struct("PROPERTIESLENGTH")
_SYSFLAG = field_struct("SYSFLAG")
_TOPIC_LEN_SIZE = field_struct("TOPICLENGTH").size
_RUN_BYTES = 256 * 1024  # a run is read with one slice copy; keep it cache-sized
_RUN_RECORDS = 64  # records decoded by one iter_unpack, and entries written by one put_entries, at most
_V6 = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG


def _tags_code_of_bytes(tags: bytes) -> int:
    return tags_code(tags.decode(errors="replace"))


# Listener: (topic, queue id, next logic offset, tags code, store timestamp, raw properties)
ArrivingListener = Callable[[str, int, int, int, int, bytes], None]


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
        # handoff would cost more than the dispatch (for a broker: 40 % of the batch send rate).
        self._idle = True
        self.busy_poll_interval = 0.001
        # Each round costs the writer's thread a GIL handoff, which matters only when someone waits for the
        # arrivals: with `prompt_needed` set and answering False (the broker: no pull is parked), a busy
        # dispatcher polls every relaxed_poll_interval instead; hurry() (a pull parks, wait_caught_up) ends
        # such a sleep at once. Unset, every round is prompt, as in RocketMQ.
        self.relaxed_poll_interval = 0.01
        self.prompt_needed: Callable[[], bool] | None = None
        # Tags repeat, and so do properties when messages carry no unique key: the codes of both are remembered.
        self._tags_codes: BoundedCache[bytes, int] = BoundedCache(_tags_code_of_bytes, 65536)
        # Short properties without keys -> their tags code: the dispatch loop's first look, which skips the scan.
        self._props_codes: BoundedCache[bytes, int] = BoundedCache(self._tags_code_of, 4096)
        # Short properties with the UNIQ_KEY pair cut out -> (tags code, KEYS).
        self._rest_codes: BoundedCache[bytes, tuple[int, bytes | None]] = BoundedCache(self._rest_info, 4096)
        # The run struct of each IPv4 record shape (body, topic, properties lengths).
        self._run_structs: BoundedCache[tuple[int, int, int], struct.Struct] = BoundedCache(
            lambda shape: _RUN_FORMAT.struct(*shape), 4096)
        # Work that must happen on this thread at a point of the log (run_at): (offset, fn, future), in
        # offset order. Dispatch stops at the first one's offset until it has run.
        self._tasks: list[tuple[int, Callable[[], Any], Future]] = []
        self._tasks_lock = threading.Lock()
        # Rounds in a row that may fail (0.1 s apart) before the store refuses puts (WRITE_LOGICS_QUEUE_ERROR).
        self.failures_before_refusing = 3

    def run_at(self, offset: int, fn: Callable[[], Any]) -> Future:
        """Run `fn` on the dispatcher thread once everything below `offset` is dispatched and nothing after it
        is yet: a Future of its result. Callers pass offsets in increasing order (taken under the put lock).

        Deleting a topic goes through here: its queues must not be destroyed while records put before the
        deletion are still to be dispatched (the dispatcher would create them again from those records, with
        their old queue offsets, and then skip the new records the producer was told went to offsets 0, 1...),
        nor after records put since (they belong to the new queues)."""
        fut: Future = Future()
        with self._tasks_lock:
            self._tasks.append((offset, fn, fut))
        self.hurry()
        return fut

    def _run_due_tasks(self) -> int | None:
        """Run the tasks whose offset has been reached; the offset of the next one, or None."""
        while True:
            with self._tasks_lock:
                if not self._tasks:
                    return None
                offset, fn, fut = self._tasks[0]
                if self.reput_from_offset < offset:
                    return offset
                self._tasks.pop(0)
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except Exception as e:  # the caller sees it
                    fut.set_exception(e)

    def _fail_tasks(self) -> None:
        with self._tasks_lock:
            tasks, self._tasks = self._tasks, []
        for _offset, _fn, fut in tasks:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(RuntimeError("the dispatcher stopped before it got there"))

    def _tags_code_of(self, props: bytes) -> int:
        if not props:
            return 0
        i = props.find(b"TAGS\x01")
        tags: bytes | None
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            tags = props[i + 5:j] if j > 0 else props[i + 5:]
        else:
            tags = raw_property(props, b"TAGS\x01") if i > 0 else None
        if not tags:
            return 0
        return self._tags_codes.get(tags) or self._tags_codes[tags]

    def _rest_info(self, rest: bytes) -> tuple[int, bytes | None]:
        return self._tags_code_of(rest), raw_property(rest, b"KEYS\x01") if rest else None

    def _classify(self, props: bytes, indexed: bool) -> tuple[int, bytes | None, bytes | None]:
        """(tags code, KEYS, UNIQ_KEY) of properties the cache does not hold; keys only when ``indexed``.

        Every message of a producer carries its own UNIQ_KEY, so such properties never repeat; the others
        around it do, and are cached here without it, with their tags code and KEYS. Only short properties
        are remembered (the caches' bound counts entries, not bytes).
        """
        i = props.find(b"UNIQ_KEY\x01")
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            uniq, rest = (props[i + 9:j], props[:i] + props[j + 1:]) if j >= 0 else (props[i + 9:], props[:i])
            known = self._rest_codes[rest] if len(rest) <= 64 else self._rest_info(rest)
            return (known[0], known[1], uniq) if indexed else (known[0], None, None)
        if not indexed or (b"KEYS\x01" not in props and b"UNIQ_KEY\x01" not in props):
            return (self._props_codes[props] if len(props) <= 64 else self._tags_code_of(props)), None, None
        return self._tags_code_of(props), raw_property(props, b"KEYS\x01"), raw_property(props, b"UNIQ_KEY\x01")

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
            self._fail_tasks()
            with self._progress:
                self._progress.notify_all()

    def do_reput(self) -> None:
        commit_log = self.store.commit_log
        mfq = commit_log.mapped_file_queue
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
                self._dispatch_file(mf, stop_at)
            except ValueError:  # the file was deleted while we read it: move on to what remains
                if mf.available:
                    raise
            if self._waiters:
                with self._progress:
                    self._progress.notify_all()
        if self._waiters:
            with self._progress:
                self._progress.notify_all()

    def _dispatch_file(self, mf, stop_at: int | None = None) -> None:
        """Dispatch the records of ``mf`` from reput_from_offset: index them, hand each queue its entries, tell
        the listener.

        The entries of consecutive records of one queue (most of a batch; one record in mixed traffic) are
        collected as a run and written by one ``ConsumeQueue.put_entries``, and the listener hears of those
        records right after (a reader it wakes must find the entries). A run ends at a record of another
        queue, so the queues are written in log order: after a crash, dispatch resumes after the furthest
        record any queue holds, which must leave no earlier record of another queue out.
        """
        store = self.store
        cq_table = store.dispatch_cq_table
        touch = store.cq_lru.touch
        index = store.index_service if store.config.message_index_enable else None
        listener = self.listener
        known_code = self._props_codes.get
        runs = self._run_structs
        mm = mf.mm
        base = mf.file_from_offset
        pos = self.reput_from_offset - base
        end = mf.wrote_position
        if stop_at is not None:
            end = min(end, stop_at - base)  # (a task is due there: run_at)
        unpack = DISPATCH_V4.unpack_from
        props_len_at = _PROPS_LEN.unpack_from
        size_at = _SYSFLAG.unpack_from  # (an int, as TOTALSIZE is)
        body_pos = BODY_POS_V4
        limit = mf.file_size - body_pos
        max_run = _RUN_RECORDS
        magic_code, v6_bits, prepared_bit = MESSAGE_MAGIC_CODE, _V6, TRANSACTION_PREPARED_TYPE
        store_ts = 0
        # The queue being dispatched to (cq, known by topic bytes and queue id) and its run: the entries that
        # follow the last one written, as flat (commit-log offset, size, tags code) triples in `run` (`pending`
        # of them, from queue offset `first`), and `expected`, the queue offset that would extend it. The first
        # entry of a run is written at once, alone: mixed traffic makes runs of one, and those then cost one
        # call and no list. `arrivals` are the listener's calls, made once their records' entries are written.
        cur_topic = cur_qid = None
        # cq is None only until the first record sets it, which mypy cannot follow through the loop.
        cq: ConsumeQueue = None  # type: ignore[assignment]
        pending = 0
        first = expected = -1
        run: list[int] = []
        arrivals: list[tuple[int, int, int, int, bytes]] = []
        records: Iterable[tuple[Any, ...]]
        is_sched = False
        try:
            while pos < end:
                if pos <= limit:
                    size, magic, qid, qoff, phys, sys_flag, store_ts, blen = unpack(mm, pos)
                else:  # only the blank record fits in the last bytes of a file
                    size, magic = SIZE_MAGIC.unpack_from(mm, pos)
                if magic != MESSAGE_MAGIC_CODE:
                    if magic == BLANK_MAGIC_CODE:
                        pos = store.commit_log.roll_next_file(base + pos) - base
                        return
                    # Recovery guarantees valid records below the write position; stop rather than guess.
                    raise RuntimeError(f"dispatch found a bad record at {base + pos}")
                v6 = sys_flag & _V6
                if v6:
                    records = [self._decode_v6(mm, pos)]
                    blen, tlen = records[0][7], records[0][8]
                else:
                    # Records of one shape (body, topic and properties lengths) usually come in runs:
                    # decode up to 64 of them with one iter_unpack over one slice. Each is checked
                    # against the shape below, so the run stops at the first record that differs
                    # (same size, body and topic lengths imply the same properties length).
                    tlen = mm[pos + body_pos + blen]
                    shape = (blen, tlen, props_len_at(mm, pos + body_pos + blen + _TOPIC_LEN_SIZE + tlen)[0])
                    rs = runs.get(shape) or runs[shape]
                    # (A record followed by one of another size is a run of one: copy just it. Mixed traffic
                    # is mostly such records, and copying 64 of them to decode one cost 5 % of dispatch.)
                    if pos + size < end and size_at(mm, pos + size)[0] == size:
                        n = min((end - pos) // size, _RUN_BYTES // size + 1, _RUN_RECORDS)
                        records = rs.iter_unpack(mm[pos:pos + n * size])
                    else:
                        records = rs.iter_unpack(mm[pos:pos + size])
                for (size_, magic, qid, qoff, phys, sys_flag, store_ts, blen_, tlen_, topic_b, _plen,
                     props) in records:
                    if (magic != magic_code or size_ != size or blen_ != blen or tlen_ != tlen
                            or sys_flag & v6_bits != v6):
                        break
                    if qid != cur_qid or topic_b != cur_topic:
                        if pending or arrivals:
                            self._put_run(cq, first, run if pending else [], arrivals)
                            pending = 0
                            arrivals = []
                        cq = cq_table.get((topic_b, qid))  # type: ignore[assignment]  # None: made below
                        if cq is None:
                            cq = store.find_consume_queue_for_dispatch(topic_b.decode(), qid)
                        touch(cq)  # mapped, most recently used (ConsumeQueueLru)
                        cur_topic = topic_b
                        cur_qid = qid
                        is_sched = cq.is_schedule
                        expected = -1
                    code = known_code(props)  # (only properties without keys are there)
                    if code is None:
                        code, keys, uniq = self._classify(props, index is not None)
                        # Index before the queue entry: after a crash, dispatch resumes after the last queue
                        # entry, so everything up to it must already be indexed.
                        if keys or uniq:
                            index.build_index_raw(  # type: ignore[union-attr]  # keys come only with an index
                                cq.topic, topic_b, keys, uniq, phys, store_ts, sys_flag)
                    if is_sched:
                        code = store.delivery_timestamp(props, store_ts)
                    if not sys_flag & prepared_bit:
                        if qoff == expected and pending < max_run:  # the run goes on
                            if pending:
                                run += (phys, size, code)
                            else:
                                run = [phys, size, code]
                                first = qoff
                            pending += 1
                            if listener is not None:
                                arrivals.append((qid, qoff + 1, code, store_ts, props))
                        else:  # a run starts: its first entry is written now, and its listener call made
                            if pending or arrivals:
                                self._put_run(cq, first, run if pending else [], arrivals)
                                pending = 0
                                arrivals = []
                            cq.put_entry(qoff, phys, size, code)
                            if listener is not None:
                                try:
                                    listener(cq.topic, qid, qoff + 1, code, store_ts, props)
                                except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                                    log.exception("message arriving listener failed")
                        expected = qoff + 1
                    elif listener is not None:  # (prepared records take no queue slot; the listener hears of them)
                        arrivals.append((qid, qoff + 1, code, store_ts, props))
                        if not pending or len(arrivals) >= max_run:  # (after the run's records, if there is one)
                            self._put_run(cq, first, run if pending else [], arrivals)
                            pending = 0
                            arrivals = []
                    pos += size
        finally:
            if pending or arrivals:
                self._put_run(cq, first, run if pending else [], arrivals)
            if index is not None:
                index.sync_header()
            self.reput_from_offset = base + pos
            if store_ts:
                store.checkpoint.logics_msg_timestamp = store_ts  # type: ignore[union-attr]  # set while running

    def _put_run(self, cq: ConsumeQueue, first: int, entries: list[int],
                 arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        """Write a run's entries to their queue, then tell the listener of its records."""
        if entries:
            cq.put_entries(first, entries)
        if arrivals:
            self._tell(cq.topic, arrivals)

    def _tell(self, topic: str, arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        listener = self.listener
        if listener is not None:
            for qid, next_offset, code, store_ts, props in arrivals:
                try:
                    listener(topic, qid, next_offset, code, store_ts, props)
                except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                    log.exception("message arriving listener failed")

    @staticmethod
    def _decode_v6(mm, pos: int) -> tuple:
        """One record with an IPv6 host, in the layout of the run structs' tuples."""
        hosts = host_lengths(_SYSFLAG.unpack_from(mm, pos + SYSFLAG_POS)[0])
        size, magic, qid, qoff, phys, sys_flag, store_ts, blen = _HEADS[hosts].unpack_from(mm, pos)
        tail = mm[pos + field_positions(*hosts)["BODY"] + blen:pos + size]
        tlen = tail[0]
        plen = _PROPS_LEN.unpack_from(tail, _TOPIC_LEN_SIZE + tlen)[0]
        topic_end = _TOPIC_LEN_SIZE + tlen
        return (size, magic, qid, qoff, phys, sys_flag, store_ts, blen, tlen, tail[_TOPIC_LEN_SIZE:topic_end], plen,
                tail[topic_end + _PROPS_LEN.size:])
