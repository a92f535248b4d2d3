"""Structured Streaming reads: offsets are {"topic": {"broker": {"queueId": nextOffset}}} in Spark's checkpoint.

Spark keeps one long-lived Python process per query on the driver for initialOffset / latestOffset /
partitions / commit; that process holds one BrokerView. Tasks read with a fresh, pickled copy of this
reader (see read()), which carries options only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from .broker_view import BrokerView
from .offsets import EARLIEST, Offsets, from_json_dict, prorate, to_json_dict
from .options import SourceOptions
from .planning import given_offsets, plan_ranges, start_past_end, stream_end
from .reader import QueueRange, read_range

if TYPE_CHECKING:
    import pyarrow as pa


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._view: BrokerView | None = None
        self._target: Offsets | None = None  # availableNow: never read past what existed when it started
        self._latest: Offsets | None = None

    def __getstate__(self) -> dict:
        # Tasks get a pickled copy: options only, no connection and no driver-side state.
        return {"opts": self.opts, "schema": self.schema}

    def __setstate__(self, state: dict) -> None:
        StreamReader.__init__(self, state["opts"], state["schema"])

    @property
    def view(self) -> BrokerView:
        if self._view is None:
            self._view = BrokerView(self.opts.endpoints, self.opts.pull_timeout, self.opts.protocol,
                                    self.opts.credentials)
        return self._view

    def _latest_offsets(self) -> Offsets:
        queues = self.view.queues(self.opts.subscription)
        return self.view.max_offsets(queues)

    # --- driver side ---------------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """Where a new query starts (a restarted one starts from its checkpoint instead)."""
        opts, view = self.opts, self.view
        queues = view.queues(opts.subscription)
        # Offsets from a JSON may be past a queue's end (a timestamp, earliest or latest never are).
        json_offsets = opts.starting_timestamp is None and not isinstance(opts.starting_offsets, str)
        bounds = (view.min_offsets(queues), view.max_offsets(queues)) if json_offsets else None
        start = view.resolve(opts.starting_offsets, opts.starting_timestamp, queues, EARLIEST, "startingOffsets",
                             bounds)
        if bounds is not None:
            given = given_offsets(opts.starting_offsets, None, start, "startingOffsets", "startingTimestamp")
            start = start_past_end(start, bounds[1], given, opts.fail_on_data_loss)
        return to_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest_offsets()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json_dict(start, "start offset")
        latest = self._target if self._target is not None else self._latest_offsets()
        self._latest = latest
        unrouted = self.view.unrouted_max_offsets(sorted(set(begin) - set(latest)))
        end = stream_end(begin, latest, self.opts.fail_on_data_loss, unrouted)
        if isinstance(limit, ReadMaxRows):
            end = prorate(begin, end, limit.max_rows)
        return to_json_dict(end)

    def reportLatestOffset(self) -> dict | None:
        return to_json_dict(self._latest) if self._latest is not None else None

    def partitions(self, start: dict, end: dict) -> list[QueueRange]:
        ranges = plan_ranges(from_json_dict(start, "start offset"), from_json_dict(end, "end offset"),
                             self.opts.min_partitions, self.opts.max_records_per_partition)
        return [QueueRange.of(r) for r in ranges]

    def commit(self, end: dict) -> None:
        """Spark calls this lazily (a batch behind, or on the next run), so the group's offsets only mirror
        the checkpoint for dashboards; the checkpoint alone decides where the query resumes."""
        if self.opts.consumer_group:
            self.view.commit_to_group(self.opts.consumer_group, from_json_dict(end, "end offset"))

    def stop(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            view.close()

    # --- task side -----------------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.opts, self.schema, partition)  # type: ignore[arg-type]
