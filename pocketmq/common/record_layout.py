"""The byte layouts of a commit-log record and of a batch body, field by field: the one place the code
describes them.

A commit-log record (RocketMQ 4.x, ``CommitLog.calMsgLength`` and ``DefaultAppendMessageCallback``) is
``COMMIT_LOG_RECORD``; a message of a SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages``) is
``BATCH_MESSAGE``. Every integer is big-endian. Every struct that reads or writes these bytes (the commit log's
put, the dispatcher, recovery, the record codec, the batch split, inspect) is derived from these lists by
``RecordFormat``: it takes the fields up to one of them, skips the ones its reader does not need as pad bytes,
and leaves the lengths of the variable fields open for a record's shape to fill in. The formats are derived
when the modules are imported; a shape then costs one ``%`` and a ``struct.Struct``, as a format string
written out by hand would.

With IPv4 hosts and B, T, P bytes of body, topic and properties::

    offset  size  field
         0     4  TOTALSIZE                   91 + B + T + P (each IPv6 host adds 12)
         4     4  MAGICCODE                   0xDAA320A7 (0xCBD43194: the blank record that ends a file)
         8     4  BODYCRC                     CRC32 of BODY & 0x7FFFFFFF
        12     4  QUEUEID
        16     4  FLAG
        20     8  QUEUEOFFSET
        28     8  PHYSICALOFFSET
        36     4  SYSFLAG
        40     8  BORNTIMESTAMP
        48     8  BORNHOST                    4 address bytes + port (int); 16 + 4 with SYSFLAG 0x10
        56     8  STORETIMESTAMP
        64     8  STOREHOSTADDRESS            as BORNHOST; 16 + 4 with SYSFLAG 0x20
        72     4  RECONSUMETIMES
        76     8  PREPAREDTRANSACTIONOFFSET
        84     4  BODYLENGTH                  B
        88     B  BODY
      88+B     1  TOPICLENGTH                 T, at most 127 (RocketMQ reads a signed byte)
      89+B     T  TOPIC
    89+B+T     2  PROPERTIESLENGTH            P, at most 32767
    91+B+T     P  PROPERTIES                  NAME 0x01 VALUE 0x02 ...

RocketMQ 5's message version 2 (``MessageVersion.MESSAGE_VERSION_V2``, MAGICCODE 0xDAA320AB) is the same record
with a 2-byte TOPICLENGTH (``COMMIT_LOG_RECORD_V2``): every field after it moves one byte on, and TOTALSIZE is one
more. RocketMQ 5's store writes it for a topic of more than 127 characters (a retry topic: ``message_magic``).
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from mmap import mmap

from .constants import (
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TOPIC_MAX_LENGTH,
)

IPV4_HOST_LENGTH = 8  # 4 address bytes, then the port as an int
IPV6_HOST_LENGTH = 20  # 16 address bytes, then the port


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a layout, by RocketMQ's name.

    ``code`` is the struct code of a number (``i`` int, ``I`` an int read unsigned, as the magic codes are
    written in constants.py, ``q`` long, ``h`` short, ``B`` unsigned byte), or ``s`` for bytes. The length of
    bytes is the value of the field ``length_from`` (an earlier field of the record), or, for a host, 8 bytes
    (IPv4) unless SYSFLAG has the bit ``v6_flag`` set, which makes it 20 (IPv6)."""

    name: str
    code: str
    length_from: str = ""
    v6_flag: int = 0

    @property
    def is_bytes(self) -> bool:
        return self.code == "s"

    @property
    def size(self) -> int:
        """Bytes taken by a number field (bytes fields have no size of their own)."""
        if self.is_bytes:
            raise ValueError(f"{self.name} is bytes: its length comes from the record")
        return struct.calcsize(">" + self.code)


# RocketMQ's order. docs/storage.md numbers the fields by their position here, plus one (1 TOTALSIZE .. 20
# PROPERTIES); RocketMQ's comments count a length and its bytes as one field (15 BODY, 16 TOPIC, 17 PROPERTIES).
COMMIT_LOG_RECORD: tuple[Field, ...] = (
    Field("TOTALSIZE", "i"),
    Field("MAGICCODE", "I"),
    Field("BODYCRC", "i"),
    Field("QUEUEID", "i"),
    Field("FLAG", "i"),
    Field("QUEUEOFFSET", "q"),
    Field("PHYSICALOFFSET", "q"),
    Field("SYSFLAG", "i"),
    Field("BORNTIMESTAMP", "q"),
    Field("BORNHOST", "s", v6_flag=BORNHOST_V6_FLAG),
    Field("STORETIMESTAMP", "q"),
    Field("STOREHOSTADDRESS", "s", v6_flag=STOREHOSTADDRESS_V6_FLAG),
    Field("RECONSUMETIMES", "i"),
    Field("PREPAREDTRANSACTIONOFFSET", "q"),
    Field("BODYLENGTH", "i"),
    Field("BODY", "s", length_from="BODYLENGTH"),
    Field("TOPICLENGTH", "B"),
    Field("TOPIC", "s", length_from="TOPICLENGTH"),
    Field("PROPERTIESLENGTH", "h"),
    Field("PROPERTIES", "s", length_from="PROPERTIESLENGTH"),
)

# MESSAGE_VERSION_V2: TOPICLENGTH is a short (RocketMQ reads it signed; a topic is at most 255 bytes).
COMMIT_LOG_RECORD_V2: tuple[Field, ...] = tuple(
    Field(f.name, "H") if f.name == "TOPICLENGTH" else f for f in COMMIT_LOG_RECORD)

# The layout of each MAGICCODE of a message (MessageVersion.valueOfMagicCode).
LAYOUTS: dict[int, tuple[Field, ...]] = {MESSAGE_MAGIC_CODE: COMMIT_LOG_RECORD,
                                         MESSAGE_MAGIC_CODE_V2: COMMIT_LOG_RECORD_V2}
# The bytes of TOPICLENGTH by MAGICCODE (MessageVersion.getTopicLengthSize).
TOPIC_LENGTH_SIZES: dict[int, int] = {MESSAGE_MAGIC_CODE: 1, MESSAGE_MAGIC_CODE_V2: 2}


def message_magic(topic: str) -> int:
    """The MAGICCODE RocketMQ 5's CommitLog.asyncPutMessage writes for ``topic`` (autoMessageVersionOnTopicLen):
    version 2 when the topic has more than Byte.MAX_VALUE characters (Java's String.length: UTF-16 units)."""
    if len(topic) <= TOPIC_MAX_LENGTH:  # (UTF-16 units are never fewer than code points)
        return MESSAGE_MAGIC_CODE
    return MESSAGE_MAGIC_CODE_V2 if len(topic.encode("utf-16-le")) // 2 > TOPIC_MAX_LENGTH else MESSAGE_MAGIC_CODE


def record_magic(topic_len: int) -> int:
    """The MAGICCODE of a stored record whose topic has ``topic_len`` bytes: a store takes a topic of more than
    127 bytes only in a version 2 record (topic_validator.long_topic_error)."""
    return MESSAGE_MAGIC_CODE_V2 if topic_len > TOPIC_MAX_LENGTH else MESSAGE_MAGIC_CODE


def topic_length_at(buf: bytes | bytearray | memoryview | mmap, pos: int, magic: int) -> int:
    """TOPICLENGTH at ``pos`` of a record of this MAGICCODE (2 bytes in version 2, else 1)."""
    return buf[pos] << 8 | buf[pos + 1] if magic == MESSAGE_MAGIC_CODE_V2 else buf[pos]


# One message of a batch body. MAGICCODE and BODYCRC are written as 0 by RocketMQ's client and not read by
# its broker; TOTALSIZE = 22 + body + properties.
BATCH_MESSAGE: tuple[Field, ...] = (
    Field("TOTALSIZE", "i"),
    Field("MAGICCODE", "i"),
    Field("BODYCRC", "i"),
    Field("FLAG", "i"),
    Field("BODYLENGTH", "i"),
    Field("BODY", "s", length_from="BODYLENGTH"),
    Field("PROPERTIESLENGTH", "h"),
    Field("PROPERTIES", "s", length_from="PROPERTIESLENGTH"),
)


class RecordFormat:
    """A struct format derived from a layout.

    It covers the fields from the first through ``through`` (all when None); a field not in ``keep`` (all kept
    when None) is skipped as pad bytes, so unpacking gives only the kept fields, in layout order (``names``).
    A bytes field's length comes from ``lengths`` (e.g. the hosts' widths); the lengths not given there stay
    open (``open``, in layout order) and ``struct(*lengths)`` fills them in for one shape of record."""

    __slots__ = ("layout", "names", "open", "template", "fixed_size")

    def __init__(self, layout: tuple[Field, ...], *, lengths: Mapping[str, int] | None = None,
                 keep: Collection[str] | None = None, through: str | None = None) -> None:
        known = {f.name for f in layout}
        lengths = lengths or {}
        for name in (*lengths, *(keep or ()), *((through,) if through else ())):
            if name not in known:
                raise ValueError(f"no field {name!r} in this layout")
        parts = [">"]
        names: list[str] = []
        open_: list[str] = []
        skip = fixed = 0
        for f in layout:
            kept = keep is None or f.name in keep
            if f.is_bytes and f.name not in lengths:
                if skip:
                    parts.append(f"{skip}x")
                    skip = 0
                parts.append("%ds" if kept else "%dx")
                open_.append(f.name)
            else:
                n = lengths[f.name] if f.is_bytes else f.size
                fixed += n
                if kept:
                    if skip:
                        parts.append(f"{skip}x")
                        skip = 0
                    parts.append(f"{n}s" if f.is_bytes else f.code)
                else:
                    skip += n
            if kept:
                names.append(f.name)
            if f.name == through:
                break
        if skip:
            parts.append(f"{skip}x")
        self.layout = layout
        self.names = tuple(names)
        self.open = tuple(open_)
        self.template = "".join(parts)
        self.fixed_size = fixed  # the bytes of the fields whose lengths are known

    def struct(self, *lengths: int) -> struct.Struct:
        """The struct for these lengths of the open fields (none when all are known)."""
        return struct.Struct(self.template % lengths)

    def __repr__(self) -> str:
        return f"RecordFormat({self.template!r}, names={self.names}, open={self.open})"


def field_struct(name: str, layout: tuple[Field, ...] = COMMIT_LOG_RECORD) -> struct.Struct:
    """One number field on its own (to read it at a position found otherwise)."""
    for f in layout:
        if f.name == name:
            return struct.Struct(">" + f.code)
    raise ValueError(f"no field {name!r} in this layout")


# -- hosts ------------------------------------------------------------------------------------------

def host_lengths(sys_flag: int) -> tuple[int, int]:
    """(BORNHOST, STOREHOSTADDRESS) widths for this SYSFLAG: 8 bytes for IPv4, 20 for IPv6."""
    return (IPV6_HOST_LENGTH if sys_flag & BORNHOST_V6_FLAG else IPV4_HOST_LENGTH,
            IPV6_HOST_LENGTH if sys_flag & STOREHOSTADDRESS_V6_FLAG else IPV4_HOST_LENGTH)


def host_flags(sys_flag: int, born_len: int, store_len: int) -> int:
    """SYSFLAG with the IPv6 bits set to match the hosts actually written."""
    return (sys_flag & ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)) | (
        BORNHOST_V6_FLAG if born_len != IPV4_HOST_LENGTH else 0) | (
        STOREHOSTADDRESS_V6_FLAG if store_len != IPV4_HOST_LENGTH else 0)


def host_widths(born_len: int, store_len: int) -> dict[str, int]:
    """The ``lengths`` of a RecordFormat for these host widths."""
    return {"BORNHOST": born_len, "STOREHOSTADDRESS": store_len}


# Every (born, store) width a record can have.
HOST_SHAPES = tuple((b, s) for b in (IPV4_HOST_LENGTH, IPV6_HOST_LENGTH) for s in (IPV4_HOST_LENGTH, IPV6_HOST_LENGTH))

# -- derived once: the structs and positions the hot paths use ---------------------------------------

# A whole record for each MAGICCODE and host shape; its open lengths are BODY, TOPIC and PROPERTIES.
_WHOLE = {(magic, hosts): RecordFormat(layout, lengths=host_widths(*hosts))
          for magic, layout in LAYOUTS.items() for hosts in HOST_SHAPES}
# TOTALSIZE through BODYLENGTH: the fixed part of a record.
_HEADERS = {hosts: RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*hosts), through="BODYLENGTH").struct()
            for hosts in HOST_SHAPES}
HEADER_V4 = _HEADERS[(IPV4_HOST_LENGTH, IPV4_HOST_LENGTH)]
# TOTALSIZE and MAGICCODE: what is read first, and the whole of the blank record that fills a file's end.
SIZE_MAGIC = RecordFormat(COMMIT_LOG_RECORD, through="MAGICCODE").struct()


def header_struct(born_len: int, store_len: int) -> struct.Struct:
    """The fixed part of a record, TOTALSIZE through BODYLENGTH, for these host widths (8 or 20)."""
    return _HEADERS[(born_len, store_len)]


def record_struct(body_len: int, topic_len: int, props_len: int, born_len: int = IPV4_HOST_LENGTH,
                  store_len: int = IPV4_HOST_LENGTH, magic: int = MESSAGE_MAGIC_CODE) -> struct.Struct:
    """A whole record of this shape (and MAGICCODE's version) as one struct, every field in layout order."""
    return _WHOLE[(magic, (born_len, store_len))].struct(body_len, topic_len, props_len)


def _positions(born_len: int, store_len: int) -> dict[str, int]:
    widths = host_widths(born_len, store_len)
    out: dict[str, int] = {}
    pos = 0
    for f in COMMIT_LOG_RECORD:
        out[f.name] = pos
        if f.name == "BODY":
            break
        pos += widths[f.name] if f.is_bytes else f.size
    return out


_POSITIONS = {hosts: _positions(*hosts) for hosts in HOST_SHAPES}


def field_positions(born_len: int = IPV4_HOST_LENGTH, store_len: int = IPV4_HOST_LENGTH) -> dict[str, int]:
    """Where each field of the fixed part starts, and BODY, for these host widths (do not modify)."""
    return _POSITIONS[(born_len, store_len)]


POSITIONS_V4 = field_positions()
# Fields before BORNHOST are where they are whatever the hosts.
QUEUE_OFFSET_POS = POSITIONS_V4["QUEUEOFFSET"]
PHYSICAL_OFFSET_POS = POSITIONS_V4["PHYSICALOFFSET"]
SYSFLAG_POS = POSITIONS_V4["SYSFLAG"]
BORN_HOST_POS = POSITIONS_V4["BORNHOST"]
BODY_POS_V4 = POSITIONS_V4["BODY"]  # = HEADER_V4.size
# Bytes of every field but the hosts and the three variable ones: 75; a record is this + hosts + B + T + P.
_FIXED_WITHOUT_HOSTS = sum(f.size for f in COMMIT_LOG_RECORD if not f.is_bytes)


def record_length(sys_flag: int, body_len: int, topic_len: int, props_len: int,
                  magic: int = MESSAGE_MAGIC_CODE) -> int:
    """calMsgLength: the TOTALSIZE of a record of this shape (91 + B + T + P with IPv4 hosts; one more in
    version 2)."""
    born, store = host_lengths(sys_flag)
    return (_FIXED_WITHOUT_HOSTS + born + store + body_len + topic_len + props_len
            + TOPIC_LENGTH_SIZES[magic] - 1)


# -- batch bodies ------------------------------------------------------------------------------------

_BATCH_WHOLE = RecordFormat(BATCH_MESSAGE)  # open: BODY, PROPERTIES
BATCH_HEAD = RecordFormat(BATCH_MESSAGE, through="BODYLENGTH").struct()  # TOTALSIZE .. BODYLENGTH
BATCH_FIXED_LENGTH = _BATCH_WHOLE.fixed_size  # 22: a message of the batch is this + body + properties


def batch_message_struct(body_len: int, props_len: int) -> struct.Struct:
    """One message of a batch body of this shape, every field."""
    return _BATCH_WHOLE.struct(body_len, props_len)
