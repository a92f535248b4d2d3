"""The binary header of a native frame (RocketMQ's ``RocketMQSerializable``, serialize type 1).

::

    code i16 | language u8 | version i16 | opaque i32 | flag i32 | remarkLen i32 + remark UTF-8 |
    extLen i32 + extLen bytes of (keyLen i16 + key UTF-8, valLen i32 + value UTF-8)...

All big-endian. As in RocketMQ 4.9.8 (``readStr``), a length of 0 reads as null: an empty remark comes back as
None, and an ext entry with an empty key or value is left out (Java would map it to null, which a header reads as
missing). A length that is negative or runs past its block is malformed; bytes after the ext block are ignored,
as Java ignores them.
"""

from __future__ import annotations

import struct

from .codes import SerializeType
from .command import RemotingCommand
from .errors import MalformedFrame
from .remoting_serializable import check_int32, java_ext_fields

_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remarkLen
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
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
    if not 0 <= ext_len <= n - pos:
        raise MalformedFrame(f"ext fields length {ext_len} runs past the {n}-byte ROCKETMQ header", opaque, flag)
    ext: dict[str, object] = {}
    end = pos + ext_len
    while pos < end:
        if end - pos < 2:
            raise MalformedFrame("ext fields end inside a key length", opaque, flag)
        (key_len,) = _I16.unpack_from(data, pos)
        pos += 2
        if not 0 <= key_len <= end - pos - 4:
            raise MalformedFrame(f"ext key length {key_len} runs past the ext fields", opaque, flag)
        key = bytes(data[pos : pos + key_len]).decode("utf-8", "replace")
        pos += key_len
        (value_len,) = _I32.unpack_from(data, pos)
        pos += 4
        if not 0 <= value_len <= end - pos:
            raise MalformedFrame(f"ext value length {value_len} of {key!r} runs past the ext fields", opaque, flag)
        if key and value_len:
            ext[key] = bytes(data[pos : pos + value_len]).decode("utf-8", "replace")
        pos += value_len
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, None, SerializeType.ROCKETMQ)
