"""The commit-log record codec (MessageDecoder): records to MessageExt and back, usable from any package.

The layout itself (fields, positions, the structs that read and write them) is record_layout's.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Iterator
from mmap import mmap

from .bounded_cache import BoundedCache
from .compression import DEFAULT_INFLATE_LIMIT, InflateError, inflate_body
from .constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    MESSAGE_MAGIC_CODE,
    PROPERTY_SEPARATOR,
    RETRY_OR_DLQ_TOPIC_MAX_LENGTH,
    STOREHOSTADDRESS_V6_FLAG,
)
from .message import MessageExt, unpack_host
from .record_layout import (
    BODY_POS_V4,
    HEADER_V4,
    HOST_SHAPES,
    IPV6_HOST_LENGTH,
    SIZE_MAGIC,
    TOPIC_LENGTH_SIZES,
    field_struct,
    message_magic,
    record_struct,
    topic_length_at,
)
from .record_layout import SYSFLAG_POS as SYSFLAG_POS  # (re-exported: the broker's filter reads them here)
from .record_layout import header_struct as header_struct
from .record_layout import host_lengths as host_lengths
from .record_layout import record_length as record_length
from .speedups import speedups

log = logging.getLogger(__name__)

# What the decoders read records from.
RecordBuffer = bytes | bytearray | memoryview | mmap

_SHORT = field_struct("PROPERTIESLENGTH")
_INT = field_struct("SYSFLAG")  # (and TOTALSIZE)
_TOPIC_LEN = field_struct("TOPICLENGTH").size  # 1 (2 in a MESSAGE_MAGIC_CODE_V2 record)
_PROPS_LEN = _SHORT.size  # 2
_AFTER_BODY = _TOPIC_LEN + _PROPS_LEN  # the least a record holds after its body: the two lengths


def body_crc(body: bytes) -> int:
    """UtilAll.crc32: CRC32 masked to a non-negative Java int."""
    return zlib.crc32(body) & 0x7FFFFFFF


_HEX = "0123456789ABCDEF"
_MAX_PORT = 0xFFFF


def decode_message_id(msg_id: str) -> tuple[str, int]:
    """(store host "ip:port", physical offset) from an offsetMsgId; 32 chars is IPv4, else IPv6."""
    raw = bytes.fromhex(msg_id)
    host_len = 8 if len(msg_id) == 32 else 20
    if len(raw) != host_len + 8:
        raise ValueError(f"not an offsetMsgId: {msg_id!r}")
    return unpack_host(raw[:host_len]), int.from_bytes(raw[host_len:], "big", signed=True)


def commit_log_offset_of(msg_id: str | None) -> int | None:
    """The commit-log offset an offsetMsgId names, read as leniently as MessageDecoder.decodeMessageId reads one,
    for RESUME_CHECK_HALF_MESSAGE's answers (``decode_message_id`` refuses what is not exactly an id). The broker
    it names is not looked at; 32 characters hold an IPv4 address, any other length an IPv6 one; the text after
    the offset is ignored; a character that is no hex digit reads as UtilAll.string2bytes reads it. None where
    RocketMQ's reading throws: no id, too short, or a port out of range."""
    if not msg_id:
        return None
    raw = _java_hex_bytes(msg_id)
    ip_len = 4 if len(msg_id) == 32 else 16
    if len(raw) < ip_len + 12:
        return None
    port = int.from_bytes(raw[ip_len:ip_len + 4], "big", signed=True)
    if not 0 <= port <= _MAX_PORT:
        return None
    return int.from_bytes(raw[ip_len + 4:ip_len + 12], "big", signed=True)


def _java_hex_bytes(text: str) -> bytes:
    """UtilAll.string2bytes: two characters a byte (an odd last one dropped), upper-cased first; a character that
    is no hex digit counts as -1, which its shift and or spread into the byte."""
    upper = text.upper()
    digits = [_HEX.find(ch) for ch in upper[:len(upper) // 2 * 2]]
    return bytes(((hi << 4) | lo) & 0xFF for hi, lo in zip(digits[::2], digits[1::2], strict=True))


def encode(
    *,
    topic: str,
    body: bytes,
    properties: str = "",
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: bytes,
    store_timestamp: int = 0,
    store_host: bytes,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
) -> bytes:
    """One complete record. The store writes records in place (commit_log.py); this is for everyone else. A
    topic of more than 127 characters makes a version 2 record, as RocketMQ 5's store writes it."""
    if len(born_host) == IPV6_HOST_LENGTH:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store_host) == IPV6_HOST_LENGTH:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    if (len(born_host), len(store_host)) not in HOST_SHAPES:
        raise ValueError("a host is 8 bytes (IPv4 address and port) or 20 (IPv6)")
    topic_b = topic.encode()
    props_b = properties.encode()
    magic = message_magic(topic)
    if len(topic_b) > RETRY_OR_DLQ_TOPIC_MAX_LENGTH:
        raise ValueError(f"topic longer than {RETRY_OR_DLQ_TOPIC_MAX_LENGTH} bytes")
    if len(props_b) > 32767:
        raise ValueError("properties longer than 32767 bytes")
    rec = record_struct(len(body), len(topic_b), len(props_b), len(born_host), len(store_host), magic)
    return rec.pack(
        rec.size, magic, body_crc(body), queue_id, flag, queue_offset, physical_offset, sys_flag,
        born_timestamp, born_host, store_timestamp, store_host, reconsume_times, prepared_transaction_offset,
        len(body), body, len(topic_b), topic_b, len(props_b), props_b,
    )


class CorruptRecordError(ValueError):
    pass


class BodyInflateError(CorruptRecordError):
    """A whole record whose COMPRESSED_FLAG body does not inflate (bad zlib data, or past the inflate limit)."""


def decode(
    buf: RecordBuffer, offset: int = 0, *, check_crc: bool = False, decompress: bool = False,
    inflate_limit: int = DEFAULT_INFLATE_LIMIT, text_errors: str = "strict",
) -> MessageExt:
    """Decode the record at `offset` of `buf` (bytes, bytearray, memoryview or mmap). With ``decompress``, a
    compressed body is inflated to at most ``inflate_limit`` bytes (BodyInflateError beyond). ``text_errors``:
    how topic and properties bytes that are not UTF-8 decode ("replace" reads them as Java's String does)."""
    if len(buf) - offset < SIZE_MAGIC.size:
        raise CorruptRecordError(f"truncated record at {offset}")
    sys_flag = _INT.unpack_from(buf, offset + SYSFLAG_POS)[0] if len(buf) - offset >= SYSFLAG_POS + _INT.size else 0
    head = header_struct(*host_lengths(sys_flag))
    if len(buf) - offset < head.size:
        raise CorruptRecordError(f"truncated record at {offset}")
    (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host, store_ts,
     store_host, reconsume, prepared, body_len) = head.unpack_from(buf, offset)
    topic_len_size = TOPIC_LENGTH_SIZES.get(magic)
    if topic_len_size is None:
        raise CorruptRecordError(f"bad magic code {magic:#010x} at {offset}")
    end = offset + size
    if size < head.size or end > len(buf) or body_len < 0:
        raise CorruptRecordError(f"bad record size {size} at {offset}")
    # Every length must stay inside the record: a damaged one (or bytes that only look like a
    # record, e.g. at an offset a client made up) must fail here, not with an IndexError.
    pos = offset + head.size
    if pos + body_len + topic_len_size + _PROPS_LEN > end:
        raise CorruptRecordError(f"body length {body_len} runs past the record at {offset}")
    body = bytes(buf[pos:pos + body_len])
    pos += body_len
    topic_len = topic_length_at(buf, pos, magic)
    pos += topic_len_size
    if pos + topic_len + _PROPS_LEN > end:
        raise CorruptRecordError(f"topic length {topic_len} runs past the record at {offset}")
    raw_topic = bytes(buf[pos:pos + topic_len])
    pos += topic_len
    props_len = _SHORT.unpack_from(buf, pos)[0]
    pos += _PROPS_LEN
    if props_len < 0 or pos + props_len != end:
        raise CorruptRecordError(f"record at {offset} does not add up to its TOTALSIZE {size}")
    try:
        topic = raw_topic.decode(errors=text_errors)
        props = bytes(buf[pos:end]).decode(errors=text_errors)
    except UnicodeDecodeError as e:
        raise CorruptRecordError(f"record at {offset} has a topic or properties that are not UTF-8") from e
    if check_crc and body_crc(body) != crc:
        raise CorruptRecordError(f"body CRC mismatch at {offset}")
    if decompress and sys_flag & COMPRESSED_FLAG:
        try:
            body = inflate_body(body, sys_flag, inflate_limit)
        except InflateError as e:
            raise BodyInflateError(f"compressed body at {offset} does not inflate: {e}") from None
    return MessageExt(
        store_size=size, body_crc=crc, queue_id=queue_id, flag=flag, queue_offset=queue_offset,
        commit_log_offset=phys, sys_flag=sys_flag, born_timestamp=born_ts, born_host=unpack_host(born_host),
        store_timestamp=store_ts, store_host=unpack_host(store_host), reconsume_times=reconsume,
        prepared_transaction_offset=prepared, body=body, topic=topic,
        properties_string=props,
    )


def iter_records(buf: RecordBuffer, *, decompress: bool = False) -> Iterator[MessageExt]:
    """MessageDecoder.decodes: the records of a concatenation, e.g. a pull response body."""
    for run in _runs(buf, decompress):
        yield from run


def _runs(buf: RecordBuffer, decompress: bool, extra: str = "") -> Iterator[list[MessageExt]]:
    # Runs of records rather than single ones: decode_all takes a pull answer's 32 records as one list
    # (a generator step per record is a tenth of a record's decoding: bench/README.md).
    offset = 0
    end = len(buf)
    fast = type(buf) is bytes
    least = SIZE_MAGIC.size
    while offset + least <= end:
        if fast:
            common: list[MessageExt] = []
            offset = _decode_common(buf, offset, decompress, common, extra)  # type: ignore[arg-type]  # fast: bytes
            yield common
            if offset + least > end:
                break
        size, magic = SIZE_MAGIC.unpack_from(buf, offset)
        if magic == BLANK_MAGIC_CODE:
            break
        try:
            msg = decode(buf, offset, decompress=decompress)
        except BodyInflateError as e:
            # The record is whole; only its body does not inflate. It is handed over as stored and marked,
            # rather than failing the answer (RocketMQ's decodes stops at it and drops the records after it,
            # which the consumer's next offset then skips unseen).
            log.warning("%s; the message is delivered with its stored body", e)
            msg = decode(buf, offset)
            msg.body_inflate_error = str(e)
        if extra:
            msg.put_encoded_properties(extra)
        yield [msg]
        offset += size


_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
_decode_records = speedups.decode_records if speedups is not None else None
# record_struct (IPv4 hosts) by (body, topic, properties) length, for the decode runs.
_RUN_STRUCTS: BoundedCache[tuple[int, int, int], struct.Struct] = BoundedCache(
    lambda shape: record_struct(*shape), 1024)


def _decode_common(buf: bytes, offset: int, decompress: bool, out: list[MessageExt], extra: str = "") -> int:
    """_decode_common_py, in C where ``pocketmq.common._speedups`` is built (a third of a pushed message's
    client instructions were this loop: bench/README.md); tests/common/test_common_speedups.py holds the two
    together."""
    if _decode_records is None:
        return _decode_common_py(buf, offset, decompress, out, extra)
    slow_bits = _V6_BITS | (COMPRESSED_FLAG if decompress else 0)
    stop: int = _decode_records(buf, offset, slow_bits, out, MessageExt, unpack_host, extra,
                                PROPERTY_SEPARATOR + extra if extra else "")
    return stop


def _decode_common_py(buf: bytes, offset: int, decompress: bool, out: list[MessageExt], extra: str = "") -> int:
    """decode() for the common record (IPv4 hosts, no body to inflate, UTF-8 text), record after record from
    ``offset``, with the same checks in one loop: a pull answer holds up to 32, and a call per record was a
    fifth of the client's cost per message. Returns where it stopped: the end, or a record it leaves to
    decode(), which handles the rest and says what is wrong with a damaged one.

    Records of one shape (body, topic and properties lengths: a producer's messages mostly are) are
    unpacked as a run, all fields of all of them by one ``iter_unpack`` (a third less a record). Each
    record of a run is checked against the shape at its own positions, so a run stops at the first one
    that differs, and the loop goes on with it one record at a time.

    ``extra`` (encoded pairs) is appended to every record's properties, as put_encoded_properties would."""
    append = out.append
    # A stored string may lack its last separator (put_encoded_properties' case).
    sep = PROPERTY_SEPARATOR
    sep_extra = sep + extra if extra else ""
    unpack = HEADER_V4.unpack_from
    short = _SHORT.unpack_from
    size_at = _INT.unpack_from
    slow_bits = _V6_BITS | (COMPRESSED_FLAG if decompress else 0)
    runs = _RUN_STRUCTS
    # The layout's positions and sizes, as locals: the body starts at 88, and the topic length (1 byte) and
    # the properties length (2) follow it.
    head, after_body, topic_len_size, props_len_size = BODY_POS_V4, _AFTER_BODY, _TOPIC_LEN, _PROPS_LEN
    end = len(buf)
    # The records of one answer share their topic and store host, and mostly their born host: each is
    # compared with the previous record's bytes and its string reused.
    raw_topic, topic, born_raw, born, store_raw, store = b"", "", b"", "", b"", ""
    while end - offset >= head:
        (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host, store_ts,
         store_host, reconsume, prepared, body_len) = unpack(buf, offset)
        record_end = offset + size
        body_end = offset + head + body_len
        if (magic != MESSAGE_MAGIC_CODE or sys_flag & slow_bits or size < head or record_end > end
                or body_len < 0 or body_end + after_body > record_end):
            break
        topic_len = buf[body_end]
        props_pos = body_end + topic_len_size + topic_len
        if props_pos + props_len_size > record_end:
            break
        props_len = short(buf, props_pos)[0]
        if props_pos + props_len_size + props_len != record_end:
            break
        if record_end + size <= end and size_at(buf, record_end)[0] == size:
            # At least two records of this size: a run of this shape from here.
            rs = runs[(body_len, topic_len, props_len)]
            run_end = offset + (end - offset) // size * size
            try:
                for (size_, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host, store_ts,
                     store_host, reconsume, prepared, body_len_, body, topic_len_, topic_b, props_len_,
                     props) in rs.iter_unpack(buf[offset:run_end]):
                    if (size_ != size or magic != MESSAGE_MAGIC_CODE or body_len_ != body_len
                            or topic_len_ != topic_len or props_len_ != props_len or sys_flag & slow_bits):
                        break
                    if topic_b != raw_topic:
                        topic, raw_topic = topic_b.decode(), topic_b
                    if born_host != born_raw:
                        born_raw, born = born_host, unpack_host(born_host)
                    if store_host != store_raw:
                        store_raw, store = store_host, unpack_host(store_host)
                    p = props.decode()
                    append(MessageExt(
                        size, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts, store,
                        reconsume, prepared, body, topic, p + extra if not p or p[-1] == sep else p + sep_extra,
                    ))
                    offset += size
            except UnicodeDecodeError:
                return offset
            continue
        try:
            if topic_len != len(raw_topic) or not buf.startswith(raw_topic, body_end + topic_len_size):
                raw_topic = buf[body_end + topic_len_size:props_pos]
                topic = raw_topic.decode()
            props = buf[props_pos + props_len_size:record_end].decode()
        except UnicodeDecodeError:
            break
        if born_host != born_raw:
            born_raw, born = born_host, unpack_host(born_host)
        if store_host != store_raw:
            store_raw, store = store_host, unpack_host(store_host)
        append(MessageExt(
            size, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts, store, reconsume,
            prepared, buf[offset + head:body_end], topic,
            props + extra if not props or props[-1] == sep else props + sep_extra,
        ))
        offset = record_end
    return offset


def decode_all(buf: RecordBuffer, *, decompress: bool = False, extra_properties: str = "") -> list[MessageExt]:
    """Every record of ``buf``; ``extra_properties`` (pairs encoded by properties_to_string) is added to each
    one's properties, as put_encoded_properties would, in the decoding loop rather than a call a record (a pull
    marks every record with MIN_OFFSET / MAX_OFFSET)."""
    out: list[MessageExt] = []
    for run in _runs(buf, decompress, extra_properties):
        out += run
    return out
