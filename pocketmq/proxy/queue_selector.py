"""Which queue a 5.x message goes to (SendMessageActivity.SendMessageQueueSelector): the message group's
consistent hash over the topic's writable queues, else round robin. The client's own queue_id is ignored, as
RocketMQ's proxy ignores it."""

from __future__ import annotations

import itertools

from pocketmq.common.java_hash import java_string_hash
from pocketmq.remoting.body import TopicRouteData
from pocketmq.remoting.codes import PermName

_MASK64 = (1 << 64) - 1


def consistent_hash(input_: int, buckets: int) -> int:
    """Guava's Hashing.consistentHash(long, int) (Lamping and Veach's jump hash with Guava's generator), so a
    message group lands on the queue RocketMQ's proxy would pick."""
    state = input_ & _MASK64
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & _MASK64
        top = state >> 33  # a non-negative int below 2^31
        next_ = int((candidate + 1) / ((top + 1) / 2.0**31))
        if 0 <= next_ < buckets:
            candidate = next_
        else:
            return candidate


def write_queues(route: TopicRouteData) -> list[tuple[str, int]]:
    """(broker name, queue id) of every writable master queue, brokers by name."""
    masters = {bd.broker_name for bd in route.broker_datas if 0 in bd.broker_addrs}
    queues: list[tuple[str, int]] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if PermName.is_writeable(qd.perm) and qd.broker_name in masters:
            queues.extend((qd.broker_name, i) for i in range(qd.write_queue_nums))
    return queues


class QueueSelector:
    def __init__(self) -> None:
        self._counter = itertools.count()

    def select(self, route: TopicRouteData, message_group: str | None) -> tuple[str, int] | None:
        queues = write_queues(route)
        if not queues:
            return None
        if message_group:
            return queues[consistent_hash(java_string_hash(message_group), len(queues))]
        return queues[next(self._counter) % len(queues)]
