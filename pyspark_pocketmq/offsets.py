"""Offsets of a set of queues: the checkpoint's JSON form, the -2/-1 sentinels, rate limiting, and ranges.

A queue is (topic, brokerName, queueId); an offset is the next queue offset to read (an exclusive end).
Everything here is pure: no Spark, no sockets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

EARLIEST = -2
LATEST = -1


class QueueRef(NamedTuple):
    topic: str
    broker_name: str
    queue_id: int


Offsets = dict[QueueRef, int]


class OffsetFormatError(ValueError):
    """An offset JSON that is not {"topic": {"broker": {"queueId": offset}}}."""


def to_json_dict(offsets: Mapping[QueueRef, int]) -> dict[str, dict[str, dict[str, int]]]:
    """The nested form, built in sorted order (topic, broker, numeric queue id).

    Spark writes the dict with a plain ``json.dumps`` and compares offsets as JSON text, so the order of
    insertion is what makes the same position always serialise the same way.
    """
    out: dict[str, dict[str, dict[str, int]]] = {}
    for ref in sorted(offsets):
        out.setdefault(ref.topic, {}).setdefault(ref.broker_name, {})[str(ref.queue_id)] = int(offsets[ref])
    return out


def to_json(offsets: Mapping[QueueRef, int]) -> str:
    return json.dumps(to_json_dict(offsets))


def from_json_dict(obj: object, what: str = "offsets") -> Offsets:
    """Parse the nested form; keys arrive as strings after JSON, so queue ids are converted here."""
    if not isinstance(obj, Mapping):
        raise OffsetFormatError(f'{what}: expected {{"topic": {{"broker": {{"queueId": offset}}}}}}, got {obj!r}')
    out: Offsets = {}
    for topic, brokers in obj.items():
        if not isinstance(brokers, Mapping):
            raise OffsetFormatError(f"{what}: topic {topic!r} must map broker names to queues, got {brokers!r}")
        for broker, queues in brokers.items():
            if not isinstance(queues, Mapping):
                raise OffsetFormatError(f"{what}: {topic}/{broker} must map queue ids to offsets, got {queues!r}")
            for qid, offset in queues.items():
                try:
                    queue_id = int(qid)
                except (TypeError, ValueError):
                    raise OffsetFormatError(f"{what}: queue id {qid!r} of {topic}/{broker} is not an integer")
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise OffsetFormatError(f"{what}: offset {offset!r} of {topic}/{broker}/{qid} is not >= -2")
                out[QueueRef(str(topic), str(broker), queue_id)] = offset
    return out


def from_json(text: str, what: str = "offsets") -> Offsets:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise OffsetFormatError(f"{what}: not JSON ({e}): {text!r}")
    return from_json_dict(obj, what)


def prorate(start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], max_rows: int) -> Offsets:
    """Cap ``end`` so that at most ``max_rows`` offsets are read in all, shared in proportion to what each
    queue has pending (largest remainder, ties to the queue first in order): the shares add up to exactly
    ``max_rows`` when more is pending, and a queue never gets more than it has.

    A queue missing from ``start`` starts at 0 (a new queue is read from its beginning).
    """
    pending = {q: max(end[q] - start.get(q, 0), 0) for q in end}
    total = sum(pending.values())
    if total <= max_rows:
        return dict(end)
    queues = sorted(pending)
    shares = {q: pending[q] * max_rows // total for q in queues}
    left = max_rows - sum(shares.values())
    by_remainder = sorted(queues, key=lambda q: (-(pending[q] * max_rows % total), q))
    for q in by_remainder[:left]:
        shares[q] += 1
    return {q: (start.get(q, 0) + shares[q] if pending[q] else end[q]) for q in end}


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [start, end) of one queue."""

    queue: QueueRef
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def split_ranges(
    ranges: Iterable[OffsetRange], min_partitions: int | None = None, max_records: int | None = None
) -> list[OffsetRange]:
    """One piece per non-empty range, more where asked (Kafka's minPartitions / maxRecordsPerPartition).

    ``max_records`` caps every piece; ``min_partitions`` splits ranges in proportion to their size until
    there are at least that many pieces (an offset is never split, so fewer when there are fewer offsets).
    Pieces of one range have sizes that differ by at most one; the order is the ranges' order.
    """
    ranges = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in ranges)
    parts = [1] * len(ranges)
    if max_records:
        parts = [-(-r.size // max_records) for r in ranges]
    if min_partitions and sum(parts) < min_partitions and total:
        parts = [max(p, -(-r.size * min_partitions // total)) for p, r in zip(parts, ranges, strict=True)]
    out: list[OffsetRange] = []
    for r, n in zip(ranges, parts, strict=True):
        n = min(n, r.size)
        bounds = [r.start + r.size * i // n for i in range(n + 1)]
        out.extend(OffsetRange(r.queue, a, b) for a, b in zip(bounds, bounds[1:], strict=False))
    return out
