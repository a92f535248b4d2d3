"""RocketMQ's remoting.protocol.admin bodies: TopicStatsTable (GET_TOPIC_STATS_INFO) of TopicOffsets and
ConsumeStats (GET_CONSUME_STATS) of OffsetWrappers, and the MessageQueue map keys they and the other admin bodies
read (admin_body.py's docstring says how Java's object keys travel)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import fastjson
from .body import Reader
from .client_body import MessageQueue
from .errors import BodyError


def mq_from_key(key: object, path: str) -> MessageQueue:
    if isinstance(key, MessageQueue):
        return key
    if not isinstance(key, str):
        raise BodyError(path, f"expected a MessageQueue key, got {type(key).__name__}")
    try:
        obj = fastjson.loads(key)
    except fastjson.JsonSyntaxError as e:
        raise BodyError(path, f"MessageQueue key is not JSON ({e})") from None
    return MessageQueue.from_dict(obj, path)


def _mq_map(r: Reader, key: str) -> dict[MessageQueue, Any]:
    return {mq_from_key(k, r.at(key)): v for k, v in r.map(key, {}).items()}


def _sorted_mq_items(table: dict[MessageQueue, Any]) -> list[tuple[MessageQueue, Any]]:
    return sorted(table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id))


@dataclass(slots=True)
class TopicOffset:
    """RocketMQ's TopicOffset: one queue of a TopicStatsTable."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"minOffset": self.min_offset, "maxOffset": self.max_offset,
                "lastUpdateTimestamp": self.last_update_timestamp}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicOffset:
        r = Reader(obj, path)
        return cls(r.int("minOffset", 0), r.int("maxOffset", 0), r.int("lastUpdateTimestamp", 0))


@dataclass(slots=True)
class TopicStatsTable:
    """GET_TOPIC_STATS_INFO (202) body."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"offsetTable": {mq: v.to_dict() for mq, v in _sorted_mq_items(self.offset_table)}}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicStatsTable:
        r = Reader(obj, path)
        return cls({mq: TopicOffset.from_dict(v, r.at("offsetTable")) for mq, v in _mq_map(r, "offsetTable").items()})


@dataclass(slots=True)
class OffsetWrapper:
    """RocketMQ's OffsetWrapper: one queue of a ConsumeStats, the broker's offset against the group's. 5.x's adds
    the offset the group pulled up to (pullOffset; 5.x's consumerProgress prints it less the consumer offset as
    #Inflight); 4.x's has none, and its tools ignore it."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None  # (None: a 4.x body, without the field)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"brokerOffset": self.broker_offset, "consumerOffset": self.consumer_offset,
                               "lastTimestamp": self.last_timestamp}
        if self.pull_offset is not None:
            out["pullOffset"] = self.pull_offset
        return out

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> OffsetWrapper:
        r = Reader(obj, path)
        return cls(r.int("brokerOffset", 0), r.int("consumerOffset", 0), r.int("lastTimestamp", 0),
                   r.int("pullOffset", 0) if "pullOffset" in r._d else None)


@dataclass(slots=True)
class ConsumeStats:
    """GET_CONSUME_STATS (208) body."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "offsetTable": {mq: v.to_dict() for mq, v in _sorted_mq_items(self.offset_table)},
            "consumeTps": float(self.consume_tps),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumeStats:
        r = Reader(obj, path)
        tps = r._d.get("consumeTps", 0.0)
        if isinstance(tps, str):
            try:
                tps = float(tps)
            except ValueError:
                raise BodyError(r.at("consumeTps"), "is not a number") from None
        if type(tps) is bool or not isinstance(tps, int | float):
            raise BodyError(r.at("consumeTps"), f"expected a number, got {type(tps).__name__}")
        table = {mq: OffsetWrapper.from_dict(v, r.at("offsetTable")) for mq, v in _mq_map(r, "offsetTable").items()}
        return cls(table, float(tps))
