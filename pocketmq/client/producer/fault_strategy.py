"""MQFaultStrategy-lite: queue selection, optionally steering away from slow or failing brokers (§9.2).

With ``send_latency_fault_enable`` off (RocketMQ's default) this is plain round-robin that avoids the broker
of the previous failed attempt. On, each send's latency makes its broker unavailable for a while (4.9.8's
table; a failure counts as 30 s, i.e. 600 s out), and selection prefers available brokers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pocketmq.remoting.client_body import MessageQueue

from ..impl.producer.topic_publish_info import TopicPublishInfo

LATENCY_MAX = (0.05, 0.1, 0.55, 1.0, 2.0, 3.0, 15.0)  # seconds
NOT_AVAILABLE_DURATION = (0.0, 0.0, 30.0, 60.0, 120.0, 180.0, 600.0)
ISOLATION_LATENCY = 30.0


def compute_not_available_duration(latency: float) -> float:
    for bound, duration in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION), strict=True):
        if latency >= bound:
            return duration
    return 0.0


@dataclass(slots=True)
class FaultItem:
    """RocketMQ's FaultItem: a broker's last send latency and when it is available again."""

    name: str
    current_latency: float
    start_timestamp: float  # available again from this (clock) time


class LatencyFaultTolerance:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._items: dict[str, FaultItem] = {}
        self._which_item_worst = 0

    def update_fault_item(self, name: str, current_latency: float, not_available_duration: float) -> None:
        self._items[name] = FaultItem(name, current_latency, self._clock() + not_available_duration)

    def is_available(self, name: str) -> bool:
        item = self._items.get(name)
        return item is None or self._clock() >= item.start_timestamp

    def remove(self, name: str) -> None:
        self._items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker from the better half of the known ones (available first, then faster, then sooner)."""
        if not self._items:
            return None
        now = self._clock()
        ranked = sorted(
            self._items.values(),
            key=lambda i: (now < i.start_timestamp, i.current_latency, i.start_timestamp),
        )
        half = len(ranked) // 2
        if half <= 0:
            return ranked[0].name
        self._which_item_worst += 1
        return ranked[self._which_item_worst % half].name


class MQFaultStrategy:
    def __init__(self, send_latency_fault_enable: bool = False, clock: Callable[[], float] = time.monotonic):
        self.send_latency_fault_enable = send_latency_fault_enable
        self.latency_fault_tolerance = LatencyFaultTolerance(clock)

    def select_one_message_queue(self, tp: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue | None:
        if not self.send_latency_fault_enable:
            return tp.select_one_message_queue(last_broker_name)
        queues = tp.message_queue_list
        if not queues:
            return None
        index = tp.next_index()
        for i in range(len(queues)):
            mq = queues[(index + i) % len(queues)]
            if self.latency_fault_tolerance.is_available(mq.broker_name):
                return mq
        not_best = self.latency_fault_tolerance.pick_one_at_least()
        if not_best is not None:
            write_queue_nums = tp.get_queue_id_by_broker(not_best)
            if write_queue_nums > 0:
                # Java takes a queue from the round-robin first and then rewrites it with a second turn of the
                # index, so this path moves the index on by two; the next send's queue depends on it.
                tp.next_index()
                return MessageQueue(queues[0].topic, not_best, tp.next_index() % write_queue_nums)
            self.latency_fault_tolerance.remove(not_best)
        return tp.select_one_message_queue()

    def update_fault_item(self, broker_name: str, current_latency: float, isolation: bool) -> None:
        if self.send_latency_fault_enable:
            latency = ISOLATION_LATENCY if isolation else current_latency
            self.latency_fault_tolerance.update_fault_item(
                broker_name, current_latency, compute_not_available_duration(latency)
            )
