"""Messages as the store takes them in (MessageExtBrokerInner) and gives them out (MessageExt)."""

from __future__ import annotations

import functools
import ipaddress
import struct
from dataclasses import dataclass, field

from .constants import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)

_PORT = struct.Struct(">i")


def pack_host(host: str, port: int) -> bytes:
    """A socket address as RocketMQ stores it: 4 (IPv4) or 16 (IPv6) address bytes, then a 4-byte port."""
    return ipaddress.ip_address(host.strip("[]")).packed + _PORT.pack(port)


@functools.lru_cache(maxsize=4096)  # decoding a pull's records meets the same few hosts again and again
def unpack_host(raw: bytes) -> str:
    """The inverse of pack_host, as "ip:port" ("[ip]:port" for IPv6)."""
    port = _PORT.unpack_from(raw, len(raw) - 4)[0]
    if len(raw) == 8:
        return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{port}"
    return f"[{ipaddress.IPv6Address(raw[:16])}]:{port}"


LOOPBACK_HOST = pack_host("127.0.0.1", 0)


def properties_to_string(props: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String: name 0x01 value 0x02, for every pair (the last one too)."""
    if not props:
        return ""
    # A list, not a generator: for a handful of pairs join() over a generator costs a third more.
    return "".join([f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items() if v is not None])


def string_to_properties(s: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: keeps pairs whose name and value are both non-empty."""
    out: dict[str, str] = {}
    if not s:
        return out
    for item in s.split(PROPERTY_SEPARATOR):
        k, sep, v = item.partition(NAME_VALUE_SEPARATOR)
        if sep and k and v:
            out[k] = v
    return out


@dataclass(slots=True)
class Message:
    """What a producer hands the store: RocketMQ's MessageExtBrokerInner without the derived fields.

    born_host / store_host are already in their on-disk form (see pack_host); store_host None means
    the store's own address from its config. properties_string, when given, is written as is (the
    broker passes on the producer's encoded properties, as RocketMQ's propertiesString); it must
    encode the same pairs as `properties`.
    """

    topic: str
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = LOOPBACK_HOST
    store_host: bytes | None = None
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties_string: str | None = None

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        return [k for k in self.properties.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]


@dataclass(slots=True)
class MessageExtBatch:
    """A batch as the broker hands it over (RocketMQ's MessageExtBatch): messages of one topic and queue that
    share every field but flag, body and properties, the properties already encoded (name 0x01 value 0x02),
    as the producer sent them. The store writes them as they are: a batch of 32 costs no per-message objects.
    """

    topic: str
    queue_id: int
    flags: list[int]
    bodies: list[bytes]
    properties: list[bytes]
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = LOOPBACK_HOST
    store_host: bytes | None = None
    reconsume_times: int = 0

    def __len__(self) -> int:
        return len(self.bodies)


def raw_property(props: bytes, name: bytes) -> bytes | None:
    """The value of property ``name`` (given with its separator, as b"WAIT\x01") in encoded properties."""
    i = props.find(name)
    while i > 0 and props[i - 1] != 2:
        i = props.find(name, i + 1)
    if i < 0:
        return None
    j = props.find(b"\x02", i)
    return props[i + len(name) : j if j >= 0 else len(props)]


@dataclass(slots=True)
class MessageExt:
    """A record decoded from the commit log (MessageExt): every stored field."""

    store_size: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]
    msg_id: str  # offsetMsgId: store host + port + physical offset, upper-case hex

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        return [k for k in self.properties.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
