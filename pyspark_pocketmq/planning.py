"""From options and the brokers' offset ranges to the offsets a query reads: resolving "earliest" / "latest"
/ JSON / timestamps, the streaming end of a micro-batch, and what counts as data loss. Pure functions."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from .offsets import EARLIEST, LATEST, OffsetRange, Offsets, QueueRef, split_ranges
from .options import InvalidOptionError, OffsetSpec

log = logging.getLogger(__name__)


class DataLossError(RuntimeError):
    """Offsets a query should read are gone (deleted by retention, or the queue itself is gone)."""


def report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(
            f"{message}. Some data may have been lost: it was deleted before it was read, or the topic or "
            "queue was deleted. If you want the query to go on, set the option failOnDataLoss to false."
        )
    log.warning("%s; going on because failOnDataLoss is false", message)


def _where(q: QueueRef) -> str:
    return f"{q.topic}/{q.broker_name}/{q.queue_id}"


def resolve_offsets(
    spec: OffsetSpec, queues: Iterable[QueueRef], earliest: Mapping[QueueRef, int], latest: Mapping[QueueRef, int],
    default: int, name: str,
) -> Offsets:
    """Concrete offsets of ``queues`` for an "earliest" / "latest" / JSON spec; queues the JSON leaves out get
    ``default`` (EARLIEST or LATEST). A JSON naming a queue that does not exist is an error."""
    queues = list(queues)
    if spec == "earliest":
        return {q: earliest[q] for q in queues}
    if spec == "latest":
        return {q: latest[q] for q in queues}
    unknown = sorted(set(spec) - set(queues))
    if unknown:
        names = ", ".join(map(_where, unknown))
        raise InvalidOptionError(f"option '{name}' names queues that do not exist: {names}")
    out: Offsets = {}
    for q in queues:
        value = spec.get(q, default)
        out[q] = earliest[q] if value == EARLIEST else latest[q] if value == LATEST else value
    return out


def given_offsets(
    spec: OffsetSpec, timestamp_ms: int | None, resolved: Mapping[QueueRef, int], name: str, timestamp_name: str,
) -> dict[QueueRef, str]:
    """The offsets of ``resolved`` that an option gave, each with the words that name it ("startingOffsets 4",
    "startingTimestamp 1700000000000 (offset 4)"); queues that take theirs from the queue (earliest, latest,
    -2, -1) are left out."""
    if timestamp_ms is not None:
        return {q: f"{timestamp_name} {timestamp_ms} (offset {o})" for q, o in resolved.items()}
    if isinstance(spec, str):
        return {}
    return {q: f"{name} {o}" for q, o in spec.items() if o >= 0 and q in resolved}


def start_past_end(
    start: Mapping[QueueRef, int], latest: Mapping[QueueRef, int], given: Mapping[QueueRef, str], fail: bool,
) -> Offsets:
    """``start`` with every offset an option put past its queue's end moved to that end. Such an offset is data
    loss (Kafka's source reports "startingOffsets for ... was X but consumer reset to Y"): the queue never got
    that far, or was deleted and created again since the offset was taken."""
    out = dict(start)
    for q in sorted(given):
        if start[q] > latest[q]:
            report_data_loss(fail, f"{given[q]} is past the end of queue {_where(q)}, which ends at {latest[q]}")
            out[q] = latest[q]
    return out


def check_batch_offsets(
    start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], earliest: Mapping[QueueRef, int],
    latest: Mapping[QueueRef, int], start_given: Mapping[QueueRef, str], end_given: Mapping[QueueRef, str],
    fail: bool,
) -> Offsets:
    """The offsets a batch read starts from, once its ranges are checked as Kafka's source checks them (it fails
    a range whose beginning is after its end). A start after the end, both from the options, is an error in
    the options. A start an option put past its queue's end, or an end an option put before its queue's first
    offset, is data loss; with failOnDataLoss false that queue reads nothing."""
    for q in sorted(end):
        if q in start_given and q in end_given and start[q] > end[q]:
            raise InvalidOptionError(f"{start_given[q]} is after {end_given[q]} for {_where(q)}")
    out = start_past_end(start, latest, start_given, fail)
    for q in sorted(end):
        if out[q] > end[q]:  # the start is the queue's first offset: only an end from the options is below it
            what = end_given.get(q, f"the end offset {end[q]}")
            report_data_loss(fail, f"{what} is before the first offset {earliest[q]} of queue {_where(q)}")
            out[q] = end[q]
    return out


def stream_end(
    start: Mapping[QueueRef, int], latest: Mapping[QueueRef, int], fail_on_data_loss: bool,
    unrouted: Mapping[QueueRef, int | None] | None = None,
) -> Offsets:
    """The end of the next micro-batch before any read limit: every queue up to its latest offset.

    ``latest`` covers the queues the route names. A queue new since ``start`` reads from 0, i.e. its
    beginning. A queue of ``start`` the route leaves out keeps its offset and is taken up again when it
    returns, as Apache's consumers do: a broker that restarts unregisters, and its queues leave the route for
    a while. ``unrouted`` has what its broker says of such a queue (None: nobody to ask, as for a broker
    away). A queue that ends before where the query already is (deleted, perhaps created again) is data
    loss; with failOnDataLoss false the query goes on from its new end.
    """
    unrouted = unrouted or {}
    end: Offsets = {}
    for q in sorted(latest):
        if q in start and latest[q] < start[q]:
            report_data_loss(
                fail_on_data_loss, f"queue {_where(q)} now ends at {latest[q]}, before "
                f"offset {start[q]} already read (was it deleted and created again?)",
            )
        end[q] = latest[q]
    for q in sorted(set(start) - set(latest)):
        end[q] = start[q]
        broker_end = unrouted.get(q)
        if broker_end is not None and broker_end < start[q]:
            report_data_loss(
                fail_on_data_loss, f"queue {_where(q)} is gone: it left the route and "
                f"its broker says it ends at {broker_end}, before offset {start[q]} already read",
            )
            end[q] = broker_end
    return end


def plan_ranges(
    start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], min_partitions: int | None,
    max_records: int | None,
) -> list[OffsetRange]:
    """The pieces a read is split into: one per queue with offsets to read, more when asked for."""
    ranges = [OffsetRange(q, start.get(q, 0), end[q]) for q in sorted(end)]
    return split_ranges(ranges, min_partitions, max_records)
