"""A consumer's own record of its rebalances, newest last, in a bounded ring, reported to tools in its
ConsumerRunningInfo.

RocketMQ logs a rebalance's outcome and keeps nothing; pocketmq keeps the last rounds that changed something for
this client (queues taken or given up, or the group's members changed) so a console can show why a queue moved
and when, including changes that happened between two looks at the group. The ring travels as one JSON text
under the property REBALANCE_HISTORY_PROPERTY: ConsumerRunningInfo.properties is a string map (a Java
Properties), and RocketMQ's tools print or ignore keys they do not know.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from pocketmq.remoting.client_body import MessageQueue

REBALANCE_HISTORY_PROPERTY = "pocketmqRebalanceHistory"
MAX_REBALANCE_HISTORY = 64  # rounds kept per consumer; the oldest goes first


def queue_name(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


@dataclass(slots=True)
class RebalanceEvent:
    """One rebalance round of one topic that changed this client's queues or saw the group's members change."""

    timestamp: int  # epoch ms
    topic: str
    strategy: str
    clients: list[str]  # the group's client ids the round split the queues among (sorted; [] broadcasting)
    joined: list[str]  # client ids in this round and not in the previous one (this client itself, at first)
    left: list[str]  # client ids in the previous round and not in this one
    gained: list[str]  # queues taken this round, as "broker:queueId"
    lost: list[str]  # queues given up this round
    held: list[str] = field(default_factory=list)  # the topic's queues this client holds after the round


class RebalanceHistory:
    def __init__(self, capacity: int = MAX_REBALANCE_HISTORY) -> None:
        self.events: deque[RebalanceEvent] = deque(maxlen=capacity)
        self._last_clients: dict[str, list[str]] = {}  # topic -> the client ids of its previous round

    def record(self, client_id: str, topic: str, strategy: str, clients: list[str],
               before: Iterable[MessageQueue], after: Iterable[MessageQueue]) -> RebalanceEvent | None:
        """Note a round; returns the event, or None when nothing changed for this client (not kept)."""
        before_set, after_set = set(before), set(after)
        previous = self._last_clients.get(topic)
        self._last_clients[topic] = clients
        if previous is None:
            joined, left = [client_id] if clients else [], []
        else:
            joined = sorted(set(clients) - set(previous))
            left = sorted(set(previous) - set(clients))
        if before_set == after_set and not joined and not left:
            return None
        event = RebalanceEvent(
            timestamp=int(time.time() * 1000),
            topic=topic,
            strategy=strategy,
            clients=list(clients),
            joined=joined,
            left=left,
            gained=_names(after_set - before_set),
            lost=_names(before_set - after_set),
            held=_names(after_set),
        )
        self.events.append(event)
        return event

    def to_json(self) -> str:
        return json.dumps([asdict(e) for e in self.events], separators=(",", ":"))


def _names(mqs: set[MessageQueue]) -> list[str]:
    return [queue_name(mq) for mq in sorted(mqs, key=lambda q: (q.broker_name, q.queue_id))]
