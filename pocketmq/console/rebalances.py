"""A group's rebalance history for its page: each client reports its own last rounds in its ConsumerRunningInfo
(pocketmq/client/impl/consumer/rebalance_history.py); the console merges them, newest first, and remembers what it
has seen so the rounds of a client that has since left stay on the page. Bounded: so many events per group, so
many groups.

A client's report is a peer's input: anything that is not the expected shape is skipped, never an error."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from pocketmq.client.impl.consumer.rebalance_history import REBALANCE_HISTORY_PROPERTY

MAX_EVENTS_PER_GROUP = 200
MAX_GROUPS = 1000
_LISTS = ("clients", "joined", "left", "gained", "lost", "held")


def parse_history(client_id: str, properties: dict[str, str]) -> list[dict[str, Any]]:
    """The events of one client's running info, each with its ``client``; [] for a client that reports none
    (an Apache RocketMQ client, or an older pocketmq)."""
    text = properties.get(REBALANCE_HISTORY_PROPERTY)
    if not text:
        return []
    try:
        raw = json.loads(text)
    except (ValueError, TypeError, RecursionError):  # (RecursionError: nested past the parser's depth)
        return []
    if not isinstance(raw, list):
        return []
    out = []
    for e in raw:
        if not isinstance(e, dict) or not isinstance(e.get("timestamp"), int) or not isinstance(e.get("topic"), str):
            continue
        event: dict[str, Any] = {"client": client_id, "timestamp": e["timestamp"], "topic": e["topic"],
                                 "strategy": str(e.get("strategy", ""))}
        for name in _LISTS:
            v = e.get(name, [])
            event[name] = [str(x) for x in v] if isinstance(v, list) else []
        out.append(event)
    return out


class RebalanceLog:
    def __init__(self, per_group: int = MAX_EVENTS_PER_GROUP, groups: int = MAX_GROUPS) -> None:
        self.per_group, self.max_groups = per_group, groups
        # group -> (client, timestamp, topic) -> event; a client reports the same event on every view
        self._groups: OrderedDict[str, dict[tuple[str, int, str], dict[str, Any]]] = OrderedDict()

    def merge(self, group: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Add what the clients reported now; returns the group's history, newest first."""
        if not events and group not in self._groups:
            return []  # (a page for a group nobody consumes remembers nothing)
        known = self._groups.pop(group, {})
        self._groups[group] = known
        while len(self._groups) > self.max_groups:
            self._groups.popitem(last=False)
        for e in events:
            known[(e["client"], e["timestamp"], e["topic"])] = e
        ordered = sorted(known.values(), key=lambda e: (e["timestamp"], e["client"], e["topic"]), reverse=True)
        if len(ordered) > self.per_group:
            for e in ordered[self.per_group:]:
                del known[(e["client"], e["timestamp"], e["topic"])]
            ordered = ordered[:self.per_group]
        return ordered
