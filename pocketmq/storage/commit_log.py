"""CommitLog: every message of every topic, appended to one log of mapped files.

The put path packs each record straight into the mapped file: one struct.pack_into for the fixed
88 bytes, then slices for body, topic and properties. The queue offset, physical offset and store
timestamp are assigned inside the put lock, so the log is ordered by all three.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterable
from itertools import repeat
from time import time_ns
from zlib import crc32

from pocketmq.common.codec import SYSFLAG_POS, record_struct
from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    END_FILE_MIN_BLANK_LENGTH,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC_CODE,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    STOREHOSTADDRESS_V6_FLAG,
    TOPIC_MAX_LENGTH,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.message import Message, MessageExtBatch, raw_property

from .config import MessageStoreConfig, parse_delay_levels
from .mapped_file import MappedFile
from .mapped_file_queue import MappedFileQueue
from .results import AppendMessageResult, AppendMessageStatus, PutMessageResult, PutMessageStatus

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

_BLANK = struct.Struct(">iI")
_CRC_MASK = 0x7FFFFFFF
_MAX_INT = 0x7FFFFFFF
_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
_NOT_COUNTED = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
# Reading an Enum member off its class runs Python code in 3.11 (~70 ns): the put path reads these.
_PUT_OK = PutMessageStatus.PUT_OK
_APPEND_OK = AppendMessageStatus.PUT_OK


def _nothing() -> None:
    pass


def _host_flags(sys_flag: int, born_len: int, store_len: int) -> int:
    """SYSFLAG with the IPv6 bits set to match the hosts actually written."""
    return (sys_flag & ~_V6_BITS) | (BORNHOST_V6_FLAG if born_len == 20 else 0) | (
        STOREHOSTADDRESS_V6_FLAG if store_len == 20 else 0)


_ONE_PROPERTY: dict[tuple[str, str], bytes] = {}


def _encode_properties(props: dict[str, str]) -> bytes:
    """NAME\x01VALUE\x02 per property. Most messages carry just TAGS, from a small set, so a
    one-property encoding is cached (a producer that sends a properties string skips this)."""
    if len(props) == 1:
        item = next(iter(props.items()))
        raw = _ONE_PROPERTY.get(item)
        if raw is None:
            raw = f"{item[0]}\x01{item[1]}\x02".encode()
            if len(_ONE_PROPERTY) < 4096:
                _ONE_PROPERTY[item] = raw
        return raw
    return "".join([f"{k}\x01{v}\x02" for k, v in props.items()]).encode()


class CommitLog:
    def __init__(self, config: MessageStoreConfig) -> None:
        self.config = config
        self.mapped_file_queue = MappedFileQueue(config.store_path_commit_log, config.mapped_file_size_commit_log)
        self.file_size = config.mapped_file_size_commit_log
        # topicQueueTable: (topic, queue id) -> next queue offset. Rebuilt from the consume queues at start.
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.put_lock = threading.Lock()
        self.delay_levels = parse_delay_levels(config.message_delay_level)
        self._store_host = config.store_host_bytes
        self._topic_entries: dict[str, bytes] = {}
        self._last_store_timestamp = 0
        self._max_body = config.max_message_size
        self._current: MappedFile | None = None  # the file being appended to
        # One struct per record shape (body, topic, properties, born host and store host lengths) packs a
        # whole record with one pack_into. Only shapes this log accepts get in, so a hit needs no size checks.
        self._shapes: dict[tuple[int, int, int, int, int], struct.Struct] = {}
        # Called (outside the put lock) after every successful append: wakes the dispatcher.
        self.on_append = _nothing

    # -- put --------------------------------------------------------------------------------------
    def _topic_bytes(self, topic: str) -> bytes:
        raw = self._topic_entries.get(topic)
        if raw is None:
            raw = topic.encode()
            if len(self._topic_entries) < 100_000:
                self._topic_entries[topic] = raw
        return raw

    def _reroute_delay(self, msg: Message) -> None:
        """A message with DELAY > 0 goes to SCHEDULE_TOPIC_XXXX, queue level - 1; its real address is kept."""
        try:
            level = int(msg.properties[PROPERTY_DELAY_TIME_LEVEL])
        except ValueError:
            return
        if level <= 0 or msg.sys_flag & TRANSACTION_TYPE_MASK in _NOT_COUNTED or msg.topic == SCHEDULE_TOPIC:
            return  # (already rerouted: a caller retrying the same Message must not nest it twice)
        level = min(level, len(self.delay_levels))
        props = dict(msg.properties)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        props[PROPERTY_REAL_TOPIC] = msg.topic
        props[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.properties = props
        msg.properties_string = None
        msg.topic = SCHEDULE_TOPIC
        msg.queue_id = level - 1

    def _new_shape(self, key: tuple[int, int, int, int, int]) -> tuple[struct.Struct | None,
                                                                     PutMessageResult | None]:
        """(the struct of a record of this shape, None), cached; or (None, why it cannot be written)."""
        blen, tlen, plen, born, store = key
        rec = record_struct(blen, tlen, plen, born, store)
        status = PutMessageStatus.MESSAGE_ILLEGAL
        if tlen > TOPIC_MAX_LENGTH:  # (UTF-8 bytes: never fewer than the characters)
            why = f"topic name longer than {TOPIC_MAX_LENGTH} chars or bytes"
        elif blen > self._max_body:
            why = f"message body {blen} bytes exceeds maxMessageSize {self._max_body}"
        elif plen > MAX_PROPERTIES_LENGTH:
            status = PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
            why = f"properties {plen} bytes exceed {MAX_PROPERTIES_LENGTH}"
        elif rec.size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            why = f"record of {rec.size} bytes does not fit a commit log file"
        else:
            if len(self._shapes) >= 4096:
                self._shapes.clear()
            self._shapes[key] = rec
            return rec, None
        return None, PutMessageResult(status, remark=why)

    def _writable_file(self, size: int) -> MappedFile:
        """The current file if `size` bytes (plus the blank record) still fit, else the next one."""
        mf = self._current
        if mf is None or mf.wrote_position + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            mf = self.mapped_file_queue.get_last_mapped_file()
            if mf.wrote_position + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
                mf = self._roll(mf)
            self._current = mf
        return mf

    def put_message(self, msg: Message) -> PutMessageResult:
        props = msg.properties
        if props and PROPERTY_DELAY_TIME_LEVEL in props:
            self._reroute_delay(msg)
            props = msg.properties
        topic, queue_id, body, born_host = msg.topic, msg.queue_id, msg.body, msg.born_host
        ps = msg.properties_string
        props_b = ps.encode() if ps is not None else _encode_properties(props) if props else b""
        topic_b = self._topic_entries.get(topic) or self._topic_bytes(topic)
        store_host = msg.store_host or self._store_host
        key = (len(body), len(topic_b), len(props_b), len(born_host), len(store_host))
        rec = self._shapes.get(key)
        if rec is None:
            rec, refused = self._new_shape(key)
            if refused is not None:
                return refused
            assert rec is not None  # _new_shape gives a struct or a refusal
        if not 0 <= queue_id <= _MAX_INT:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"queue id {queue_id} out of range")
        sys_flag = msg.sys_flag
        if sys_flag & _V6_BITS or key[3] != 8 or key[4] != 8:
            sys_flag = _host_flags(sys_flag, key[3], key[4])
        size = rec.size
        crc = crc32(body) & _CRC_MASK
        qkey = (topic, queue_id)
        counted = not sys_flag & TRANSACTION_PREPARED_TYPE  # prepared and rollback records take no queue slot
        with self.put_lock:
            mf = self._current
            if mf is None or mf.wrote_position + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
                mf = self._writable_file(size)
            pos = mf.wrote_position
            store_ts = time_ns() // 1_000_000
            if store_ts < self._last_store_timestamp:
                store_ts = self._last_store_timestamp  # keep store time monotonic in log order
            self._last_store_timestamp = store_ts
            queue_offset = self.topic_queue_table.get(qkey, 0) if counted else 0
            phys = mf.file_from_offset + pos
            rec.pack_into(mf.mm, pos, size, MESSAGE_MAGIC_CODE, crc, queue_id, msg.flag, queue_offset, phys,
                          sys_flag, msg.born_timestamp, born_host, store_ts, store_host, msg.reconsume_times,
                          msg.prepared_transaction_offset, key[0], body, key[1], topic_b, key[2], props_b)
            mf.wrote_position = pos + size
            mf.store_timestamp = store_ts
            if counted:
                self.topic_queue_table[qkey] = queue_offset + 1
        self.on_append()
        return PutMessageResult(_PUT_OK, AppendMessageResult(_APPEND_OK, phys, size, store_host, queue_offset,
                                                             store_ts))

    def put_messages(self, msgs: list[Message] | MessageExtBatch) -> PutMessageResult:
        """Append a batch atomically: one file, consecutive queue offsets (all messages share topic and queue).

        The broker hands over a MessageExtBatch (shared fields once, properties already encoded); a list of
        Messages may differ in everything but topic and queue."""
        sys_flags: Iterable[int]
        born_tss: Iterable[int]
        born_hosts: Iterable[bytes]
        reconsumes: Iterable[int]
        prepareds: Iterable[int]
        if isinstance(msgs, MessageExtBatch):
            b = msgs
            topic, queue_id, store_host = b.topic, b.queue_id, b.store_host
            flags, bodies, props = b.flags, b.bodies, b.properties
            sys_flags, born_tss, born_hosts = repeat(b.sys_flag), repeat(b.born_timestamp), repeat(b.born_host)
            reconsumes, prepareds = repeat(b.reconsume_times), repeat(0)
            if not len(flags) == len(bodies) == len(props):
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="batch lists of unequal length")
            # Records of one shape (the same body and properties lengths, as a producer's batch mostly is), no
            # delay level among them: the checks below are made once for the shape, not once per record
            # (44 -> 32 us a batch of 32). (A DELAY found across two properties only costs the general way.)
            one_shape = (len(set(map(len, bodies))) == 1 and len(set(map(len, props))) == 1
                         and b"DELAY\x01" not in b"".join(props))
        elif msgs:
            first = msgs[0]
            topic, queue_id, store_host = first.topic, first.queue_id, first.store_host
            if any(m.topic != topic or m.queue_id != queue_id for m in msgs):
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                        remark="all messages of a batch must share topic and queue")
            flags, bodies = [m.flag for m in msgs], [m.body for m in msgs]
            props = [m.properties_string.encode() if m.properties_string is not None
                     else _encode_properties(m.properties) if m.properties else b"" for m in msgs]
            sys_flags, born_tss = [m.sys_flag for m in msgs], [m.born_timestamp for m in msgs]
            born_hosts, reconsumes = [m.born_host for m in msgs], [m.reconsume_times for m in msgs]
            prepareds = [m.prepared_transaction_offset for m in msgs]
            one_shape = False
        else:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
        topic_b = self._topic_entries.get(topic) or self._topic_bytes(topic)
        tlen = len(topic_b)
        store_host = store_host or self._store_host
        slen = len(store_host)
        if not 0 <= queue_id <= _MAX_INT:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"queue id {queue_id} out of range")
        shapes = self._shapes
        recs: Iterable[struct.Struct]
        written_flags: Iterable[int]
        total = 0
        if one_shape:
            key = (len(bodies[0]), tlen, len(props[0]), len(b.born_host), slen)
            rec = shapes.get(key)
            if rec is None:
                rec, refused = self._new_shape(key)
                if refused is not None:
                    return refused
                assert rec is not None  # _new_shape gives a struct or a refusal
            sys_flag = b.sys_flag
            if sys_flag & _V6_BITS or key[3] != 8 or slen != 8:
                sys_flag = _host_flags(sys_flag, key[3], slen)
            recs, written_flags, total = repeat(rec), repeat(sys_flag), rec.size * len(bodies)
        else:
            rec_list: list[struct.Struct] = []
            flag_list: list[int] = []
            recs, written_flags = rec_list, flag_list
            # strict=False: a MessageExtBatch's shared fields are endless repeats; the lists are of equal length.
            for body, props_b, host, sys_flag in zip(bodies, props, born_hosts, sys_flags, strict=False):
                if b"DELAY\x01" in props_b and raw_property(props_b, b"DELAY\x01"):
                    return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                            remark="a batch cannot carry a delay level")
                key = (len(body), tlen, len(props_b), len(host), slen)
                rec = shapes.get(key)
                if rec is None:
                    rec, refused = self._new_shape(key)
                    if refused is not None:
                        return refused
                    assert rec is not None  # _new_shape gives a struct or a refusal
                if sys_flag & _V6_BITS or key[3] != 8 or slen != 8:
                    sys_flag = _host_flags(sys_flag, key[3], slen)
                rec_list.append(rec)
                flag_list.append(sys_flag)
                total += rec.size
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    remark=f"batch of {total} bytes does not fit a commit log file")
        qkey = (topic, queue_id)
        offsets: list[int] = []
        append = offsets.append
        with self.put_lock:
            mf = self._writable_file(total)
            pos = mf.wrote_position
            store_ts = max(time_ns() // 1_000_000, self._last_store_timestamp)
            self._last_store_timestamp = store_ts
            first_queue_offset = queue_offset = self.topic_queue_table.get(qkey, 0)
            base = mf.file_from_offset
            mm = mf.mm
            for rec, sys_flag, flag, body, props_b, born_ts, host, reconsume, prepared in zip(
                    recs, written_flags, flags, bodies, props, born_tss, born_hosts, reconsumes, prepareds,
                    strict=False):
                phys = base + pos
                append(phys)
                size = rec.size
                rec.pack_into(mm, pos, size, MESSAGE_MAGIC_CODE, crc32(body) & _CRC_MASK, queue_id, flag,
                              queue_offset, phys, sys_flag, born_ts, host, store_ts, store_host,
                              reconsume, prepared, len(body), body, tlen, topic_b, len(props_b), props_b)
                pos += size
                queue_offset += 1
            mf.wrote_position = pos
            mf.store_timestamp = store_ts
            self.topic_queue_table[qkey] = queue_offset
        self.on_append()
        return PutMessageResult(_PUT_OK, AppendMessageResult(
            _APPEND_OK, offsets[0], total, store_host, first_queue_offset, store_ts,
            msg_num=len(offsets), record_offsets=offsets))

    def _roll(self, mf: MappedFile) -> MappedFile:
        """END_OF_FILE: fill the rest of the file with the 8-byte blank record and start the next file."""
        pos = mf.wrote_position
        _BLANK.pack_into(mf.mm, pos, self.file_size - pos, BLANK_MAGIC_CODE)
        mf.wrote_position = self.file_size
        return self.mapped_file_queue.get_last_mapped_file()

    # -- read -------------------------------------------------------------------------------------
    def get_min_offset(self) -> int:
        return self.mapped_file_queue.get_min_offset()

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    def get_message(self, offset: int, size: int) -> bytes | None:
        """The raw record at `offset` (a copy sliced from the mapped file), or None when it is gone."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if pos + size > mf.wrote_position:
            return None
        try:
            return mf.mm[pos:pos + size]
        except ValueError:  # the file was deleted (mmap closed) under us
            return None

    def get_messages(self, offsets: tuple[int, ...], sizes: tuple[int, ...], total: int) -> list[bytes] | None:
        """The raw records at ``offsets`` (ascending, ``total`` bytes in all), one slice if they are adjacent;
        None unless all are written and in one file."""
        first = offsets[0]
        mf = self.mapped_file_queue.find_mapped_file_by_offset(first)
        if mf is None:
            return None
        base = mf.file_from_offset
        end = offsets[-1] + sizes[-1] - base
        if end > mf.wrote_position:
            return None
        try:
            mm = mf.mm
            if end - (first - base) == total:
                return [mm[first - base:end]]
            return [mm[p - base:p - base + s] for p, s in zip(offsets, sizes, strict=True)]
        except ValueError:  # the file was deleted (mmap closed) under us
            return None

    def read_size_at(self, offset: int) -> int:
        """TOTALSIZE of the record at `offset`, or -1."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        if pos + 8 > mf.wrote_position:
            return -1
        try:
            size, magic = _BLANK.unpack_from(mf.mm, pos)
        except ValueError:
            return -1
        return size if magic == MESSAGE_MAGIC_CODE else -1

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at `offset` (its position moves with an IPv6 born host)."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        try:
            sys_flag = struct.unpack_from(">i", mf.mm, pos + SYSFLAG_POS)[0]
            ts_pos = pos + (68 if sys_flag & BORNHOST_V6_FLAG else 56)
            return struct.unpack_from(">q", mf.mm, ts_pos)[0]
        except (ValueError, struct.error):
            return -1

    # -- lifecycle --------------------------------------------------------------------------------
    def load(self) -> None:
        self.mapped_file_queue.load()
        self._current = None

    def flush(self, least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()
