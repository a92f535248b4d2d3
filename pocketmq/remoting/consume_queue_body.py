"""QUERY_CONSUME_QUEUE (321) body: consume-queue entries as the broker shows them to an admin (RocketMQ's
QueryConsumeQueueResponseBody and ConsumeQueueData). Same conventions as ``body``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .body import Reader
from .client_body import SubscriptionData


@dataclass(slots=True)
class ConsumeQueueData:
    """RocketMQ's ConsumeQueueData: one consume-queue entry as QUERY_CONSUME_QUEUE shows it (the extension's
    fields stay None: pocketmq's consume queues have no ConsumeQueueExt)."""

    physic_offset: int
    physic_size: int
    tags_code: int
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"physicOffset": self.physic_offset, "physicSize": self.physic_size,
                             "tagsCode": self.tags_code, "eval": self.eval}
        for key, value in (("extendDataJson", self.extend_data_json), ("bitMap", self.bit_map), ("msg", self.msg)):
            if value is not None:
                d[key] = value
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumeQueueData:
        r = Reader(obj, path)
        return cls(r.int("physicOffset", 0), r.int("physicSize", 0), r.int("tagsCode", 0),
                   r.str("extendDataJson", None), r.str("bitMap", None), r.bool("eval", False), r.str("msg", None))


@dataclass(slots=True)
class QueryConsumeQueueResponseBody:
    """QUERY_CONSUME_QUEUE (321) body."""

    max_queue_index: int = 0
    min_queue_index: int = 0
    queue_data: list[ConsumeQueueData] | None = None
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"maxQueueIndex": self.max_queue_index, "minQueueIndex": self.min_queue_index}
        if self.queue_data is not None:
            d["queueData"] = [q.to_dict() for q in self.queue_data]
        if self.subscription_data is not None:
            d["subscriptionData"] = self.subscription_data.to_dict()
        if self.filter_data is not None:
            d["filterData"] = self.filter_data
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueryConsumeQueueResponseBody:
        r = Reader(obj, path)
        sub = r.map("subscriptionData", None)
        return cls(r.int("maxQueueIndex", 0), r.int("minQueueIndex", 0), r.objects("queueData", ConsumeQueueData, None),
                   SubscriptionData.from_dict(sub, r.at("subscriptionData")) if sub is not None else None,
                   r.str("filterData", None))
