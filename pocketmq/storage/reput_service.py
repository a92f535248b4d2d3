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

from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import raw_property

from .consume_queue import CQ_ENTRY
from .service_thread import ServiceThread

if TYPE_CHECKING:
    from mmap import mmap

    from .consume_queue import ConsumeQueue
    from .message_store import DefaultMessageStore

log = logging.getLogger(__name__)

# size, magic, queue id, queue offset, physical offset, sys flag, store timestamp, body length (IPv4 hosts)
DISPATCH_V4 = struct.Struct(">iI4xi4xqqi8x8xq8x4x8xi")
_DISPATCH_V6 = {
    (b, s): struct.Struct(f">iI4xi4xqqi8x{b}xq{s}x4x8xi") for b in (8, 20) for s in (8, 20)
}
_SHORT = struct.Struct(">H")
_SIZE_MAGIC = struct.Struct(">iI")
_SYSFLAG = struct.Struct(">i")
_RUN_BYTES = 256 * 1024  # a run is read with one slice copy; keep it cache-sized


def _run_struct(cache: dict, shape: tuple[int, int, int]) -> struct.Struct:
    """A whole IPv4 record of this (body, topic, properties) shape, decoding only what dispatch needs:
    size, magic, queue id, queue offset, physical offset, sys flag, store time, body length, topic
    length, topic, properties length, properties."""
    blen, tlen, plen = shape
    if len(cache) >= 4096:
        cache.clear()
    rs = cache[shape] = struct.Struct(f">iI4xi4xqqi8x8xq8x4x8xi{blen}xB{tlen}sH{plen}s")
    return rs
_V6 = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG

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
        self._tags_codes: dict[bytes, int] = {}
        # Properties repeat when messages carry no unique key: map short property strings straight
        # to their tags code and skip the scan.
        self._props_codes: dict[bytes, int] = {}
        self._rest_codes: dict[bytes, tuple[int, bytes | None]] = {}  # properties with the UNIQ_KEY pair cut out
        self._run_structs: dict[tuple[int, int, int], struct.Struct] = {}
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
        code = self._tags_codes.get(tags)
        if code is None:
            code = tags_code(tags.decode(errors="replace"))
            if len(self._tags_codes) < 65536:
                self._tags_codes[tags] = code
        return code

    def _classify(self, props: bytes, indexed: bool) -> tuple[int, bytes | None, bytes | None]:
        """(tags code, KEYS, UNIQ_KEY) of properties the cache does not hold; keys only when ``indexed``.

        Every message of a producer carries its own UNIQ_KEY, so such properties never repeat; the others
        around it do, and are cached here without it, with their tags code and KEYS.
        """
        i = props.find(b"UNIQ_KEY\x01")
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            uniq, rest = (props[i + 9:j], props[:i] + props[j + 1:]) if j >= 0 else (props[i + 9:], props[:i])
            known = self._rest_codes.get(rest)
            if known is None:
                known = (self._tags_code_of(rest), raw_property(rest, b"KEYS\x01") if rest else None)
                if len(rest) <= 64 and len(self._rest_codes) < 4096:
                    self._rest_codes[rest] = known
            return (known[0], known[1], uniq) if indexed else (known[0], None, None)
        code = self._tags_code_of(props)
        if not indexed or (b"KEYS\x01" not in props and b"UNIQ_KEY\x01" not in props):
            if len(props) <= 64 and len(self._props_codes) < 4096:
                self._props_codes[props] = code
            return code, None, None
        return code, raw_property(props, b"KEYS\x01"), raw_property(props, b"UNIQ_KEY\x01")

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
        store = self.store
        cq_table = store.dispatch_cq_table
        touch = store.cq_lru.touch
        index = store.index_service if store.config.message_index_enable else None
        listener = self.listener
        props_codes = self._props_codes
        runs = self._run_structs
        mm = mf.mm
        base = mf.file_from_offset
        pos = self.reput_from_offset - base
        end = mf.wrote_position
        if stop_at is not None:
            end = min(end, stop_at - base)  # (a task is due there: run_at)
        unpack = DISPATCH_V4.unpack_from
        pack_entry = CQ_ENTRY.pack_into
        limit = mf.file_size - 88
        store_ts = 0
        # The queue being appended to, kept in locals while records keep landing in it: its last file
        # (qf, with mapped buffer qmm, start qbase and qend, the end of its reserved bytes: past it the
        # slow path reserves more first) and its max physical offset (qmax,
        # written back when the queue changes and at the end). qf.wrote_position is stored on every
        # entry, as a reader woken by the listener below must already see the entry.
        cur_topic = cur_qid = qf = None
        # cq and qmm are None only until the first record sets them, which mypy cannot follow through the loop.
        cq: ConsumeQueue = None  # type: ignore[assignment]
        qmm: mmap = None  # type: ignore[assignment]
        records: Iterable[tuple[Any, ...]]
        qbase = qend = 0
        qmax = -1
        is_sched = False
        try:
            while pos < end:
                if pos <= limit:
                    size, magic, qid, qoff, phys, sys_flag, store_ts, blen = unpack(mm, pos)
                else:  # only the blank record fits in the last bytes of a file
                    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
                if magic != MESSAGE_MAGIC_CODE:
                    if magic == BLANK_MAGIC_CODE:
                        pos = store.commit_log.roll_next_file(base + pos) - base
                        return
                    # Recovery guarantees valid records below the write position; stop rather than guess.
                    raise RuntimeError(f"dispatch found a bad record at {base + pos}")
                v6 = sys_flag & _V6
                if v6:
                    records = [self._decode_v6(mm, pos)]
                    blen, tlen, plen = records[0][7], records[0][8], records[0][10]
                else:
                    # Records of one shape (body, topic and properties lengths) usually come in runs:
                    # decode up to 64 of them with one iter_unpack over one slice. Each is checked
                    # against the shape below, so the run stops at the first record that differs
                    # (same size, body and topic lengths imply the same properties length).
                    tlen = mm[pos + 88 + blen]
                    plen = _SHORT.unpack_from(mm, pos + 89 + blen + tlen)[0]
                    shape = (blen, tlen, plen)
                    rs = runs.get(shape)
                    if rs is None:
                        rs = _run_struct(runs, shape)
                    n = min((end - pos) // size, _RUN_BYTES // size + 1, 64)
                    records = rs.iter_unpack(mm[pos:pos + n * size])
                for (size_, magic, qid, qoff, phys, sys_flag, store_ts, blen_, tlen_, topic_b, _plen,
                     props) in records:
                    if (magic != MESSAGE_MAGIC_CODE or size_ != size or blen_ != blen or tlen_ != tlen
                            or sys_flag & _V6 != v6):
                        break
                    code = props_codes.get(props)
                    if code is None:
                        code, keys, uniq = self._classify(props, index is not None)
                    else:
                        keys = uniq = None  # only properties without keys are cached
                    if qid != cur_qid or topic_b != cur_topic:
                        if cq is not None:
                            cq.max_physic_offset = qmax
                        cq = cq_table.get((topic_b, qid))  # type: ignore[assignment]  # None: made below
                        if cq is None:
                            cq = store.find_consume_queue_for_dispatch(topic_b.decode(), qid)
                        touch(cq)  # mapped, most recently used (ConsumeQueueLru)
                        cur_topic, cur_qid, is_sched, qmax = topic_b, qid, cq.is_schedule, cq.max_physic_offset
                        files = cq.mapped_file_queue.files
                        qf = files[-1] if files else None
                        if qf is not None:
                            qmm, qbase, qend = qf.mm, qf.file_from_offset, qf.reserved
                    if is_sched:
                        code = store.delivery_timestamp(props, store_ts)
                    # Index before the queue entry: after a crash, dispatch resumes after the last queue
                    # entry, so everything up to it must already be indexed.
                    if keys or uniq:
                        index.build_index_raw(  # type: ignore[union-attr]  # keys come only with an index
                            cq.topic, topic_b, keys, uniq, phys, store_ts, sys_flag)
                    if not sys_flag & TRANSACTION_PREPARED_TYPE and phys + size > qmax:
                        wp = qoff * 20 - qbase
                        if qf is not None and wp == qf.wrote_position and wp < qend:
                            # Fast path: the entry lands right at the end of the queue's current file.
                            pack_entry(qmm, wp, phys, size, code)
                            qf.wrote_position = wp + 20
                            qmax = phys + size
                        else:
                            cq.max_physic_offset = qmax
                            cq.put_message_position_info(phys, size, code, qoff)
                            qmax = cq.max_physic_offset
                            files = cq.mapped_file_queue.files
                            qf = files[-1] if files else None
                            if qf is not None:
                                qmm, qbase, qend = qf.mm, qf.file_from_offset, qf.reserved
                    if listener is not None:
                        try:
                            listener(cq.topic, qid, qoff + 1, code, store_ts, props)
                        except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                            log.exception("message arriving listener failed")
                    pos += size
        finally:
            if cq is not None:
                cq.max_physic_offset = qmax
            if index is not None:
                index.sync_header()
            self.reput_from_offset = base + pos
            if store_ts:
                store.checkpoint.logics_msg_timestamp = store_ts  # type: ignore[union-attr]  # set while running

    @staticmethod
    def _decode_v6(mm, pos: int) -> tuple:
        """One record with an IPv6 host, in the layout of the run structs' tuples."""
        sys_flag = _SYSFLAG.unpack_from(mm, pos + 36)[0]
        b = 20 if sys_flag & BORNHOST_V6_FLAG else 8
        s = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
        size, magic, qid, qoff, phys, sys_flag, store_ts, blen = _DISPATCH_V6[(b, s)].unpack_from(mm, pos)
        tail = mm[pos + 72 + b + s + blen:pos + size]
        tlen = tail[0]
        plen = _SHORT.unpack_from(tail, 1 + tlen)[0]
        return (size, magic, qid, qoff, phys, sys_flag, store_ts, blen, tlen, tail[1:1 + tlen], plen,
                tail[3 + tlen:])
