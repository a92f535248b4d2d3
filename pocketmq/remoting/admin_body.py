"""Bodies of the admin requests (RocketMQ 4.9.8's ConsumerConnection, KVTable, ResetOffsetBody ...; its
TopicStatsTable and ConsumeStats are in admin_stats.py, importable from here too).

Same conventions as ``body``. Several of Java's maps are keyed by a MessageQueue object: ``to_dict`` keeps the
MessageQueue as the key; fastjson writes it as the object's JSON, unquoted
(``{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}``), and a JSON reader gives it back as that text. On
pocketmq's msgpack frames the key travels as the same JSON text (a str, ``body.encode_body``), so ``from_dict``
reads both dialects alike: ``mq_from_key``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pocketmq.common.util_all import format_date_millis

from . import fastjson

# RocketMQ's remoting.protocol.admin bodies and the key reader, importable from here as before they had a module
# of their own.
from .admin_stats import ConsumeStats as ConsumeStats
from .admin_stats import OffsetWrapper as OffsetWrapper
from .admin_stats import TopicOffset as TopicOffset
from .admin_stats import TopicStatsTable as TopicStatsTable
from .admin_stats import _sorted_mq_items
from .admin_stats import mq_from_key as mq_from_key
from .body import Reader
from .client_body import CONSUME_FROM_WHERE, CONSUME_TYPES, MESSAGE_MODELS, MessageQueue, SubscriptionData
from .codes import LanguageCode
from .errors import BodyError

LANGUAGE_NAMES = tuple(c.name for c in LanguageCode)  # LanguageCode, by ordinal


@dataclass(slots=True)
class Connection:
    """RocketMQ's Connection: one client of a ConsumerConnection or ProducerConnection."""

    client_id: str
    client_addr: str
    language: str = "JAVA"  # LanguageCode name
    version: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"clientId": self.client_id, "clientAddr": self.client_addr, "language": self.language,
                "version": self.version}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> Connection:
        r = Reader(obj, path)
        return cls(r.str("clientId", ""), r.str("clientAddr", ""), r.enum("language", LANGUAGE_NAMES, "JAVA"),
                   r.int("version", 0))


def _connections(conns: list[Connection]) -> list[dict[str, Any]]:
    return [c.to_dict() for c in sorted(conns, key=lambda c: (c.client_id, c.client_addr))]


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST (203) body."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "connectionSet": _connections(self.connection_set),
            "subscriptionTable": {k: v.to_dict() for k, v in self.subscription_table.items()},
            "consumeType": self.consume_type,
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumerConnection:
        r = Reader(obj, path)
        return cls(
            r.objects("connectionSet", Connection, []),
            r.object_map("subscriptionTable", SubscriptionData, {}),
            r.enum("consumeType", CONSUME_TYPES, None),
            r.enum("messageModel", MESSAGE_MODELS, None),
            r.enum("consumeFromWhere", CONSUME_FROM_WHERE, None),
        )


@dataclass(slots=True)
class ProducerConnection:
    """GET_PRODUCER_CONNECTION_LIST (204) body."""

    connection_set: list[Connection] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"connectionSet": _connections(self.connection_set)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ProducerConnection:
        return cls(Reader(obj, path).objects("connectionSet", Connection, []))


@dataclass(slots=True)
class KVTable:
    """GET_BROKER_RUNTIME_INFO (28) and GET_KVLIST_BY_NAMESPACE (219) body: string to string."""

    table: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> KVTable:
        r = Reader(obj, path)
        out: dict[str, str] = {}
        for k, v in r.map("table", {}).items():
            if not isinstance(k, str):
                raise BodyError(r.at("table"), f"key {k!r} is not a str")
            out[k] = v if isinstance(v, str) else fastjson.dumps(v).strip('"')
        return cls(out)


@dataclass(slots=True)
class GroupList:
    """QUERY_TOPIC_CONSUME_BY_WHO (300) body."""

    group_list: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"groupList": sorted(self.group_list)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> GroupList:
        return cls(Reader(obj, path).str_list("groupList", []))


@dataclass(slots=True)
class ResetOffsetBody:
    """INVOKE_BROKER_TO_RESET_OFFSET (222) answer and RESET_CONSUMER_CLIENT_OFFSET (220) request body."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"offsetTable": {mq: v for mq, v in _sorted_mq_items(self.offset_table)}}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ResetOffsetBody:
        r = Reader(obj, path)
        return cls(_mq_offsets(r.map("offsetTable", {}), r.at("offsetTable")))


def _mq_offsets(table: object, path: str) -> dict[MessageQueue, int]:
    """A Java ``Map<MessageQueue, Long>``: its keys as ``mq_from_key`` reads them, its offsets ints (a JSON
    reader may give them as text)."""
    if not isinstance(table, dict):
        raise BodyError(path, f"expected a map, got {type(table).__name__}")
    out: dict[MessageQueue, int] = {}
    for key, v in table.items():
        if type(v) is not int:
            cast = int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else None
            if cast is None:
                raise BodyError(path, f"expected an offset, got {type(v).__name__}")
            v = cast
        out[mq_from_key(key, path)] = v
    return out


@dataclass(slots=True)
class GetConsumerStatusBody:
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) answer of a client, its offsets of the topic in
    ``message_queue_table``; INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) answer of a broker, each client's
    offsets by client id in ``consumer_table``."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumerTable": {cid: dict(_sorted_mq_items(t)) for cid, t in sorted(self.consumer_table.items())},
            "messageQueueTable": dict(_sorted_mq_items(self.message_queue_table)),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> GetConsumerStatusBody:
        r = Reader(obj, path)
        where = r.at("consumerTable")
        consumers = {str(cid): _mq_offsets(t, f"{where}.{cid}") for cid, t in r.map("consumerTable", {}).items()}
        return cls(_mq_offsets(r.map("messageQueueTable", {}), r.at("messageQueueTable")), consumers)


@dataclass(slots=True)
class ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO (307) answer of a client: its settings (``properties``), subscriptions, queues
    (``mq_table``: MessageQueue JSON text -> ProcessQueueInfo map) and per-topic status, kept as maps."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[str, dict[str, Any]] = field(default_factory=dict)
    status_table: dict[str, dict[str, Any]] = field(default_factory=dict)
    jstack: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "properties": dict(self.properties),
            "subscriptionSet": [s.to_dict() for s in self.subscription_set],
            "mqTable": dict(self.mq_table),
            "statusTable": dict(self.status_table),
            "jstack": self.jstack,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumerRunningInfo:
        r = Reader(obj, path)
        props = {str(k): v if isinstance(v, str) else fastjson.dumps(v) for k, v in r.map("properties", {}).items()}
        return cls(
            props,
            r.objects("subscriptionSet", SubscriptionData, []),
            {str(k): v for k, v in r.map("mqTable", {}).items()},
            {str(k): v for k, v in r.map("statusTable", {}).items()},
            r.str("jstack", None),
        )


@dataclass(slots=True)
class QueueTimeSpan:
    """RocketMQ's QueueTimeSpan: one queue's store times against a group's position (ms; -1 for none)."""

    message_queue: MessageQueue
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0  # how long ago the group's next message was stored; 0 when it has none to consume

    def to_dict(self) -> dict[str, Any]:
        # fastjson also writes the class's getMinTimeStampStr()... getters: each time as a person reads it.
        return {"messageQueue": self.message_queue.to_dict(), "minTimeStamp": self.min_time_stamp,
                "minTimeStampStr": format_date_millis(self.min_time_stamp), "maxTimeStamp": self.max_time_stamp,
                "maxTimeStampStr": format_date_millis(self.max_time_stamp), "consumeTimeStamp": self.consume_time_stamp,
                "consumeTimeStampStr": format_date_millis(self.consume_time_stamp), "delayTime": self.delay_time}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueueTimeSpan:
        r = Reader(obj, path)
        return cls(MessageQueue.from_dict(r.map("messageQueue"), r.at("messageQueue")), r.int("minTimeStamp", 0),
                   r.int("maxTimeStamp", 0), r.int("consumeTimeStamp", 0), r.int("delayTime", 0))


@dataclass(slots=True)
class QueryConsumeTimeSpanBody:
    """QUERY_CONSUME_TIME_SPAN (303) body."""

    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"consumeTimeSpanSet": [t.to_dict() for t in self.consume_time_span_set]}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueryConsumeTimeSpanBody:
        return cls(Reader(obj, path).objects("consumeTimeSpanSet", QueueTimeSpan, []))


@dataclass(slots=True)
class QueryCorrectionOffsetBody:
    """QUERY_CORRECTION_OFFSET (308) answer: queue id -> offset (Java's Map<Integer, Long>, its keys unquoted)."""

    correction_offsets: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"correctionOffsets": dict(self.correction_offsets)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueryCorrectionOffsetBody:
        r = Reader(obj, path)
        out: dict[int, int] = {}
        for k, v in r.map("correctionOffsets", {}).items():
            try:
                out[int(k)] = int(v)
            except (TypeError, ValueError):
                raise BodyError(r.at("correctionOffsets"), f"expected queue id: offset, got {k!r}: {v!r}") from None
        return cls(out)


@dataclass(slots=True)
class ProducerInfo:
    """RocketMQ's ProducerInfo: one producer of GET_ALL_PRODUCER_INFO's ProducerTableInfo."""

    client_id: str
    remote_ip: str
    language: str = "JAVA"  # LanguageCode name
    version: int = 0
    last_update_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"clientId": self.client_id, "remoteIP": self.remote_ip, "language": self.language,
                "version": self.version, "lastUpdateTimestamp": self.last_update_timestamp}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ProducerInfo:
        r = Reader(obj, path)
        return cls(r.str("clientId", ""), r.str("remoteIP", ""), r.enum("language", LANGUAGE_NAMES, "JAVA"),
                   r.int("version", 0), r.int("lastUpdateTimestamp", 0))


@dataclass(slots=True)
class ProducerTableInfo:
    """GET_ALL_PRODUCER_INFO (328) body: producer group -> its producers."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"data": {g: [p.to_dict() for p in ps] for g, ps in self.data.items()}}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ProducerTableInfo:
        r = Reader(obj, path)
        out: dict[str, list[ProducerInfo]] = {}
        for group, producers in r.map("data", {}).items():
            at = f"{r.at('data')}.{group}"
            if not isinstance(group, str) or not isinstance(producers, list):
                raise BodyError(at, "expected a group name and a list of producers")
            out[group] = [ProducerInfo.from_dict(p, f"{at}[{i}]") for i, p in enumerate(producers)]
        return cls(out)


@dataclass(slots=True)
class ConsumeStatsList:
    """GET_BROKER_CONSUME_STATS (317) body: every subscription group's ConsumeStats, one a topic it has offsets of."""

    broker_addr: str = ""
    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    total_diff: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"brokerAddr": self.broker_addr,
                "consumeStatsList": [{g: [s.to_dict() for s in stats] for g, stats in one.items()}
                                     for one in self.consume_stats_list],
                "totalDiff": self.total_diff}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumeStatsList:
        r = Reader(obj, path)
        groups = r._d.get("consumeStatsList") or []
        if not isinstance(groups, list):
            raise BodyError(r.at("consumeStatsList"), "expected a list")
        out: list[dict[str, list[ConsumeStats]]] = []
        for i, one in enumerate(groups):
            at = f"{r.at('consumeStatsList')}[{i}]"
            if not isinstance(one, dict) or not all(isinstance(v, list) for v in one.values()):
                raise BodyError(at, "expected a map of group name to a list of ConsumeStats")
            out.append({g: [ConsumeStats.from_dict(s, f"{at}.{g}") for s in stats] for g, stats in one.items()})
        return cls(r.str("brokerAddr", ""), out, r.int("totalDiff", 0))


def language_name(code: int) -> str:
    """The LanguageCode's name a client's heartbeat gave as a number; OTHER for a number RocketMQ does not know."""
    return LANGUAGE_NAMES[code] if 0 <= code < len(LANGUAGE_NAMES) else "OTHER"
