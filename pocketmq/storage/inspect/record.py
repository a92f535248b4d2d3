"""Commit-log records, read without the store: walking a file, and a record taken apart field by field.

Whether a record is valid is decided by recovery's own check (storage.recovery.check_record), so
where inspect says "the log ends here" is where a restart would truncate it.
"""

from __future__ import annotations

import struct

from pocketmq.common.codec import CorruptRecordError, body_crc, decode
from pocketmq.common.compression import InflateError, inflate
from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_TYPE_NAMES,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MULTI_TAGS_FLAG,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_TYPE_MASK,
    ZLIB_TYPE,
)
from pocketmq.common.message import MessageExt, unpack_host
from pocketmq.common.record_layout import (
    IPV4_HOST_LENGTH,
    IPV6_HOST_LENGTH,
    LAYOUTS,
    SIZE_MAGIC,
    SYSFLAG_POS,
    TOPIC_LENGTH_SIZES,
    field_struct,
    header_struct,
    host_lengths,
    record_length,
    topic_length_at,
)
from pocketmq.common.validators import stored_topic_error

from ..recovery import check_record, topic_length_error
from .files import fmt_ms, preview
from .pop import pop_record

_SIZE_MAGIC = SIZE_MAGIC
_INT = field_struct("TOTALSIZE")  # (and SYSFLAG)
_MIN_LENGTH = record_length(0, 0, 0, 0)

_TRANSACTION_TYPES = {0x4: "TRANSACTION_PREPARED_TYPE", 0x8: "TRANSACTION_COMMIT_TYPE",
                      0xC: "TRANSACTION_ROLLBACK_TYPE"}
_FLAG_BITS = ((COMPRESSED_FLAG, "COMPRESSED_FLAG"), (MULTI_TAGS_FLAG, "MULTI_TAGS_FLAG"),
              (BORNHOST_V6_FLAG, "BORNHOST_V6_FLAG"), (STOREHOSTADDRESS_V6_FLAG, "STOREHOSTADDRESS_V6_FLAG"),
              (0x40, "NEED_UNWRAP_FLAG"), (0x80, "INNER_BATCH_FLAG"))



def sys_flag_names(sys_flag: int) -> list[str]:
    names = [name for bit, name in _FLAG_BITS if sys_flag & bit]
    if sys_flag & TRANSACTION_TYPE_MASK:
        names.append(_TRANSACTION_TYPES[sys_flag & TRANSACTION_TYPE_MASK])
    compression = sys_flag & COMPRESSION_TYPE_MASK
    if compression:
        codec = COMPRESSION_TYPE_NAMES.get(compression)
        names.append(f"COMPRESSION_{codec}_TYPE" if codec else f"compression type {compression:#x} (unknown)")
    return names


# -- walking a file -------------------------------------------------------------------------------

def walk_file(mm, base: int, limit: int | None = None) -> tuple[list[tuple[int, int]], dict]:
    """The records of one commit-log file as (position in file, size), and how the file ends.

    The end is one of: {"kind": "blank", ...} the end-of-file filler; {"kind": "unwritten"} zeros
    (nothing was ever written there); {"kind": "full"} the last record reaches the file's end;
    {"kind": "invalid", "reason": ...} a record recovery would reject (a restart truncates here);
    {"kind": "empty"} a 0-byte file, which a crash while creating the file can leave;
    {"kind": "more"} the walk stopped after `limit` records, at "offset", without reading further.
    """
    records: list[tuple[int, int]] = []
    pos, size = 0, len(mm)
    if not size:
        return records, {"kind": "empty", "offset": base}
    while pos + 8 <= size:
        if limit is not None and len(records) >= limit:
            return records, {"kind": "more", "offset": base + pos}
        total, magic = _SIZE_MAGIC.unpack_from(mm, pos)
        if magic == BLANK_MAGIC_CODE:
            return records, {"kind": "blank", "offset": base + pos, "size": total, "magic": f"0x{magic:08X}"}
        if total == 0 and magic == 0:
            return records, {"kind": "unwritten", "offset": base + pos}
        verdict, _ts = check_record(mm, pos, base, size, True)
        if verdict <= 0:
            return records, {"kind": "invalid", "offset": base + pos, "reason": diagnose(mm, pos, base)}
        records.append((pos, verdict))
        pos += verdict
    return records, {"kind": "full", "offset": base + pos}


def diagnose(mm, pos: int, base: int) -> str:
    """Why recovery's check rejects the record at `pos`, in words."""
    total, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    if magic not in LAYOUTS:
        return (f"MAGICCODE {magic:#010x} is neither a message (0xDAA320A7, or 0xDAA320AB: version 2) nor the "
                "blank record (0xCBD43194)")
    if total < _MIN_LENGTH or pos + total > len(mm):
        return f"TOTALSIZE {total} does not fit between byte {pos} and the end of the file"
    try:  # (surrogateescape: the topic's bytes come back exactly, UTF-8 or not)
        msg = decode(mm, pos, text_errors="surrogateescape")
    except (CorruptRecordError, struct.error, UnicodeDecodeError, IndexError) as e:
        return str(e)
    if msg.commit_log_offset != base + pos:
        return f"PHYSICALOFFSET {msg.commit_log_offset} is not the record's position {base + pos}"
    # In recovery's order: TOPICLENGTH's sign, then the body's CRC.
    reason = topic_length_error(len(msg.topic.encode(errors="surrogateescape")), TOPIC_LENGTH_SIZES[magic])
    if reason is not None:
        return reason
    if body_crc(msg.body) != msg.body_crc:
        return f"body CRC mismatch at {pos}"
    return "the field lengths do not add up to TOTALSIZE"


def dispatch_note(mm, pos: int) -> str | None:
    """What dispatch does with the valid record at ``pos`` if it cannot give it a consume queue: a topic a put
    would refuse, or not UTF-8 (validators.stored_topic_error; an Apache RocketMQ store can hold a POP retry topic
    of its version 2, ``%RETRY%group+topic``). Recovery keeps such a record; dispatch skips it with an error in
    the log (dispatch_request.UnusableTopicError). None for any other record."""
    magic = _SIZE_MAGIC.unpack_from(mm, pos)[1]
    header = header_struct(*host_lengths(_INT.unpack_from(mm, pos + SYSFLAG_POS)[0]))
    tpos = pos + header.size + header.unpack_from(mm, pos)[-1]  # (BODYLENGTH is the header's last field)
    topic_at = tpos + TOPIC_LENGTH_SIZES[magic]
    reason = stored_topic_error(bytes(mm[topic_at:topic_at + topic_length_at(mm, tpos, magic)]))
    if reason is None:
        return None
    return f"dispatch skips it: {reason} (it stays in the commit log, in no consume queue)"


# -- one record as a summary ----------------------------------------------------------------------

def body_text(body: bytes, sys_flag: int, width: int = 60) -> str:
    """A preview of the body, decompressed first when SYSFLAG says it is compressed with zlib."""
    compression = sys_flag & COMPRESSION_TYPE_MASK
    if sys_flag & COMPRESSED_FLAG and compression not in (0, ZLIB_TYPE):
        # No LZ4 or ZSTD codec is a dependency of pocketmq; trying zlib on them would only report an error.
        codec = COMPRESSION_TYPE_NAMES.get(compression, f"compression type {compression:#x}")
        return f"<{codec}, {len(body)} bytes: not shown>"
    if sys_flag & COMPRESSED_FLAG:
        try:
            raw = inflate(body)
        except InflateError as e:
            return f"<{len(body)} bytes, COMPRESSED_FLAG set but it does not inflate: {e}>"
        return f"<zlib, {len(body)} -> {len(raw)} bytes> " + preview(raw, width)
    return preview(body, width)


def summary(msg: MessageExt, file_name: str, pos: int, not_utf8: bool = False,
            magic: int = MESSAGE_MAGIC_CODE) -> dict:
    """The fields of a record that the listing shows, as a JSON-ready dict. `offset` is where the
    record is; `physical_offset` is what its PHYSICALOFFSET field says (recovery checks they agree).
    `not_utf8`: `msg` was decoded with its topic or properties' bad bytes replaced. `magic`: its MAGICCODE.
    `pop`: a POP checkpoint's or ack's body decoded (inspect.pop), whose body is then shown whole."""
    pop = pop_record(msg)
    return {
        "offset": int(file_name) + pos,
        "file": file_name,
        "position": pos,
        "total_size": msg.store_size,
        "magic": f"0x{magic:08X}",
        "message_version": 2 if magic == MESSAGE_MAGIC_CODE_V2 else 1,
        "body_crc": msg.body_crc,
        "queue_id": msg.queue_id,
        "flag": msg.flag,
        "queue_offset": msg.queue_offset,
        "physical_offset": msg.commit_log_offset,
        "sys_flag": msg.sys_flag,
        "sys_flag_names": sys_flag_names(msg.sys_flag),
        "born_timestamp": msg.born_timestamp,
        "born_host": msg.born_host,
        "store_timestamp": msg.store_timestamp,
        "store_time": fmt_ms(msg.store_timestamp),
        "store_host": msg.store_host,
        "reconsume_times": msg.reconsume_times,
        "prepared_transaction_offset": msg.prepared_transaction_offset,
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.keys,
        "uniq_key": msg.uniq_key,
        "properties": msg.properties,
        "body_length": len(msg.body),
        "body_preview": body_text(msg.body, msg.sys_flag, len(msg.body) if pop else 60),
        "msg_id": msg.offset_msg_id,
        "not_utf8": not_utf8,
        "pop": pop,
    }


# -- one record, field by field -------------------------------------------------------------------

def _field(fields: list, rel: int, raw: bytes, name: str, value, text: str) -> None:
    fields.append({"pos": rel, "len": len(raw), "field": name, "value": value, "text": text,
                   "hex": raw.hex()})


_MAGIC_NAMES = {
    MESSAGE_MAGIC_CODE: f"0x{MESSAGE_MAGIC_CODE:08X} = MESSAGE_MAGIC_CODE",
    MESSAGE_MAGIC_CODE_V2: f"0x{MESSAGE_MAGIC_CODE_V2:08X} = MESSAGE_MAGIC_CODE_V2 (message version 2: 2-byte "
                           "TOPICLENGTH)",
}
# How each number field is explained (the others show their value).
_EXPLAIN = {
    "TOTALSIZE": lambda v: f"{v} bytes, this field included",
    "MAGICCODE": lambda v: _MAGIC_NAMES.get(v, f"0x{v:08X} (unexpected)"),
    "FLAG": lambda v: f"{v} (the producer's Message.flag)",
    "QUEUEOFFSET": lambda v: f"{v} (entry {v} of the consume queue)",
    "PHYSICALOFFSET": lambda v: f"{v} (where this record starts in the commit log)",
    "SYSFLAG": lambda v: f"{v:#x}" + (f" = {' | '.join(sys_flag_names(v))}" if v else " (no flags)"),
    "BORNTIMESTAMP": lambda v: f"{v} = {fmt_ms(v)}",
    "STORETIMESTAMP": lambda v: f"{v} = {fmt_ms(v)}",
}


def annotate(mm, pos: int) -> list[dict]:
    """The record at `pos` field by field, as record_layout lists them: position within the record, length,
    RocketMQ's field name, value and bytes, in the layout of the record's MAGICCODE (a version 2 record's
    TOPICLENGTH has 2 bytes). Properties are split into their NAME 0x01 VALUE 0x02 pairs, listed
    after the PROPERTIES field with names indented by two spaces."""
    rec = bytes(mm[pos:pos + _INT.unpack_from(mm, pos)[0]])
    sys_flag = _INT.unpack_from(rec, SYSFLAG_POS)[0]
    layout = LAYOUTS.get(_SIZE_MAGIC.unpack_from(rec)[1], LAYOUTS[MESSAGE_MAGIC_CODE])
    out: list[dict] = []
    values: dict[str, int] = {}
    body = b""
    at = 0
    for f in layout:
        if f.v6_flag:
            n = IPV6_HOST_LENGTH if sys_flag & f.v6_flag else IPV4_HOST_LENGTH
        else:
            n = values[f.length_from] if f.is_bytes else f.size
        raw = rec[at:at + n]
        if len(raw) < n or n < 0:
            raise CorruptRecordError(f"record ends inside a field at byte {at}")
        if f.v6_flag:
            addr = unpack_host(raw)
            _field(out, at, raw, f.name, addr, f"{addr} ({'IPv6: 16 + 4' if n == IPV6_HOST_LENGTH else 'IPv4: 4 + 4'}"
                   " bytes)")
        elif f.name == "BODY":
            body = raw
            _field(out, at, raw, f.name, None, body_text(raw, sys_flag))
        elif f.name == "TOPIC":
            _field(out, at, raw, f.name, raw.decode(errors="replace"), raw.decode(errors="replace"))
        elif f.name == "PROPERTIES":
            pairs = [p for p in raw.split(PROPERTY_SEPARATOR.encode()) if p]
            _field(out, at, raw, f.name, None, f"{len(pairs)} pairs, each NAME 0x01 VALUE 0x02" if pairs else "none")
            _property_pairs(out, raw, at)
        else:
            value = values[f.name] = struct.unpack(">" + f.code, raw)[0]
            explain = _EXPLAIN.get(f.name)
            _field(out, at, raw, f.name, value, explain(value) if explain else str(value))
        at += n
    crc = next(field for field in out if field["field"] == "BODYCRC")
    crc_ok = body_crc(body) == crc["value"]
    crc["text"] = f"{crc['value']} (CRC32 of BODY & 0x7FFFFFFF: {'matches' if crc_ok else 'MISMATCH'})"
    if at != len(rec):
        raise CorruptRecordError(f"fields end at byte {at}, TOTALSIZE says {len(rec)}")
    return out


def _property_pairs(out: list[dict], props: bytes, start: int) -> None:
    sep = PROPERTY_SEPARATOR.encode()
    at = 0
    while at < len(props):
        end = props.find(sep, at)
        end = len(props) if end < 0 else end + 1
        pair = props[at:end]
        name, _, value = pair.rstrip(sep).partition(NAME_VALUE_SEPARATOR.encode())
        text = value.decode(errors="replace")
        _field(out, start + at, pair, "  " + name.decode(errors="replace"), text, text)
        at = end
