"""Command bodies: maps/lists keyed by RocketMQ's JSON field names, and the route-side body classes.

Where RocketMQ sends a JSON object (fastjson of a Java class) pocketmq's frames carry the msgpack map with the same
keys, e.g. ``{"queueDatas": [...], "brokerDatas": [...]}``. Two deliberate differences from JSON: ``brokerAddrs``
keys are msgpack ints (brokerId), not decimal strings (still accepted on decode), and sets are lists. On a native
connection the same dicts travel as Java's JSON (``BodyDialect.FASTJSON``: ``fastjson.dumps`` of ``to_dict()``,
which writes ``brokerAddrs`` as ``{0:"addr"}``), and JSON read from there is cast the way fastjson casts it.

Every body class has ``to_dict()`` and ``from_dict(obj)``; ``from_dict`` validates types and raises BodyError
with the path of the offending value.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgpack

from pocketmq.common.compression import DEFAULT_INFLATE_LIMIT, InflateError, inflate

from . import fastjson
from .codes import MASTER_ID, BodyDialect, PermName
from .errors import BodyError
from .fastjson import JsonObject
from .register_broker_native import decode_compressed, encode_compressed


class _BodyClass(Protocol):
    @classmethod
    def from_dict(cls, obj: object, path: str = ...) -> Any: ...


B = TypeVar("B")
_MISSING: Any = object()


def encode_body(obj: object, dialect: BodyDialect = BodyDialect.MSGPACK) -> bytes:
    """``obj`` in ``dialect``: msgpack, or Java's JSON (``fastjson.dumps``); body classes are converted with their
    ``to_dict()``. ``RemotingCommand.encode_body`` picks the dialect of a conversation."""
    if dialect == BodyDialect.MSGPACK:
        to_dict = getattr(obj, "to_dict", None)
        if to_dict is not None:
            obj = to_dict()
        return msgpack.packb(obj, use_bin_type=True, default=_msgpack_key)
    return fastjson.dumps(obj, standard=dialect == BodyDialect.STANDARD_JSON).encode("utf-8")


def _msgpack_key(obj: object) -> object:
    """An object msgpack has no form for: a body class used as a map key (Java's Map<MessageQueue, ...>) goes
    as its JSON text, the form a JSON reader gives such a key back in (``admin_body.mq_from_key``)."""
    if callable(getattr(obj, "to_dict", None)):
        return fastjson.dumps(obj)
    raise TypeError(f"{type(obj).__name__} cannot be written as msgpack")


def decode_body(
    data: bytes | None, cls: Callable[..., B] | type[B] | None = None, dialect: BodyDialect = BodyDialect.MSGPACK
) -> Any:
    """Decode a body in ``dialect`` (both JSON dialects are read alike, leniently); with ``cls`` (a body class)
    return ``cls.from_dict(...)``. Raises BodyError."""
    if data is None:
        raise BodyError("", "missing")
    if dialect == BodyDialect.MSGPACK:
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception as e:
            raise BodyError("", f"undecodable msgpack ({type(e).__name__}: {e})") from None
    else:
        try:
            obj = fastjson.loads(data)
        except fastjson.JsonSyntaxError as e:
            raise BodyError("", f"undecodable JSON ({e})") from None
    if cls is None:
        return obj
    return cls.from_dict(obj)  # type: ignore[union-attr]


# MQVersion.Version.V4_9_4.ordinal(): from this version on a client reads standard JSON routes.
V4_9_4 = 401


def topic_route_body_dialect(dialect: BodyDialect, version: int, accept_standard_json_only: bool) -> BodyDialect:
    """The dialect of a GET_ROUTEINFO_BY_TOPIC answer to a request in ``dialect``: RocketMQ 4.9.8's name server
    writes standard JSON (``{"0":"addr"}``) to clients of V4_9_4 on and to those that ask for it
    (``acceptStandardJsonOnly``), fastjson's default (``{0:"addr"}``) to the older ones."""
    if dialect == BodyDialect.FASTJSON and (version >= V4_9_4 or accept_standard_json_only):
        return BodyDialect.STANDARD_JSON
    return dialect


def now_millis() -> int:
    return time.time_ns() // 1_000_000


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_TRUE_TEXTS = frozenset({"true", "1", "y", "t"})
_FALSE_TEXTS = frozenset({"false", "0", "f", "n"})


def _java_int(v: object) -> int | None:
    """What fastjson casts to an int/long: a decimal string (a C++ client's ``"subVersion":"1700..."``) or an
    integral float; None when it would refuse."""
    if isinstance(v, str) and _INT_TEXT.fullmatch(v):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _java_bool(v: object) -> bool | None:
    """fastjson's TypeUtils.castToBoolean: a number is true when it is 1; "true"/"1"/"Y"/"T" and
    "false"/"0"/"F"/"N" (any case); None when it would refuse."""
    if isinstance(v, int | float):
        return v == 1
    if isinstance(v, str):
        t = v.lower()
        if t in _TRUE_TEXTS:
            return True
        if t in _FALSE_TEXTS:
            return False
    return None


class Reader:
    """Typed access to one decoded map, for ``from_dict`` implementations (errors carry the path).

    A map read from Java's JSON (a ``fastjson.JsonObject``) also gives what fastjson would cast to the asked type:
    numbers written as strings, booleans as 0/1 or "true", strings as numbers, enums as ordinals, byte arrays as
    base64. A msgpack map must hold the exact types.
    """

    __slots__ = ("_d", "_path", "_java")

    def __init__(self, obj: object, path: str = "") -> None:
        if not isinstance(obj, dict):
            raise BodyError(path, f"expected a map, got {type(obj).__name__}")
        self._d = obj
        self._path = path
        self._java = type(obj) is JsonObject

    def at(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _get(self, key: str, default: Any) -> Any:
        v = self._d.get(key)
        if v is None:
            if default is _MISSING:
                raise BodyError(self.at(key), "is missing")
            return default
        return v

    def str(self, key: str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, str):
            if self._java and isinstance(v, int | float):  # fastjson's castToString: the value's toString()
                return ("true" if v else "false") if isinstance(v, bool) else builtins.str(v)
            raise BodyError(self.at(key), f"expected a str, got {type(v).__name__}")
        return v

    def int(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and (type(v) is bool or not isinstance(v, int)):
            cast = _java_int(v) if self._java else None
            if cast is None:
                raise BodyError(self.at(key), f"expected an int, got {type(v).__name__}")
            return cast
        return v

    def bool(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, bool):
            cast = _java_bool(v) if self._java else None
            if cast is None:
                raise BodyError(self.at(key), f"expected a bool, got {type(v).__name__}")
            return cast
        return v

    def enum(self, key: builtins.str, names: tuple[builtins.str, ...], default: Any = _MISSING) -> Any:
        """A Java enum, as its name (a str); from Java's JSON also as its ordinal, an index into ``names``."""
        v = self._get(key, default)
        if v is default or isinstance(v, str):
            return v
        if self._java and type(v) is not bool and isinstance(v, int):
            if 0 <= v < len(names):
                return names[v]
            raise BodyError(self.at(key), f"ordinal {v} is not one of {len(names)} values")
        raise BodyError(self.at(key), f"expected an enum name, got {type(v).__name__}")

    def bytes(self, key: builtins.str, default: Any = _MISSING) -> Any:
        """A Java byte[]: msgpack bin, or in Java's JSON a base64 string."""
        v = self._get(key, default)
        if v is default or isinstance(v, builtins.bytes):
            return v
        if self._java and isinstance(v, str):
            try:
                return base64.b64decode(v, validate=True)
            except binascii.Error:
                raise BodyError(self.at(key), "is not base64") from None
        raise BodyError(self.at(key), f"expected bytes, got {type(v).__name__}")

    def list(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, list):
            raise BodyError(self.at(key), f"expected a list, got {type(v).__name__}")
        return v

    def map(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, dict):
            raise BodyError(self.at(key), f"expected a map, got {type(v).__name__}")
        return v

    def str_list(self, key: builtins.str, default: Any = _MISSING) -> Any:
        items = self.list(key, default)
        if items is default:
            return items
        for i, v in enumerate(items):
            if not isinstance(v, str):
                raise BodyError(f"{self.at(key)}[{i}]", f"expected a str, got {type(v).__name__}")
        return items

    def int_list(self, key: builtins.str, default: Any = _MISSING) -> Any:
        items = self.list(key, default)
        if items is default:
            return items
        out = []
        for i, v in enumerate(items):
            if type(v) is not int:
                cast = _java_int(v) if self._java else None
                if cast is None:
                    raise BodyError(f"{self.at(key)}[{i}]", f"expected an int, got {type(v).__name__}")
                v = cast
            out.append(v)
        return out

    def objects(self, key: builtins.str, cls: type[_BodyClass], default: Any = _MISSING) -> Any:
        items = self.list(key, default)
        if items is default:
            return items
        return [cls.from_dict(v, f"{self.at(key)}[{i}]") for i, v in enumerate(items)]

    def object_map(self, key: builtins.str, cls: type[_BodyClass], default: Any = _MISSING) -> Any:
        m = self.map(key, default)
        if m is default:
            return m
        out = {}
        for k, v in m.items():
            if not isinstance(k, str):
                raise BodyError(self.at(key), f"key {k!r} is not a str")
            out[k] = cls.from_dict(v, f"{self.at(key)}.{k}")
        return out


# --- topic config (broker -> name server) ------------------------------------------------------------------


@dataclass(slots=True)
class DataVersion:
    """Version of a broker's topic config; a name server rebuilds queue data only when it changes."""

    timestamp: int = field(default_factory=now_millis)
    counter: int = 0

    def next_version(self, now_ms: int | None = None) -> None:
        self.timestamp = now_millis() if now_ms is None else now_ms
        self.counter += 1

    def copy(self) -> DataVersion:
        return DataVersion(self.timestamp, self.counter)

    def to_dict(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "counter": self.counter}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> DataVersion:
        r = Reader(obj, path)
        return cls(r.int("timestamp", 0), r.int("counter", 0))


TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")  # TopicFilterType, by ordinal


@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    # RocketMQ 5's attributes (message.type, ...); written only when there are some, so an untyped topic keeps
    # 4.9.8's shape.
    attributes: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicConfig:
        r = Reader(obj, path)
        return cls(
            topic_name=r.str("topicName"),
            read_queue_nums=r.int("readQueueNums", 16),
            write_queue_nums=r.int("writeQueueNums", 16),
            perm=r.int("perm", PermName.PERM_READ | PermName.PERM_WRITE),
            topic_filter_type=r.enum("topicFilterType", TOPIC_FILTER_TYPES, "SINGLE_TAG"),
            topic_sys_flag=r.int("topicSysFlag", 0),
            order=r.bool("order", False),
            attributes=_str_map(r, "attributes"),
        )


def _str_map(r: Reader, key: str) -> dict[str, str]:
    m = r.map(key, {})
    for k, v in m.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise BodyError(r.at(key), "expected a map of strings")
    return dict(m)


@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    """A broker's topic table plus its version (also the shape of topics.json and GET_ALL_TOPIC_CONFIG)."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topicConfigTable": {k: v.to_dict() for k, v in self.topic_config_table.items()},
            "dataVersion": self.data_version.to_dict(),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicConfigSerializeWrapper:
        r = Reader(obj, path)
        dv = r.map("dataVersion", None)
        return cls(
            topic_config_table=r.object_map("topicConfigTable", TopicConfig, {}),
            data_version=DataVersion.from_dict(dv, r.at("dataVersion"))
            if dv is not None
            else DataVersion(0, 0),
        )


@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER body. With the header's ``compressed`` set, the msgpack bytes are zlib-deflated; on a
    native connection the body is RocketMQ's (JSON, or its compressed form: register_broker_native)."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)
    # pocketmq's delta registration (see RegisterBrokerRequestHeader): topics deleted since the base version.
    deleted_topics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_dict(),
            "filterServerList": list(self.filter_server_list),
        }
        if self.deleted_topics:
            d["deletedTopics"] = list(self.deleted_topics)
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> RegisterBrokerBody:
        r = Reader(obj, path)
        w = r.map("topicConfigSerializeWrapper", None)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper.from_dict(
                w, r.at("topicConfigSerializeWrapper")
            )
            if w is not None
            else TopicConfigSerializeWrapper(data_version=DataVersion(0, 0)),
            filter_server_list=r.str_list("filterServerList", []),
            deleted_topics=r.str_list("deletedTopics", []),
        )

    def encode(self, compress: bool = False, dialect: BodyDialect = BodyDialect.MSGPACK) -> bytes:
        """msgpack (deflated when ``compress``), or for a RocketMQ name server (``dialect`` FASTJSON) the JSON of
        RegisterBrokerBody, or with ``compress`` RocketMQ's compressed form (register_broker_native)."""
        if dialect == BodyDialect.MSGPACK:
            data = encode_body(self)
            return zlib.compress(data) if compress else data
        if not compress:
            return encode_body(self, dialect)
        w = self.topic_config_serialize_wrapper
        topics = [
            (t.topic_name, t.read_queue_nums, t.write_queue_nums, t.perm, t.topic_filter_type)
            for t in w.topic_config_table.values()
        ]
        return encode_compressed(w.data_version.to_dict(), topics, self.filter_server_list)

    @classmethod
    def decode(
        cls,
        data: bytes | None,
        compressed: bool = False,
        inflate_limit: int = DEFAULT_INFLATE_LIMIT,
        dialect: BodyDialect = BodyDialect.MSGPACK,
    ) -> RegisterBrokerBody:
        """The body of a REGISTER_BROKER in ``dialect`` (a RocketMQ broker's: JSON, or its own compressed form);
        a compressed one inflates to at most ``inflate_limit`` bytes (a BodyError beyond), so a small deflated
        bomb costs no more than a frame."""
        if data is None:
            # No body: an empty table with version 0, as RocketMQ's name server assumes.
            return cls(TopicConfigSerializeWrapper(data_version=DataVersion(0, 0)))
        if dialect != BodyDialect.MSGPACK:
            if compressed:
                return cls.from_dict(decode_compressed(data, inflate_limit))
            native: RegisterBrokerBody = decode_body(data, cls, dialect)
            return native
        if compressed:
            try:
                data = inflate(data, inflate_limit)
            except InflateError as e:
                raise BodyError("", f"compressed body: {e}") from None
        body: RegisterBrokerBody = decode_body(data, cls)
        return body


def body_crc32(data: bytes | None) -> int:
    """RocketMQ's UtilAll.crc32: CRC-32 masked to a non-negative Java int (0 for an empty body)."""
    if not data:
        return 0
    return zlib.crc32(data) & 0x7FFFFFFF


# --- routes (name server -> clients) -----------------------------------------------------------------------


@dataclass(slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicSysFlag": self.topic_sys_flag,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueueData:
        r = Reader(obj, path)
        return cls(
            broker_name=r.str("brokerName"),
            read_queue_nums=r.int("readQueueNums"),
            write_queue_nums=r.int("writeQueueNums"),
            perm=r.int("perm"),
            topic_sys_flag=r.int("topicSysFlag", 0),
        )


@dataclass(slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)  # brokerId -> "ip:port"; 0 = master

    def select_broker_addr(self) -> str | None:
        """The master's address, else any slave's (RocketMQ picks a random one)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            addr = self.broker_addrs[min(self.broker_addrs)]
        return addr

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "brokerName": self.broker_name,
            "brokerAddrs": dict(self.broker_addrs),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BrokerData:
        r = Reader(obj, path)
        addrs: dict[int, str] = {}
        for k, v in r.map("brokerAddrs", {}).items():
            # JSON-born maps carry the id as a decimal string.
            if isinstance(k, str) and k.lstrip("-").isdigit():
                k = int(k)
            if type(k) is not int or not isinstance(v, str):
                raise BodyError(r.at("brokerAddrs"), f"expected brokerId -> address, got {k!r}: {v!r}")
            addrs[k] = v
        return cls(cluster=r.str("cluster"), broker_name=r.str("brokerName"), broker_addrs=addrs)


@dataclass(slots=True)
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)  # brokerAddr -> filter servers
    order_topic_conf: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "queueDatas": [q.to_dict() for q in self.queue_datas],
            "brokerDatas": [b.to_dict() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
        }
        if self.order_topic_conf is not None:
            d["orderTopicConf"] = self.order_topic_conf
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicRouteData:
        r = Reader(obj, path)
        fst = r.map("filterServerTable", {})
        table: dict[str, list[str]] = {}
        for k, v in fst.items():
            if not isinstance(k, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BodyError(r.at("filterServerTable"), f"expected address -> [address], got {k!r}")
            table[k] = v
        return cls(
            queue_datas=r.objects("queueDatas", QueueData, []),
            broker_datas=r.objects("brokerDatas", BrokerData, []),
            filter_server_table=table,
            order_topic_conf=r.str("orderTopicConf", None),
        )


@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO body."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)  # brokerName -> BrokerData
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)  # cluster -> brokerNames

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_dict() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ClusterInfo:
        r = Reader(obj, path)
        clusters: dict[str, set[str]] = {}
        for k, v in r.map("clusterAddrTable", {}).items():
            if not isinstance(k, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BodyError(r.at("clusterAddrTable"), f"expected cluster -> [brokerName], got {k!r}")
            clusters[k] = set(v)
        return cls(
            broker_addr_table=r.object_map("brokerAddrTable", BrokerData, {}), cluster_addr_table=clusters
        )


@dataclass(slots=True)
class TopicList:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER body (and the broker's topic-name lists)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topicList": list(self.topic_list)}
        if self.broker_addr is not None:
            d["brokerAddr"] = self.broker_addr
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicList:
        r = Reader(obj, path)
        return cls(topic_list=r.str_list("topicList", []), broker_addr=r.str("brokerAddr", None))
