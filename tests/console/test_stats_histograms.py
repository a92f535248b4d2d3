"""The two histograms /metrics shows, counted where they happen: message sizes in BrokerStatsManager, flush
latencies in the store's FlushStats."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

from pocketmq.broker.stats import BrokerStatsManager  # noqa: E402
from pocketmq.broker.stats.broker_stats_manager import MESSAGE_SIZE_BOUNDS  # noqa: E402
from pocketmq.console.metrics import _buckets  # noqa: E402
from pocketmq.storage.flush_stats import FLUSH_LATENCY_BOUNDS, FlushStats  # noqa: E402


def test_message_sizes_fall_in_rocketmqs_buckets():
    stats = BrokerStatsManager("C")
    stats.inc_put("T", 1, 1024)  # le 1 KB (the bound itself is inside)
    stats.inc_put("T", 1, 1025)  # le 4 KB
    stats.inc_put("T", 4, 4 * 600_000)  # a batch of four 600 KB messages: le 1 MB
    stats.inc_put("T", 1, 5 * 1024 * 1024)  # overflow
    counts = stats.message_sizes["T"]
    assert len(MESSAGE_SIZE_BOUNDS) == 6
    assert counts[:-1] == [1, 1, 0, 4, 0, 0, 1]
    assert counts[-1] == 1024 + 1025 + 2_400_000 + 5 * 1024 * 1024
    cumulative = _buckets(MESSAGE_SIZE_BOUNDS, counts[:-1])
    assert cumulative[0] == ("1024.0", 1) and cumulative[-1] == ("+Inf", 7)
    stats.on_topic_deleted("T")
    assert "T" not in stats.message_sizes


def test_flush_latencies():
    fs = FlushStats()
    for seconds in (0.0001, 0.003, 0.003, 10.0):
        fs.record(seconds)
    assert fs.flushes == 4 and abs(fs.sum_seconds - 10.0061) < 1e-9
    cumulative = dict(_buckets(FLUSH_LATENCY_BOUNDS, fs.counts))
    assert cumulative["0.0005"] == 1 and cumulative["0.005"] == 3 and cumulative["5.0"] == 3
    assert cumulative["+Inf"] == 4
