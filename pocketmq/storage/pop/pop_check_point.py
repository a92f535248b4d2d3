"""PopCheckPoint: what a pop read from one queue, written to the revive log (tag ``ck``) as RocketMQ's JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class PopRecordError(ValueError):
    """A revive-log record that is not a checkpoint or ack of this layout."""


@dataclass(slots=True)
class PopCheckPoint:
    """RocketMQ's PopCheckPoint: a ``ck`` record, and which of its messages are acked."""

    start_offset: int  # so: the group's offset the pop read from
    pop_time: int  # pt (ms)
    invisible_time: int  # it (ms)
    num: int  # n: how many messages
    queue_id: int  # q
    topic: str  # t: the topic read (a pop retry topic for retried messages)
    cid: str  # c: the consumer group
    broker_name: str = ""  # bn
    bit_map: int = 0  # bm: bit i set = the i-th message was acked
    revive_offset: int = 0  # ro: where this checkpoint lies in its revive queue (set when read back)
    queue_offset_diff: list[int] = field(default_factory=list)  # d: message i's offset - start_offset
    re_put_times: str | None = None  # rp: how often the revive wrote it anew, its message's put failing (a string)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def index_of_ack(self, ack_offset: int) -> int:
        """The message index of queue offset ``ack_offset``, -1 when the checkpoint has none."""
        if ack_offset < self.start_offset:
            return -1
        diff = ack_offset - self.start_offset
        if not self.queue_offset_diff:
            return diff if diff < self.num else -1
        try:
            return self.queue_offset_diff.index(diff)
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    def is_acked(self, index: int) -> bool:
        return bool(self.bit_map >> index & 1)

    @property
    def all_acked(self) -> bool:
        return self.bit_map == (1 << self.num) - 1

    def parse_re_put_times(self) -> int:
        """RocketMQ's parseRePutTimes: 0 when none, Byte.MAX_VALUE (127) when it is no number."""
        if self.re_put_times is None:
            return 0
        try:
            return int(self.re_put_times)
        except ValueError:
            return 127

    def merge_key(self) -> str:
        """RocketMQ's mergeKey: what an ack names to find its checkpoint."""
        return merge_key(self.topic, self.cid, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "so": self.start_offset, "pt": self.pop_time, "it": self.invisible_time, "bm": self.bit_map,
            "n": self.num, "q": self.queue_id, "t": self.topic, "c": self.cid, "ro": self.revive_offset,
            "d": self.queue_offset_diff, "bn": self.broker_name,
        }
        if self.re_put_times is not None:
            d["rp"] = self.re_put_times
        return d

    def encode(self) -> bytes:
        return json.dumps(self.to_dict(), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> PopCheckPoint:
        obj = _load(data)
        try:
            diff = obj.get("d") or []
            if not isinstance(diff, list):
                raise TypeError("d")
            return cls(
                int(obj["so"]), int(obj["pt"]), int(obj["it"]), int(obj["n"]), int(obj["q"]), str(obj["t"]),
                str(obj["c"]), str(obj.get("bn") or ""), int(obj.get("bm", 0)), int(obj.get("ro", 0)),
                [int(x) for x in diff], None if obj.get("rp") is None else str(obj["rp"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise PopRecordError(f"bad checkpoint {data[:80]!r}: {e}") from None


def merge_key(topic: str, cid: str, queue_id: int, start_offset: int, pop_time: int, broker_name: str) -> str:
    # RocketMQ joins the parts with nothing between them, so group G at queue 1 offset 13 and group G1 at queue 1
    # offset 3, popped in one millisecond, share a key, and one checkpoint took the other's place: its messages
    # were never revived. '@' is in no topic, group or broker name. (The key lives in memory only.)
    return f"{topic}@{cid}@{queue_id}@{start_offset}@{pop_time}@{broker_name}"


def _load(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise PopRecordError(f"not JSON: {data[:80]!r} ({e})") from None
    if not isinstance(obj, dict):
        raise PopRecordError(f"not a JSON object: {data[:80]!r}")
    return obj
