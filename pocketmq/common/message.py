"""Messages as the store takes them in (MessageExtBrokerInner) and gives them out (MessageExt)."""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from .bounded_cache import BoundedCache
from .constants import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_START_DELIVER_TIME,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from .java_numbers import INT_MAX, INT_MIN
from .java_text import parse_integer

_PORT = struct.Struct(">i")


def delay_time_level(props: Mapping[str, str]) -> int:
    """Message.getDelayTimeLevel: the DELAY property as Integer.parseInt reads it, 0 without one. ValueError when it
    is no int ("", " 1", "1_0", "abc", past the int's range), where RocketMQ's put fails with NumberFormatException."""
    text = props.get(PROPERTY_DELAY_TIME_LEVEL)
    return 0 if text is None else parse_integer(text, INT_MIN, INT_MAX)


# What makes a message a timer message (HookUtils.checkIfTimerMessage; __STARTDELIVERTIME is pocketmq's addition).
TIMER_PROPERTIES = (PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS, PROPERTY_TIMER_DELIVER_MS,
                    PROPERTY_START_DELIVER_TIME)


def timer_deliver_ms(props: Mapping[str, str], now_ms: int) -> int:
    """When a timer message is due (HookUtils.transformTimerMessage reads the properties in this order). ValueError
    for a value Long.parseLong refuses (" 2", "2_000" are no numbers there)."""
    if PROPERTY_TIMER_DELAY_SEC in props:
        return now_ms + parse_integer(props[PROPERTY_TIMER_DELAY_SEC]) * 1000
    if PROPERTY_TIMER_DELAY_MS in props:
        return now_ms + parse_integer(props[PROPERTY_TIMER_DELAY_MS])
    if PROPERTY_TIMER_DELIVER_MS in props:
        return parse_integer(props[PROPERTY_TIMER_DELIVER_MS])
    return parse_integer(props[PROPERTY_START_DELIVER_TIME])


def asks_for_a_timer(props: Mapping[str, str], now_ms: int) -> bool:
    """Whether a message's timer properties ask for a delivery later than now_ms; also when they cannot be read
    (a broker refuses such a message)."""
    if not any(key in props for key in TIMER_PROPERTIES):
        return False
    try:
        return timer_deliver_ms(props, now_ms) > now_ms
    except ValueError:
        return True


def pack_host(host: str, port: int) -> bytes:
    """A socket address as RocketMQ stores it: 4 (IPv4) or 16 (IPv6) address bytes, then a 4-byte port."""
    return ipaddress.ip_address(host.strip("[]")).packed + _PORT.pack(port)


def _unpack_host(raw: bytes) -> str:
    port = _PORT.unpack_from(raw, len(raw) - 4)[0]
    if len(raw) == 8:
        return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{port}"
    return f"[{ipaddress.IPv6Address(raw[:16])}]:{port}"


# Decoding a pull's records meets the same few hosts again and again.
_HOSTS: BoundedCache[bytes, str] = BoundedCache(_unpack_host, 4096)


def unpack_host(raw: bytes) -> str:
    """The inverse of pack_host, as "ip:port" ("[ip]:port" for IPv6)."""
    return _HOSTS.get(raw) or _HOSTS[raw]


def _pack_address(address: str) -> bytes:
    host, _, port = address.rpartition(":")
    return pack_host(host, int(port))


_PACKED: BoundedCache[str, bytes] = BoundedCache(_pack_address, 256)


def _packed_host(address: str) -> bytes:
    """pack_host of an "ip:port" string as unpack_host gives it (a MessageExt keeps only the string)."""
    return _PACKED.get(address) or _PACKED[address]


_MSG_ID_V4 = struct.Struct(">8sq")


def create_message_id(store_host: bytes, physical_offset: int) -> str:
    """offsetMsgId: store address + port + physical offset as upper-case hex (32 chars for IPv4)."""
    if len(store_host) == 8:
        return _MSG_ID_V4.pack(store_host, physical_offset).hex().upper()
    return (store_host + physical_offset.to_bytes(8, "big", signed=True)).hex().upper()


def create_message_ids(store_host: bytes, physical_offsets: list[int]) -> str:
    """create_message_id for each offset, comma-separated (a batch's offsetMsgId, as RocketMQ returns it).
    The offsets are packed and hex-encoded by one call each and the host put in front of every one, a third of
    the cost of a create_message_id per record."""
    host = store_host.hex().upper()
    packed = struct.pack(f">{len(physical_offsets)}q", *physical_offsets).hex(",", -8).upper()
    return host + packed.replace(",", "," + host)


LOOPBACK_HOST = pack_host("127.0.0.1", 0)


def properties_to_string(props: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String: name 0x01 value 0x02, for every pair (the last one too)."""
    if not props:
        return ""
    # A list, not a generator: for a handful of pairs join() over a generator costs a third more.
    return "".join([f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items() if v is not None])


def java_utf8(text: str) -> bytes:
    """``text`` as Java's ``String.getBytes(UTF_8)`` writes it: a lone surrogate as ``?``, where ``encode()`` raises.
    A JSON header's ``\\ud800`` gives one (fastjson and pocketmq's reader keep it in the text, as Java's String
    does); 4.9.7 stores a message whose properties hold one, the surrogate written as ``?``."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


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
class MessageExtBrokerInner:
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
    """The value of property ``name`` (given with its separator, as b"WAIT\x01") in encoded properties: the last
    non-empty one when the name comes more than once, the one string_to_properties keeps (as Java's HashMap does)."""
    end = len(props)
    while (i := props.rfind(name, 0, end)) >= 0:
        if i == 0 or props[i - 1] == 2:
            j = props.find(b"\x02", i)
            value = props[i + len(name) : j if j >= 0 else len(props)]
            if value:
                return value
        end = i
    return None


def encoded_property(props: str, name: str) -> str | None:
    """``string_to_properties(props).get(name)`` without the dict: the last pair of that name with a value."""
    key = name + NAME_VALUE_SEPARATOR
    end = len(props)
    while (i := props.rfind(key, 0, end)) >= 0:
        if i == 0 or props[i - 1] == PROPERTY_SEPARATOR:
            j = props.find(PROPERTY_SEPARATOR, i)
            value = props[i + len(key) : j if j >= 0 else len(props)]
            if value:
                return value
        end = i
    return None


@dataclass(slots=True, eq=False, repr=False)
class MessageExt:
    """A record decoded from the commit log (MessageExt): every stored field.

    The properties stay in their stored form (``properties_string``) until ``properties`` is first read: a
    consumer that looks only at bodies never pays for the dict (nearly as much as the rest of decoding when a
    pull answer's records are decoded as a run). ``put_property`` /
    ``put_encoded_properties`` before that read append to the string, so a client marking every message it
    pulls (MIN_OFFSET, CONSUME_START_TIME, as RocketMQ's does) does not build the dict either; decode_all's
    ``extra_properties`` does the same while decoding.
    """

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
    properties_string: str  # name 0x01 value 0x02 ..., as stored, then the puts made before the first read
    _properties: dict[str, str] | None = None
    # Why a compressed body was asked to inflate and did not (it is then the stored bytes, COMPRESSED_FLAG still
    # set): the decoder's mark, kept off the properties, where a producer's property of any name could fake it.
    body_inflate_error: str | None = None

    @property
    def msg_id(self) -> str:
        """The message's id as a client knows it (RocketMQ's MessageClientExt.getMsgId): the UNIQ_KEY the
        producer stamped and its send returned; the offsetMsgId for a message without one (sent by a client
        that sets none)."""
        uniq = self.uniq_key
        return uniq if uniq else self.offset_msg_id

    @property
    def offset_msg_id(self) -> str:
        """The store's id: store host + port + physical offset, upper-case hex (made when read, not per
        decode). VIEW_MESSAGE_BY_ID finds a message by it."""
        return create_message_id(_packed_host(self.store_host), self.commit_log_offset)

    def get_property(self, name: str) -> str | None:
        """``properties.get(name)``, read off the stored string while the dict is not built (a pull's last
        message is asked for MAX_OFFSET; building its dict cost two parses of its properties)."""
        props = self._properties
        if props is not None:
            return props.get(name)
        return encoded_property(self.properties_string, name)

    @property
    def properties(self) -> dict[str, str]:
        props = self._properties
        if props is None:
            props = self._properties = string_to_properties(self.properties_string)
        return props

    @properties.setter
    def properties(self, value: dict[str, str]) -> None:
        self._properties = value

    def put_property(self, name: str, value: str) -> None:
        """MessageAccessor.putProperty: set one property (a later put of the same name wins)."""
        if self._properties is not None:
            self._properties[name] = value
        else:
            self.put_encoded_properties(properties_to_string({name: value}))

    def put_encoded_properties(self, encoded: str) -> None:
        """put_property for pairs already encoded (name 0x01 value 0x02 each): one string for a whole pull."""
        if self._properties is not None:
            self._properties.update(string_to_properties(encoded))
            return
        stored = self.properties_string
        if stored and stored[-1] != PROPERTY_SEPARATOR:
            stored += PROPERTY_SEPARATOR  # (a producer may leave out the last separator)
        self.properties_string = stored + encoded

    def __eq__(self, other: object) -> bool:
        if type(other) is not MessageExt:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _COMPARED) and self.properties == other.properties

    def __repr__(self) -> str:
        fields_ = ", ".join(f"{f}={getattr(self, f)!r}" for f in _COMPARED)
        return f"MessageExt({fields_}, properties={self.properties!r})"

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        return [k for k in self.properties.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


_COMPARED = tuple(f.name for f in fields(MessageExt) if f.name not in ("properties_string", "_properties"))
