"""The binary header of a native frame (RocketMQ's ``RocketMQSerializable``, serialize type 1).

::

    code i16 | language u8 | version i16 | opaque i32 | flag i32 | remarkLen i32 + remark UTF-8 |
    extLen i32 + extLen bytes of (keyLen i16 + key UTF-8, valLen i32 + value UTF-8)...

All big-endian. As in RocketMQ 4.9.7 (``readStr``), a length of 0 reads as null: an empty remark comes back as
None, and an ext entry with an empty key or value is left out (Java would map it to null, which a header reads as
missing). An ext block length of 0 or less reads no ext fields; entries are read until the block's end is
reached, the last one may run past it (no key or value longer than the block). A remark, key or value length that
is negative, or a read that runs past the header, is malformed (4.9.7 reads on into the frame's body, and then
fails reading the body); bytes after the last entry are ignored.
"""

from __future__ import annotations

import struct

from .codes import SerializeType
from .command import RemotingCommand
from .errors import MalformedFrame
from .remoting_serializable import check_int32, java_ext_fields, java_text
from .speedups import speedups

_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remarkLen
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
MIN_HEADER_LENGTH = _FIXED.size + 4  # 21: no remark, no ext fields


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """The binary header of ``cmd``. ValueError when a field does not fit its Java type (code and version are
    shorts, language a byte, a key at most 32767 UTF-8 bytes)."""
    code, version, language = int(cmd.code), int(cmd.version), int(cmd.language)
    if not -0x8000 <= code <= 0x7FFF:
        raise ValueError(f"code {code} does not fit the ROCKETMQ header's short")
    if not -0x8000 <= version <= 0x7FFF:
        raise ValueError(f"version {version} does not fit the ROCKETMQ header's short")
    if not 0 <= language <= 0xFF:
        raise ValueError(f"language {language} does not fit the ROCKETMQ header's byte")
    if cmd.remark is not None and not isinstance(cmd.remark, str):
        raise TypeError(f"remark must be str, not {type(cmd.remark).__name__}")
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    entries: list[bytes] = []
    if cmd.ext_fields:
        for k, v in java_ext_fields(cmd.ext_fields).items():
            key = k.encode("utf-8")
            if len(key) > 0x7FFF:
                raise ValueError(f"ext field name of {len(key)} bytes is longer than the ROCKETMQ header's 32767")
            value = v.encode("utf-8")
            entries += (_I16.pack(len(key)), key, _I32.pack(len(value)), value)
    ext = b"".join(entries)
    fixed = _FIXED.pack(
        code, language, version, check_int32("opaque", cmd.opaque), check_int32("flag", cmd.flag), len(remark)
    )
    return b"".join((fixed, remark, _I32.pack(len(ext)), ext))


def decode_rocketmq_header(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """The command a binary header describes (no body yet); MalformedFrame when it is not one."""
    n = len(data)
    if n < MIN_HEADER_LENGTH:
        where = _I32.unpack_from(data, 5)[0] if n >= 9 else None, _I32.unpack_from(data, 9)[0] if n >= 13 else None
        raise MalformedFrame(f"ROCKETMQ header of {n} bytes is shorter than the minimum {MIN_HEADER_LENGTH}", *where)
    code, language, version, opaque, flag, remark_len = _FIXED.unpack_from(data, 0)
    pos = _FIXED.size
    if not 0 <= remark_len <= n - pos - 4:
        raise MalformedFrame(f"remark length {remark_len} runs past the {n}-byte ROCKETMQ header", opaque, flag)
    remark = bytes(data[pos : pos + remark_len]).decode("utf-8", "replace") if remark_len else None
    pos += remark_len
    (ext_len,) = _I32.unpack_from(data, pos)
    pos += 4
    ext: dict[str, object] = {}
    if ext_len > n:
        raise MalformedFrame(f"ext fields length {ext_len} runs past the {n}-byte ROCKETMQ header", opaque, flag)
    # 4.9.7 reads entries while it has not reached the block's end: the last may run past it (not past the
    # header), though no key or value may be longer than the block; a length of 0 or less reads no ext fields
    end = pos + ext_len
    while pos < end:
        if n - pos < 2:
            raise MalformedFrame("ext fields end inside a key length", opaque, flag)
        (key_len,) = _I16.unpack_from(data, pos)
        pos += 2
        if not 0 <= key_len <= min(n - pos - 4, ext_len):
            raise MalformedFrame(f"ext key length {key_len} runs past the ext fields", opaque, flag)
        key = bytes(data[pos : pos + key_len]).decode("utf-8", "replace")
        pos += key_len
        (value_len,) = _I32.unpack_from(data, pos)
        pos += 4
        if not 0 <= value_len <= min(n - pos, ext_len):
            raise MalformedFrame(f"ext value length {value_len} of {key!r} runs past the ext fields", opaque, flag)
        if key and value_len:
            ext[key] = bytes(data[pos : pos + value_len]).decode("utf-8", "replace")
        pos += value_len
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, None, SerializeType.ROCKETMQ)


# The fast forms below are what native_codec uses; the two above are the readable reference they must agree with,
# errors included (a hypothesis test holds them together). The reference reads each length with a struct call and
# copies each key and value out of a memoryview before decoding it; these read lengths by indexing one bytes copy
# of the header and, when the ext block is ASCII (almost always), slice keys and values out of one decoded str.
# Whatever is unusual (a malformed length, a short header) goes to the reference, which says what is wrong.

# An ext entry's bytes (key length, key, value length, value) as written so far, per value type (True == 1 and
# hash alike: one map each). Requests repeat most entries (group, topic, queue id, flags): one lookup then. Each
# map is emptied when full and keeps no entry above 128 bytes: bounded memory, one-off values an insert at most.
_ENTRIES: dict[type, dict[tuple[str, object], bytes]] = {str: {}, int: {}, bool: {}}
_MAX_ENTRIES = 4096
_MAX_ENTRY_LENGTH = 128  # (longer ones, properties mostly, are one-off: kept, they would only take memory)


def decode_rocketmq_header_fast_py(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """``decode_rocketmq_header(data)``, faster."""
    n = len(data)
    if n < MIN_HEADER_LENGTH:
        return decode_rocketmq_header(data)
    code, language, version, opaque, flag, remark_len = _FIXED.unpack_from(data, 0)
    pos = _FIXED.size
    if not 0 <= remark_len <= n - pos - 4:
        return decode_rocketmq_header(data)
    b = bytes(data)
    remark = b[pos : pos + remark_len].decode("utf-8", "replace") if remark_len else None
    pos += remark_len
    (ext_len,) = _I32.unpack_from(b, pos)
    pos += 4
    if not 0 <= ext_len <= n - pos:
        return decode_rocketmq_header(data)
    ext = _ext_map(b[pos : pos + ext_len])
    if ext is None:
        return decode_rocketmq_header(data)
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, None, SerializeType.ROCKETMQ)


def _ext_map(block: bytes) -> dict[str, object] | None:
    """The ext fields of an ext block; None when the reference must read it (a malformed block, or an entry with
    an empty key or value, which it leaves out).

    No length is checked on the way: each entry's end is where the next starts, so the block is well formed when
    the last entry ends exactly at its end (an entry running past it ends beyond; a cut one raises struct.error),
    once key lengths are known not to be negative (read unsigned, a value length's sign bit makes it run past any
    block: every entry moves forward)."""
    ext: dict[str, object] = {}
    end = len(block)
    p = 0
    key_length, value_length = _U16.unpack_from, _U32.unpack_from
    try:
        if block.isascii():
            text = block.decode("ascii")
            while p < end:
                (key_len,) = key_length(block, p)
                if key_len > 0x7FFF:
                    return None
                q = p + 2 + key_len
                value_end = q + 4 + value_length(block, q)[0]
                ext[text[p + 2 : q]] = text[q + 4 : value_end]
                p = value_end
        else:
            while p < end:
                (key_len,) = key_length(block, p)
                if key_len > 0x7FFF:
                    return None
                q = p + 2 + key_len
                value_end = q + 4 + value_length(block, q)[0]
                ext[block[p + 2 : q].decode("utf-8", "replace")] = block[q + 4 : value_end].decode("utf-8", "replace")
                p = value_end
    except struct.error:
        return None
    if p != end or "" in ext or "" in ext.values():
        return None
    return ext


def encode_rocketmq_header_fast_py(cmd: RemotingCommand) -> bytes:
    """``encode_rocketmq_header(cmd)``, faster: field names' bytes kept, values that are str or int written
    without building Java's map first."""
    code, version, language, remark = int(cmd.code), int(cmd.version), int(cmd.language), cmd.remark
    if not (
        -0x8000 <= code <= 0x7FFF and -0x8000 <= version <= 0x7FFF and 0 <= language <= 0xFF
        and (remark is None or type(remark) is str)
    ):
        return encode_rocketmq_header(cmd)  # values out of range, a remark that is no str: the reference's error
    remark_bytes = remark.encode("utf-8") if remark else b""
    try:
        ext = _ext_block(cmd.ext_fields)
    except UnicodeEncodeError:
        return encode_rocketmq_header(cmd)  # (the reference turns every value into text before it encodes one)
    if ext is None:
        return encode_rocketmq_header(cmd)
    fixed = _FIXED.pack(
        code, language, version, check_int32("opaque", cmd.opaque), check_int32("flag", cmd.flag), len(remark_bytes)
    )
    return b"".join((fixed, remark_bytes, _I32.pack(len(ext)), ext))


def _ext_block(ext_fields: dict[str, object]) -> bytes | None:
    """The ext block of ``ext_fields``; None when the reference must write it (or say what is wrong)."""
    entries: list[bytes] = []
    append = entries.append
    for k, v in ext_fields.items():
        if type(k) is not str:
            return None
        cache = _ENTRIES.get(type(v))
        if cache is None:
            if v is None:
                continue
            return None  # floats, str and int subclasses, bad values: Java's text, the reference's errors
        entry = cache.get((k, v))
        if entry is None:
            key = k.encode("utf-8")
            if len(key) > 0x7FFF:
                return None
            value = (v if type(v) is str else java_text(k, v)).encode("utf-8")
            entry = b"".join((_I16.pack(len(key)), key, _I32.pack(len(value)), value))
            if len(entry) <= _MAX_ENTRY_LENGTH:
                if len(cache) >= _MAX_ENTRIES:
                    cache.clear()
                cache[(k, v)] = entry
        append(entry)
    return b"".join(entries)


decode_rocketmq_header_fast = decode_rocketmq_header_fast_py
encode_rocketmq_header_fast = encode_rocketmq_header_fast_py
if speedups is not None:
    speedups.configure_rocketmq(SerializeType.ROCKETMQ)
    _decode_rocketmq_header_c = speedups.decode_rocketmq_header
    _encode_rocketmq_header_c = speedups.encode_rocketmq_header

    def decode_rocketmq_header_fast(data: bytes | bytearray | memoryview) -> RemotingCommand:  # noqa: F811
        """``decode_rocketmq_header_fast_py(data)``: the C reads a well-formed header (``_speedups.c``), the
        Python says what is wrong with any other (tests/remoting/test_remoting_speedups.py holds the two
        together)."""
        cmd = _decode_rocketmq_header_c(data)
        return cmd if cmd is not None else decode_rocketmq_header_fast_py(data)

    def encode_rocketmq_header_fast(cmd: RemotingCommand) -> bytes:  # noqa: F811
        """``encode_rocketmq_header_fast_py(cmd)``: the C writes the common command, the Python anything else."""
        data = _encode_rocketmq_header_c(cmd)
        return data if data is not None else encode_rocketmq_header_fast_py(cmd)
