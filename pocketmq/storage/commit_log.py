"""CommitLog: every message of every topic, appended to one log of mapped files.

Every put, of one message or of a batch, goes through one write path (``_append``): it packs each record
straight into the mapped file with one ``pack_into`` of a struct made for the record's shape (record_layout's
``record_struct``). The queue offset, physical offset and store timestamp are assigned inside the put lock, so
the log is ordered by all three.

Reads of the log (a record, a run of records, a record's size or store timestamp) are in commit_log_reads.py.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterable
from itertools import accumulate, repeat
from time import time_ns
from zlib import crc32

from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    END_FILE_MIN_BLANK_LENGTH,
    MAX_PROPERTIES_LENGTH,
    RETRY_OR_DLQ_TOPIC_MAX_LENGTH,
    STOREHOSTADDRESS_V6_FLAG,
    TOPIC_MAX_LENGTH,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.message import MessageExtBatch, MessageExtBrokerInner, java_utf8, properties_to_string
from pocketmq.common.record_layout import (
    HOST_SHAPES,
    IPV4_HOST_LENGTH,
    SIZE_MAGIC,
    field_positions,
    field_struct,
    host_flags,
    record_magic,
    record_struct,
)
from pocketmq.common.topic_validator import long_topic_error

from .batch_checks import batch_refusal
from .commit_log_reads import CommitLogReads
from .config import MessageStoreConfig, parse_delay_levels
from .mapped_file import MappedFile
from .mapped_file_queue import MappedFileQueue
from .results import AppendMessageResult, AppendMessageStatus, PutMessageResult, PutMessageStatus
from .schedule_routing import handle_schedule_message
from .timer.timer_routing import ROUTED_KEYS as _ROUTED_KEYS

_BLANK = SIZE_MAGIC  # the blank record that fills a file's end: TOTALSIZE and MAGICCODE only
_MAGIC = field_struct("MAGICCODE")
_MAGIC_POS = field_positions()["MAGICCODE"]
_CRC_MASK = 0x7FFFFFFF
_MAX_INT = 0x7FFFFFFF
_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
_V4 = IPV4_HOST_LENGTH
# Reading an Enum member off its class runs Python code in 3.11 (a descriptor call): the put path reads these.
_PUT_OK = PutMessageStatus.PUT_OK
_APPEND_OK = AppendMessageStatus.PUT_OK

# A record to write: its struct and the fields the caller gives (the log assigns the others, see _append):
# (struct, SYSFLAG, FLAG, BORNTIMESTAMP, BORNHOST, RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET, BODYLENGTH, BODY,
#  PROPERTIESLENGTH, PROPERTIES)
Row = tuple[struct.Struct, int, int, int, bytes, int, int, int, bytes, int, bytes]


def _nothing() -> None:
    pass


def _no_refusal() -> PutMessageResult | None:
    return None


def _file_failed(e: OSError) -> PutMessageResult:
    return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED, remark=f"commit-log file: {e}")


# NAME 0x01 VALUE 0x02 of one property. Most messages carry just TAGS, from a small set.
_ONE_PROPERTY: BoundedCache[tuple[str, str], bytes] = BoundedCache(
    lambda item: f"{item[0]}\x01{item[1]}\x02".encode(), 4096)


def _encode_properties(props: dict[str, str]) -> bytes:
    """NAME\x01VALUE\x02 per property (a producer that sends a properties string skips this)."""
    if len(props) == 1:
        return _ONE_PROPERTY[next(iter(props.items()))]
    return "".join([f"{k}\x01{v}\x02" for k, v in props.items()]).encode()


class _Refused(Exception):
    """A record shape the log does not take, and the answer (raised by the shape table's compute: not kept)."""

    def __init__(self, result: PutMessageResult) -> None:
        super().__init__(result.remark)
        self.result = result


def _illegal(why: str) -> _Refused:
    return _Refused(PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=why))


class CommitLog(CommitLogReads):
    def __init__(self, config: MessageStoreConfig) -> None:
        self.config = config
        self.mapped_file_queue = MappedFileQueue(config.store_path_commit_log, config.mapped_file_size_commit_log)
        self.file_size = config.mapped_file_size_commit_log
        # Where in the current file a put may end before it takes the slow path (_writable_file): the end of
        # the file less the blank record, or the next disk-space check point, whichever comes first.
        self._write_limit = 0
        self.space_check_bytes = max(1, config.disk_space_check_bytes)
        # topicQueueTable: (topic, queue id) -> next queue offset. Rebuilt from the consume queues at start.
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.put_lock = threading.Lock()
        # StoreStatsService's putMessageTimesTotal / putMessageSizeTotal: the records and bytes of every
        # successful put since start, whoever put them (clients, retries, delays and their delivery, transaction
        # and POP records...) and whatever became of their topic. Added to under the put lock.
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.delay_levels = parse_delay_levels(config.message_delay_level)
        self._store_host = config.store_host_bytes
        self._topic_entries: BoundedCache[str, bytes] = BoundedCache(str.encode, 100_000)
        self._last_store_timestamp = 0
        self._current: MappedFile | None = None  # the file being appended to
        self.update_max_message_size(config.max_message_size)
        # Called (outside the put lock) after every successful append: wakes the dispatcher.
        self.on_append = _nothing
        # The store's disk checks, called under the put lock (see _writable_file): on_space_check() runs every
        # space_check_bytes appended and at every new file, and answers a refusal or None; on_file_failed(e)
        # answers the refusal for a file that could not be created or reserved.
        self.on_space_check: Callable[[], PutMessageResult | None] = _no_refusal
        self.on_file_failed: Callable[[OSError], PutMessageResult] = _file_failed
        self._refusal: PutMessageResult | None = None  # why _writable_file found no file

    def update_max_message_size(self, size: int) -> None:
        """CommitLog.updateMaxMessageSize (UPDATE_BROKER_CONFIG's maxMessageSize: from the next put on)."""
        self._max_body = size
        # The struct of each record shape (body, topic, properties, born and store host lengths) _record_struct
        # took under these limits (a refused one is never kept); a put meanwhile fills the old table.
        self._shapes: BoundedCache[tuple[int, int, int, int, int], struct.Struct] = BoundedCache(
            self._record_struct, 4096)

    # -- put --------------------------------------------------------------------------------------
    def set_store_host(self, store_host: bytes) -> None:
        """The store host (pack_host form) of puts that name none (DefaultMessageStore.set_store_address)."""
        self._store_host = store_host

    def _record_struct(self, shape: tuple[int, int, int, int, int]) -> struct.Struct:
        """The struct of a record of this shape, or _Refused: why this log cannot take it."""
        blen, tlen, plen, born, store = shape
        status = PutMessageStatus.MESSAGE_ILLEGAL
        if tlen > RETRY_OR_DLQ_TOPIC_MAX_LENGTH:
            why = f"topic name longer than {RETRY_OR_DLQ_TOPIC_MAX_LENGTH} bytes"
        elif blen > self._max_body:
            why = f"message body {blen} bytes exceeds maxMessageSize {self._max_body}"
        elif plen > MAX_PROPERTIES_LENGTH:
            status = PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
            why = f"properties {plen} bytes exceed {MAX_PROPERTIES_LENGTH}"
        elif (born, store) not in HOST_SHAPES:
            why = f"a host is 8 bytes (IPv4 address and port) or 20 (IPv6), not {born} and {store}"
        else:
            rec = record_struct(blen, tlen, plen, born, store, record_magic(tlen))
            if rec.size + END_FILE_MIN_BLANK_LENGTH <= self.file_size:
                return rec
            why = f"record of {rec.size} bytes does not fit a commit log file"
        raise _Refused(PutMessageResult(status, remark=why))

    def _writable_file(self, size: int) -> MappedFile | None:
        """The slow path of a put (under the put lock): the current file if `size` bytes (plus the blank
        record) still fit, else the next one, its disk space reserved; and a disk check. None when the put must
        be refused (self._refusal says why): no file, or no space.

        A put takes this path at each new file and every space_check_bytes, so a writer, however fast, never
        gets further than that past a disk check; the reserved file means no write into it can fault."""
        mf = self._current
        if mf is None or mf.wrote_position + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            try:
                mf = self.mapped_file_queue.get_last_mapped_file()
                if mf.wrote_position + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
                    mf = self._roll(mf)
                mf.reserve_to(self.file_size)  # (a file found on disk at start may be sparse)
            except OSError as e:
                self._current = None
                self._refusal = self.on_file_failed(e)
                return None
            self._current = mf
        refusal = self.on_space_check()
        if refusal is not None:
            self._write_limit = 0  # check again on the next put
            self._refusal = refusal
            return None
        self._write_limit = min(self.file_size - END_FILE_MIN_BLANK_LENGTH, mf.wrote_position + self.space_check_bytes)
        return mf

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        props = msg.properties
        if props and not _ROUTED_KEYS.isdisjoint(props):
            refused = handle_schedule_message(msg, self.config, self.delay_levels)
            if refused is not None:
                return refused
            props = msg.properties
        body, born_host, ps = msg.body, msg.born_host, msg.properties_string
        try:
            props_b = ps.encode() if ps is not None else _encode_properties(props) if props else b""
        except UnicodeEncodeError:  # a lone surrogate, from a JSON header's \ud800: Java writes it as '?'
            props_b = java_utf8(ps if ps is not None else properties_to_string(props))
        topic_b = self._topic_entries.get(msg.topic) or self._topic_entries[msg.topic]
        store_host = msg.store_host or self._store_host
        shape = (len(body), len(topic_b), len(props_b), len(born_host), len(store_host))
        try:
            rec = self._shapes.get(shape) or self._shapes[shape]
        except _Refused as refused:
            return refused.result
        sys_flag = msg.sys_flag
        if sys_flag & _V6_BITS or shape[3] != _V4 or shape[4] != _V4:
            sys_flag = host_flags(sys_flag, shape[3], shape[4])
        # Prepared and rollback records take no queue slot (QUEUEOFFSET 0, the queue's counter stays).
        return self._append(msg.topic, topic_b, msg.queue_id, store_host, not sys_flag & TRANSACTION_PREPARED_TYPE,
                            rec.size, ((rec, sys_flag, msg.flag, msg.born_timestamp, born_host, msg.reconsume_times,
                                        msg.prepared_transaction_offset, shape[0], body, shape[2], props_b),))

    def put_messages(self, msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> PutMessageResult:
        """Append a batch atomically: one file, consecutive queue offsets (all messages share topic and queue).
        As RocketMQ's putMessages, a batch carries no delay level and no transaction type.

        The broker hands over a MessageExtBatch (shared fields once, properties already encoded); a list of
        Messages may differ in everything but topic and queue."""
        try:
            batch = self._ext_batch(msgs) if isinstance(msgs, MessageExtBatch) else self._message_list(msgs)
        except _Refused as refused:
            return refused.result
        topic, topic_b, queue_id, store_host, rows, sizes = batch
        total = sum(sizes)
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    remark=f"batch of {total} bytes does not fit a commit log file")
        result = self._append(topic, topic_b, queue_id, store_host, True, total, rows)
        appended = result.append_result
        if appended is not None:
            # Where each record went (worked out outside the lock: the sizes tell).
            offsets = list(accumulate(sizes, initial=appended.wrote_offset))
            offsets.pop()  # (the end of the last)
            appended.msg_num, appended.record_offsets = len(offsets), offsets
        return result

    def _ext_batch(self, b: MessageExtBatch) -> tuple[str, bytes, int, bytes, Iterable[Row], list[int]]:
        """(topic, its bytes, queue id, store host, rows, record sizes) of a MessageExtBatch; or _Refused."""
        flags, bodies, props = b.flags, b.bodies, b.properties
        if not len(flags) == len(bodies) == len(props):
            raise _illegal("batch lists of unequal length")
        if not bodies:
            raise _illegal("empty batch")
        if b.sys_flag & TRANSACTION_TYPE_MASK:
            raise _illegal("a batch cannot carry transactional messages")
        if (refusal := batch_refusal(props)) is not None:
            raise _illegal(refusal)
        topic_b = self._topic_entries.get(b.topic) or self._topic_entries[b.topic]
        store_host = b.store_host or self._store_host
        born_len, store_len = len(b.born_host), len(store_host)
        body_lens, props_lens = list(map(len, bodies)), list(map(len, props))
        n = len(bodies)
        recs: Iterable[struct.Struct]
        if body_lens.count(body_lens[0]) == n and props_lens.count(props_lens[0]) == n:
            # One shape (the same body and properties lengths, as a producer's batch mostly is): one lookup.
            rec = self._shapes[(body_lens[0], len(topic_b), props_lens[0], born_len, store_len)]
            recs, sizes = repeat(rec), [rec.size] * n
        else:
            recs = list(map(self._shapes.__getitem__, zip(
                body_lens, repeat(len(topic_b)), props_lens, repeat(born_len), repeat(store_len))))
            sizes = [rec.size for rec in recs]
        sys_flag = b.sys_flag
        if sys_flag & _V6_BITS or born_len != _V4 or store_len != _V4:
            sys_flag = host_flags(sys_flag, born_len, store_len)
        rows = zip(recs, repeat(sys_flag), flags, repeat(b.born_timestamp), repeat(b.born_host),
                   repeat(b.reconsume_times), repeat(0), body_lens, bodies, props_lens, props)
        return b.topic, topic_b, b.queue_id, store_host, rows, sizes

    def _message_list(
        self, msgs: list[MessageExtBrokerInner]) -> tuple[str, bytes, int, bytes, Iterable[Row], list[int]]:
        """_ext_batch for a list of messages (tests, tools): each one's own fields, the first one's store host."""
        if not msgs:
            raise _illegal("empty batch")
        first = msgs[0]
        topic, queue_id = first.topic, first.queue_id
        if any(m.topic != topic or m.queue_id != queue_id for m in msgs):
            raise _illegal("all messages of a batch must share topic and queue")
        if any(m.sys_flag & TRANSACTION_TYPE_MASK for m in msgs):
            raise _illegal("a batch cannot carry transactional messages")
        props = [java_utf8(m.properties_string) if m.properties_string is not None
                 else _encode_properties(m.properties) if m.properties else b"" for m in msgs]
        if (refusal := batch_refusal(props)) is not None:
            raise _illegal(refusal)
        topic_b = self._topic_entries.get(topic) or self._topic_entries[topic]
        store_host = first.store_host or self._store_host
        store_len = len(store_host)
        recs: list[struct.Struct] = []
        sys_flags: list[int] = []
        for m, props_b in zip(msgs, props, strict=True):
            born_len = len(m.born_host)
            recs.append(self._shapes[(len(m.body), len(topic_b), len(props_b), born_len, store_len)])
            sys_flag = m.sys_flag
            if sys_flag & _V6_BITS or born_len != _V4 or store_len != _V4:
                sys_flag = host_flags(sys_flag, born_len, store_len)
            sys_flags.append(sys_flag)
        rows = zip(recs, sys_flags, [m.flag for m in msgs], [m.born_timestamp for m in msgs],
                   [m.born_host for m in msgs], [m.reconsume_times for m in msgs],
                   [m.prepared_transaction_offset for m in msgs], [len(m.body) for m in msgs], [m.body for m in msgs],
                   [len(p) for p in props], props, strict=True)
        return topic, topic_b, queue_id, store_host, rows, [rec.size for rec in recs]

    def _append(self, topic: str, topic_b: bytes, queue_id: int, store_host: bytes, counted: bool, total: int,
                rows: Iterable[Row]) -> PutMessageResult:
        """The write path of every put: append ``rows`` (``total`` bytes, all for one topic and queue) in one
        file, under the put lock, which assigns each record its PHYSICALOFFSET, QUEUEOFFSET (consecutive ones;
        0 for the one record of a put that is not ``counted``) and one STORETIMESTAMP, and computes its BODYCRC.
        The result tells where the first record went."""
        if not 0 <= queue_id <= _MAX_INT:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"queue id {queue_id} out of range")
        qkey = (topic, queue_id)
        tlen = len(topic_b)
        if tlen > TOPIC_MAX_LENGTH:  # (taken in a version 2 record, record_magic, or refused)
            why = long_topic_error(topic, self.config.auto_message_version_on_topic_len)
            if why is not None:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=why)
        lock = self.put_lock
        # acquire/release rather than `with`, which looks up __enter__ and __exit__ on every put.
        lock.acquire()
        try:
            mf = self._current
            if mf is None or mf.wrote_position + total > self._write_limit:
                mf = self._writable_file(total)
                if mf is None:
                    return self._refusal  # type: ignore[return-value]  # set with every None
            pos = first_pos = mf.wrote_position
            store_ts = time_ns() // 1_000_000
            if store_ts < self._last_store_timestamp:
                store_ts = self._last_store_timestamp  # keep store time monotonic in log order
            self._last_store_timestamp = store_ts
            first_queue_offset = queue_offset = self.topic_queue_table.get(qkey, 0) if counted else 0
            first_phys = phys = mf.file_from_offset + pos
            mm = mf.mm
            magic, magic_pos, magic_code = _MAGIC, _MAGIC_POS, record_magic(tlen)
            for rec, sys_flag, flag, born_ts, born_host, reconsume, prepared, body_len, body, props_len, props in rows:
                size = rec.size
                # The magic goes in last, and the first record's after every other: a kill in the middle of the
                # copy leaves no MESSAGE_MAGIC_CODE at the start of the put, so recovery ends the log there
                # instead of keeping a record whose tail was never written, or the first records of a batch
                # whose producer was never told PUT_OK (it sends them all again).
                rec.pack_into(mm, pos, size, 0, crc32(body) & _CRC_MASK, queue_id, flag, queue_offset,
                              phys, sys_flag, born_ts, born_host, store_ts, store_host, reconsume, prepared,
                              body_len, body, tlen, topic_b, props_len, props)
                if pos != first_pos:
                    magic.pack_into(mm, pos + magic_pos, magic_code)
                pos += size
                phys += size
                queue_offset += 1
            if pos != first_pos:
                magic.pack_into(mm, first_pos + magic_pos, magic_code)
            mf.wrote_position = pos
            mf.store_timestamp = store_ts
            if counted:
                self.topic_queue_table[qkey] = queue_offset
            self.put_message_times_total += queue_offset - first_queue_offset
            self.put_message_size_total += total
        finally:
            lock.release()
        self.on_append()
        return PutMessageResult(_PUT_OK, AppendMessageResult(_APPEND_OK, first_phys, total, store_host,
                                                             first_queue_offset, store_ts))

    def _roll(self, mf: MappedFile) -> MappedFile:
        """END_OF_FILE: fill the rest of the file with the 8-byte blank record and start the next file."""
        pos = mf.wrote_position
        _BLANK.pack_into(mf.mm, pos, self.file_size - pos, BLANK_MAGIC_CODE)
        mf.wrote_position = self.file_size
        return self.mapped_file_queue.get_last_mapped_file()

    # -- lifecycle --------------------------------------------------------------------------------
    def load(self) -> None:
        self.mapped_file_queue.load()
        self._current = None

    def flush(self, least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()
