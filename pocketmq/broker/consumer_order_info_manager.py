"""ConsumerOrderInfoManager: what an orderly pop handed out, per ``topic@group`` and queue; ``consumerOrderInfo.json``.

An orderly pop (``order=true``) writes no checkpoint. It records here the offsets it returned (the batch), and the
queue stays blocked for the group until every one of them is acked or the batch's invisible time is over. Then the
next pop reads from the group's offset again, which only an ack moves: the same messages come back, and the count
of times each offset was handed out (``orderCountInfo``) goes up by one. CHANGE_MESSAGE_INVISIBLETIME on such a
message sets its own next visible time here instead of writing a checkpoint. As RocketMQ's, the state lives in a
config file, so a restarted broker keeps a batch blocked and keeps its counts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from pocketmq.common.extra_info_util import build_queue_id_order_count_info, build_queue_offset_order_count_info

from .config import BrokerConfig
from .config_file import ConfigManager

_SEP = "@"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class OrderInfo:
    """RocketMQ's OrderInfo: the batch an orderly pop handed out from one queue, and which of it is acked."""

    pop_time: int
    invisible_time: int
    offsets: list[int]  # the batch's queue offsets, in order
    attempt_id: str | None = None
    commit_offset_bit: int = 0  # bit i: offsets[i] acked
    offset_next_visible_time: dict[int, int] = field(default_factory=dict)
    offset_consumed_count: dict[int, int] = field(default_factory=dict)  # times handed out before this batch
    last_consume_timestamp: int = 0

    def is_acked(self, i: int) -> bool:
        return bool(self.commit_offset_bit >> i & 1)

    def _visible_at(self, i: int) -> int:
        return self.offset_next_visible_time.get(self.offsets[i], self.pop_time + self.invisible_time)

    def lock_free_timestamp(self, now: int) -> int | None:
        """When the queue stops being blocked (ms); None when it is not blocked now."""
        for i in range(len(self.offsets)):
            if not self.is_acked(i) and now < self._visible_at(i):
                return self._visible_at(i)
        return None

    def need_block(self, attempt_id: str | None, now: int) -> bool:
        if not self.offsets or (self.attempt_id is not None and self.attempt_id == attempt_id):
            return False  # a client retrying the same pop (same attempt id) gets the batch again
        return self.lock_free_timestamp(now) is not None

    def next_offset(self) -> int:
        """The first offset not acked yet; past the batch when all are."""
        for i, offset in enumerate(self.offsets):
            if not self.is_acked(i):
                return offset
        return self.offsets[-1] + 1

    def merge_consumed_count(self, previous: OrderInfo) -> None:
        """Count the offsets this batch hands out again (RocketMQ's mergeOffsetConsumedCount)."""
        if previous.attempt_id is not None and previous.attempt_id == self.attempt_id:
            self.offset_consumed_count = dict(previous.offset_consumed_count)
            return
        before = set(previous.offsets)
        self.offset_consumed_count = {
            o: previous.offset_consumed_count.get(o, 0) + 1 for o in self.offsets if o in before
        }

    def to_dict(self) -> dict[str, Any]:
        # RocketMQ's short names; "o" holds the first offset, then each one's distance from it.
        first = self.offsets[0] if self.offsets else 0
        return {
            "popTime": self.pop_time, "i": self.invisible_time,
            "o": [first] + [o - first for o in self.offsets[1:]] if self.offsets else [],
            "ot": {str(k): v for k, v in self.offset_next_visible_time.items()},
            "oc": {str(k): v for k, v in self.offset_consumed_count.items()},
            "l": self.last_consume_timestamp, "cm": self.commit_offset_bit, "a": self.attempt_id,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OrderInfo:
        raw = [int(x) for x in d.get("o") or []]
        offsets = [raw[0]] + [raw[0] + x for x in raw[1:]] if raw else []
        return cls(
            int(d.get("popTime", 0)), int(d.get("i") or 0), offsets, d.get("a"), int(d.get("cm", 0)),
            {int(k): int(v) for k, v in (d.get("ot") or {}).items()},
            {int(k): int(v) for k, v in (d.get("oc") or {}).items()}, int(d.get("l", 0)),
        )


class ConsumerOrderInfoManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "consumerOrderInfo.json"))
        self.table: dict[str, dict[int, OrderInfo]] = {}

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{_SEP}{group}"

    def get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        queues = self.table.get(self.key(topic, group))
        return None if queues is None else queues.get(queue_id)

    def update(self, attempt_id: str | None, topic: str, group: str, queue_id: int, pop_time: int,
               invisible_time: int, offsets: list[int], order_count_info: list[str]) -> None:
        """Record a batch just popped and append its orderCountInfo entries (per offset, and the queue's minimum
        for the clients that read the count per queue)."""
        queues = self.table.setdefault(self.key(topic, group), {})
        info = OrderInfo(pop_time, invisible_time, list(offsets), attempt_id, last_consume_timestamp=_now_ms())
        previous = queues.get(queue_id)
        if previous is not None:
            info.merge_consumed_count(previous)
        queues[queue_id] = info
        counts = info.offset_consumed_count
        for offset, count in counts.items():
            build_queue_offset_order_count_info(order_count_info, topic, queue_id, offset, count)
        minimum = min(counts.values()) if counts and len(counts) == len(info.offsets) else 0
        build_queue_id_order_count_info(order_count_info, topic, queue_id, minimum)
        self.mark_changed()

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int) -> bool:
        info = self.get(topic, group, queue_id)
        return info is not None and info.need_block(attempt_id, _now_ms())

    def lock_free_timestamp(self, topic: str, group: str, queue_id: int) -> int | None:
        info = self.get(topic, group, queue_id)
        return None if info is None else info.lock_free_timestamp(_now_ms())

    def commit_and_next(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> int:
        """Ack ``offset`` of the batch popped at ``pop_time``: the group's next offset, -1 when the batch has no
        such offset, -2 when the handle is of an older batch."""
        info = self.get(topic, group, queue_id)
        if info is None:
            return offset + 1
        if not info.offsets:
            return -1
        if pop_time != info.pop_time:
            return -2
        try:
            i = info.offsets.index(offset)
        except ValueError:
            return -1
        info.commit_offset_bit |= 1 << i
        self.mark_changed()
        return info.next_offset()

    def update_next_visible_time(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                                 next_visible_time: int) -> bool:
        info = self.get(topic, group, queue_id)
        if info is None or pop_time != info.pop_time or offset not in info.offsets:
            return False
        info.offset_next_visible_time[offset] = next_visible_time
        self.mark_changed()
        return True

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        queues = self.table.get(self.key(topic, group))
        if queues is not None and queues.pop(queue_id, None) is not None:
            self.mark_changed()

    def remove_topic(self, topic: str) -> None:
        prefix = topic + _SEP
        for k in [k for k in self.table if k.startswith(prefix)]:
            del self.table[k]
            self.mark_changed()

    def encode(self) -> dict[str, Any]:
        return {"table": {k: {str(q): i.to_dict() for q, i in v.items()} for k, v in self.table.items()}}

    def decode(self, data: Any) -> None:
        table = data.get("table") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            raise ValueError("no table map")
        self.table = {k: {int(q): OrderInfo.from_dict(i) for q, i in v.items()} for k, v in table.items()}
