"""AckMsg / BatchAckMsg: acks in the revive log (tags ``ack`` and ``bAck``), as RocketMQ's JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .pop_check_point import PopRecordError, _load, merge_key


@dataclass(slots=True)
class AckMsg:
    """RocketMQ's AckMsg: an ``ack`` record, one popped message acked."""

    ack_offset: int  # ao: the acked message's queue offset (-1 in a batch ack)
    start_offset: int  # so: the checkpoint's start offset
    consumer_group: str  # c
    topic: str  # t
    queue_id: int  # q
    pop_time: int  # pt
    broker_name: str = ""  # bn

    def merge_key(self) -> str:
        return merge_key(self.topic, self.consumer_group, self.queue_id, self.start_offset, self.pop_time,
                         self.broker_name)

    @property
    def ack_offsets(self) -> list[int]:
        return [self.ack_offset]

    def to_dict(self) -> dict[str, Any]:
        return {"ao": self.ack_offset, "so": self.start_offset, "c": self.consumer_group, "t": self.topic,
                "q": self.queue_id, "pt": self.pop_time, "bn": self.broker_name}

    def encode(self) -> bytes:
        return json.dumps(self.to_dict(), separators=(",", ":")).encode()


@dataclass(slots=True)
class BatchAckMsg(AckMsg):
    """RocketMQ's BatchAckMsg: a ``bAck`` record, several messages of one pop acked."""

    ack_offset_list: list[int] = field(default_factory=list)  # aol

    @property
    def ack_offsets(self) -> list[int]:
        return self.ack_offset_list

    def to_dict(self) -> dict[str, Any]:
        d = AckMsg.to_dict(self)
        d["aol"] = self.ack_offset_list
        return d


def _field(obj: dict[str, Any], short: str, long: str, default: Any = None) -> Any:
    # RocketMQ reads both the short names and the long ones (alternateNames).
    if short in obj:
        return obj[short]
    if long in obj:
        return obj[long]
    if default is None:
        raise KeyError(short)
    return default


def decode_ack(data: bytes, batch: bool) -> AckMsg:
    obj = _load(data)
    try:
        args = (
            int(_field(obj, "ao", "ackOffset", -1)), int(_field(obj, "so", "startOffset")),
            str(_field(obj, "c", "consumerGroup")), str(_field(obj, "t", "topic")),
            int(_field(obj, "q", "queueId")), int(_field(obj, "pt", "popTime")),
            str(_field(obj, "bn", "brokerName", "")),
        )
        if not batch:
            return AckMsg(*args)
        offsets = _field(obj, "aol", "ackOffsetList", [])
        if not isinstance(offsets, list):
            raise TypeError("aol")
        return BatchAckMsg(*args, ack_offset_list=[int(o) for o in offsets])
    except (KeyError, TypeError, ValueError) as e:
        raise PopRecordError(f"bad ack {data[:80]!r}: {e}") from None
