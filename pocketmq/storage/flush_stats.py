"""How long the commit log's flushes take: counts per latency bucket, for the console's
pocketmq_flush_latency_seconds histogram. Recorded by the flushing thread, read by anyone (a reader may see
a count one flush ahead of the sum, which a histogram scrape tolerates)."""

from __future__ import annotations

from bisect import bisect_left

# Upper bounds in seconds: msync of a few pages takes well under a millisecond on an SSD; a whole file, seconds.
FLUSH_LATENCY_BOUNDS = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)


class FlushStats:
    __slots__ = ("counts", "sum_seconds", "flushes", "last_seconds")

    def __init__(self) -> None:
        self.counts = [0] * (len(FLUSH_LATENCY_BOUNDS) + 1)  # the last one: slower than every bound
        self.sum_seconds = 0.0
        self.flushes = 0
        self.last_seconds = 0.0

    def record(self, seconds: float) -> None:
        self.counts[bisect_left(FLUSH_LATENCY_BOUNDS, seconds)] += 1
        self.sum_seconds += seconds
        self.flushes += 1
        self.last_seconds = seconds
