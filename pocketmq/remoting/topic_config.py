"""RocketMQ's TopicConfig, the DataVersion of a broker's topic table and the TopicConfigSerializeWrapper that
carries both (broker -> name server, and the admin's topic commands)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .body_codec import Reader, now_millis
from .codes import PermName
from .errors import BodyError


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
        # (Java's field defaults: a version without its timestamp is one of now, which no version held equals)
        timestamp = r.int("timestamp", None)
        return cls(now_millis() if timestamp is None else timestamp, r.int("counter", 0))


TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")  # TopicFilterType, by ordinal


@dataclass(slots=True)
class TopicConfig:
    """RocketMQ's TopicConfig: one topic of a broker's topic table."""

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

    def __str__(self) -> str:
        """TopicConfig.toString, as remarks and mqadmin's updateTopic print it (with RocketMQ 5's attributes when
        there are some)."""
        shown = (", attributes={" + ", ".join(f"{k}={v}" for k, v in self.attributes.items()) + "}"
                 if self.attributes else "")
        return (f"TopicConfig [topicName={self.topic_name}, readQueueNums={self.read_queue_nums}, "
                f"writeQueueNums={self.write_queue_nums}, perm={PermName.perm_to_string(self.perm)}, "
                f"topicFilterType={self.topic_filter_type}, topicSysFlag={self.topic_sys_flag}, "
                f"order={'true' if self.order else 'false'}{shown}]")

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
            read_queue_nums=r.int32("readQueueNums", 16),
            write_queue_nums=r.int32("writeQueueNums", 16),
            perm=r.int32("perm", PermName.PERM_READ | PermName.PERM_WRITE),
            topic_filter_type=r.enum("topicFilterType", TOPIC_FILTER_TYPES, "SINGLE_TAG"),
            topic_sys_flag=r.int32("topicSysFlag", 0),
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
            # (Java's field default, a new DataVersion() of now: a registration without one is always a change)
            data_version=DataVersion.from_dict(dv, r.at("dataVersion")) if dv is not None else DataVersion(),
        )
