"""The two histograms /metrics shows, counted where they happen: message sizes in BrokerMetrics, flush
latencies in the store's FlushStats."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

from pocketmq.broker.stats.broker_metrics import MESSAGE_SIZE_BOUNDS, BrokerMetrics  # noqa: E402
from pocketmq.common.topic_attributes import METRICS_DELAY as DELAY  # noqa: E402
from pocketmq.common.topic_attributes import METRICS_NORMAL as NORMAL  # noqa: E402
from pocketmq.console.metrics_local import buckets as _buckets  # noqa: E402
from pocketmq.storage.flush_stats import FLUSH_LATENCY_BOUNDS, FlushStats  # noqa: E402


def test_message_sizes_fall_in_rocketmqs_buckets():
    metrics = BrokerMetrics()
    metrics.sent("T", NORMAL, 1, 1024)  # le 1 KB (the bound itself is inside)
    metrics.sent("T", NORMAL, 1, 1025)  # le 4 KB
    metrics.sent("T", NORMAL, 4, 4 * 600_000)  # a batch of four 600 KB messages: one sample, le 1 MB
    metrics.sent("T", NORMAL, 1, 5 * 1024 * 1024)  # overflow
    metrics.sent("%RETRY%G", DELAY, 1, 100)  # a retry topic's send: not counted (RocketMQ 5's isRetryOrDlqTopic)
    row = metrics.messages_in[NORMAL]["T"]
    assert len(MESSAGE_SIZE_BOUNDS) == 6
    assert row[:2] == [7, 1024 + 1025 + 2_400_000 + 5 * 1024 * 1024]
    assert row[3:] == [1, 1, 0, 1, 0, 0, 1]
    assert row[2] == 1024 + 1025 + 600_000 + 5 * 1024 * 1024
    cumulative = _buckets(MESSAGE_SIZE_BOUNDS, row[3:])
    assert cumulative[0] == ("1024.0", 1) and cumulative[-1] == ("+Inf", 4)
    assert metrics.messages_in[DELAY] == {}


def test_flush_latencies():
    fs = FlushStats()
    for seconds in (0.0001, 0.003, 0.003, 10.0):
        fs.record(seconds)
    assert fs.flushes == 4 and abs(fs.sum_seconds - 10.0061) < 1e-9
    cumulative = dict(_buckets(FLUSH_LATENCY_BOUNDS, fs.counts))
    assert cumulative["0.0005"] == 1 and cumulative["0.005"] == 3 and cumulative["5.0"] == 3
    assert cumulative["+Inf"] == 4
