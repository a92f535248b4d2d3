"""Batch reads: the planner turns options into queue ranges; each Spark task pulls one range.

Runs in Spark's Python workers. Readers and partitions are pickled from the planner to the tasks, so they
hold options and offsets only; every read opens its own connection and closes it when done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from pocketmq.client import PullConsumer, PullResult, PullStatus
from pocketmq.remoting.event_loop import loop_factory

from .broker_view import READER_GROUP, BrokerView, private_instance, to_mq
from .offsets import EARLIEST, LATEST, OffsetRange, QueueRef
from .options import SourceOptions, client_credentials
from .planning import check_batch_offsets, given_offsets, plan_ranges, report_data_loss
from .schema import BatchBuilder, arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

    from pocketmq.common.message import MessageExt

ROWS_PER_BATCH = 4096  # rows per Arrow batch handed to Spark


@dataclass(frozen=True)
class QueueRange(InputPartition):
    """Offsets [start, end) of one queue: what one Spark task reads."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @classmethod
    def of(cls, r: OffsetRange) -> QueueRange:
        return cls(r.queue.topic, r.queue.broker_name, r.queue.queue_id, r.start, r.end)

    @property
    def queue(self) -> QueueRef:
        return QueueRef(self.topic, self.broker_name, self.queue_id)


# The task drives its client's event loop itself, in its own thread (asyncio.Runner), rather than through
# SyncPullConsumer's loop thread: with two threads, every pull crossed threads twice (run_coroutine_threadsafe,
# a future's condition) and the thread turning rows into columns held the GIL while the loop thread waited to
# read an answer. bench/spark.py: see docs/spark.md, Performance.
# The client does not busy-poll (ClientConfig.busy_poll): Spark's task workers share the cores with the JVM, each
# other and often the broker, and a task spinning while its pull is answered takes CPU they need (reads went
# from 48,000-51,000 to 63,000-68,000 rows/s on 2 cores when it stopped). The writer keeps it: its sends are
# answered while it builds the next ones, and without it writes fell from ~84,000 to ~56,000 rows/s.


def read_range(opts: SourceOptions, schema: StructType, part: QueueRange) -> Iterator[pa.RecordBatch]:
    """Pull [start, end) of one queue as Arrow batches; the same range always gives the same rows.

    One pull is always in flight ahead of the one being turned into rows, so the broker works on the next
    answer meanwhile. Offsets that are gone (before the queue's min offset, or past its end) and, when every
    tag is read, the offsets the broker skips (deleted data) are data loss, handled as failOnDataLoss says.
    """
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        consumer = PullConsumer(READER_GROUP, opts.endpoints, instance_name=private_instance("reader"),
                                consumer_pull_timeout=opts.pull_timeout, busy_poll=0.0, protocol=opts.protocol,
                                **client_credentials(opts.credentials))
        runner.run(consumer.start())
        batches = _read_batches(consumer, opts, schema, part)
        try:
            while True:
                try:
                    batch = runner.run(anext(batches))
                except StopAsyncIteration:
                    return
                yield batch
        finally:
            runner.run(batches.aclose())
            runner.run(consumer.shutdown())


async def _read_batches(consumer: PullConsumer, opts: SourceOptions, schema: StructType, part: QueueRange
                        ) -> AsyncGenerator[pa.RecordBatch, None]:
    builder = BatchBuilder(arrow_schema(schema), part.broker_name)
    mq = to_mq(part.queue)
    fail = opts.fail_on_data_loss
    every_tag = opts.sub_expression == "*"
    where = f"{part.topic}/{part.broker_name}/{part.queue_id}"

    def pull(offset: int) -> asyncio.Task[PullResult] | None:
        size = min(opts.pull_batch_size, part.end - offset)
        return asyncio.ensure_future(consumer.pull(mq, opts.sub_expression, offset, size)) if size > 0 else None

    offset = part.start
    pending = pull(offset)
    try:
        while pending is not None:
            result = await pending
            following = result.next_begin_offset
            gone = result.pull_status in (PullStatus.NO_NEW_MSG, PullStatus.OFFSET_ILLEGAL)
            if gone and not (offset < following < part.end and offset < result.max_offset):
                report_data_loss(fail, f"{where}: offsets {offset}..{part.end - 1} are gone "
                                       f"(the queue now holds {result.min_offset}..{result.max_offset - 1})")
                break
            if following <= offset:
                raise RuntimeError(f"{where}: the broker did not move past offset {offset}")
            pending = pull(following)
            expected = following if gone else offset
            if gone:
                report_data_loss(fail, f"{where}: offsets {offset}..{following - 1} are gone")
            msgs = result.msg_found_list
            if msgs and msgs[-1].queue_offset >= part.end:
                msgs = [m for m in msgs if m.queue_offset < part.end]
            if every_tag:
                _check_contiguous(fail, where, msgs, expected, min(following, part.end))
            builder.add(msgs)
            offset = following
            if len(builder) >= ROWS_PER_BATCH:
                yield builder.flush()
        if len(builder):
            yield builder.flush()
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending


def _check_contiguous(fail: bool, where: str, msgs: list[MessageExt], expected: int, stop: int) -> None:
    """Reports the offsets in [expected, stop) that no message holds: with every tag read (a tag filter skips
    offsets on purpose), such a hole is data the broker no longer has."""
    for m in msgs:
        if m.queue_offset > expected:
            report_data_loss(fail, f"{where}: offsets {expected}..{m.queue_offset - 1} are gone")
        expected = m.queue_offset + 1
    if expected < stop:
        report_data_loss(fail, f"{where}: offsets {expected}..{stop - 1} are gone")


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> list[QueueRange]:
        opts = self.opts
        with BrokerView(opts.endpoints, opts.pull_timeout, opts.protocol, opts.credentials) as view:
            queues = view.queues(opts.subscription, named_topics_exist=True)
            bounds = view.min_offsets(queues), view.max_offsets(queues)
            start = view.resolve(opts.starting_offsets, opts.starting_timestamp, queues, EARLIEST,
                                 "startingOffsets", bounds)
            end = view.resolve(opts.ending_offsets, opts.ending_timestamp, queues, LATEST, "endingOffsets", bounds)
        # The read is of the queues as they were when their ends were read: a time after every message resolves to
        # the queue's end asked again, which a message stored meanwhile puts past them (not data loss).
        if opts.starting_timestamp is not None:
            start = {q: min(o, bounds[1][q]) for q, o in start.items()}
        if opts.ending_timestamp is not None:
            end = {q: min(o, bounds[1][q]) for q, o in end.items()}
        start = check_batch_offsets(
            start, end, *bounds,
            given_offsets(opts.starting_offsets, opts.starting_timestamp, start, "startingOffsets",
                          "startingTimestamp"),
            given_offsets(opts.ending_offsets, opts.ending_timestamp, end, "endingOffsets", "endingTimestamp"),
            opts.fail_on_data_loss,
        )
        ranges = plan_ranges(start, end, opts.min_partitions, opts.max_records_per_partition)
        return [QueueRange.of(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, QueueRange):
            return iter(())  # Spark plans one empty partition when there are none
        return read_range(self.opts, self.schema, partition)
