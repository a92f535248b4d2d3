"""/metrics: RocketMQ 5.1's broker metrics and the store's own, in Prometheus' text format (prometheus_client).

Each scrape reads the cluster afresh through MQAdminExt: the brokers from the name server, each broker's runtime
info (GET_BROKER_RUNTIME_INFO: the store's offsets, dispatch lag, disk ratio, boot time), every subscription
group's consume stats (lag) and every topic's queue offsets. The traffic counters come from the brokers' own
statistics (BrokerStatsManager) when the broker runs in this process (`pocketmq dev`, tests); for a broker
elsewhere they are derived from offsets: messages in = the sum of its queues' max offsets, messages out = the
sum of the groups' committed offsets (bytes and sizes are not known there, so those families skip it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from pocketmq.broker.stats.broker_stats_manager import (
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    MESSAGE_SIZE_BOUNDS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.mix_all import DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX
from pocketmq.common.topic_validator import is_system_topic as _is_system_topic
from pocketmq.storage.flush_stats import FLUSH_LATENCY_BOUNDS

from .fanout import BrokerCalls, consume_stats_by_group
from .local import LocalBrokers

__all__ = ["CONTENT_TYPE_LATEST", "MetricsCollector"]

NODE = ("cluster", "node_type", "node_id")
NODE_TYPE = "broker"


@dataclass
class _Families:
    """The metric families one scrape fills."""

    messages_in: CounterMetricFamily
    messages_out: CounterMetricFamily
    throughput_in: CounterMetricFamily
    throughput_out: CounterMetricFamily
    message_size: HistogramMetricFamily
    lag: GaugeMetricFamily
    extra: list[Metric] = field(default_factory=list)

    @classmethod
    def new(cls) -> _Families:
        topic = (*NODE, "topic", "message_type")
        group = (*NODE, "topic", "consumer_group")
        return cls(
            CounterMetricFamily("rocketmq_messages_in", "Messages stored by the broker (sends).", labels=topic),
            CounterMetricFamily("rocketmq_messages_out", "Messages delivered to consumers (pulls).", labels=group),
            CounterMetricFamily("rocketmq_throughput_in", "Bytes of messages stored (commit-log records).",
                                labels=topic),
            CounterMetricFamily("rocketmq_throughput_out", "Bytes of messages delivered.", labels=group),
            HistogramMetricFamily("rocketmq_message_size", "Sizes of the messages stored, in bytes.",
                                  labels=topic),
            GaugeMetricFamily("rocketmq_consumer_lag_messages",
                              "Messages stored but not yet consumed by the group (broker offset - consumer "
                              "offset).", labels=(*group, "is_retry", "is_system")),
        )

    def all(self) -> list[Metric]:
        return [self.messages_in, self.messages_out, self.throughput_in, self.throughput_out, self.message_size,
                self.lag, *self.extra]


def _gauge(name: str, doc: str, labels: Sequence[str] = NODE) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


class _Static:
    """A collector that hands out one scrape's families."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


class MetricsCollector:
    def __init__(self, admin: MQAdminExt, local: LocalBrokers | None = None) -> None:
        self.admin = admin
        self.local = local or LocalBrokers()

    async def render(self) -> bytes:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Static(await self.families()))
        # On a thread: thousands of groups' lag are a megabyte of text, which would take the loop's time in one go (in
        # `pocketmq dev` the loop is the broker's).
        return await asyncio.to_thread(generate_latest, registry)

    async def families(self) -> list[Metric]:
        out = _Families.new()
        store = {
            "size": _gauge("pocketmq_commitlog_bytes", "Bytes of the commit log between its min and max offset."),
            "max": _gauge("pocketmq_commitlog_max_offset", "The commit log's max (next write) offset."),
            "dispatch": _gauge("rocketmq_storage_dispatch_behind_bytes",
                               "Commit-log bytes not yet dispatched into consume queues and the index."),
            "ratio": _gauge("pocketmq_commitlog_disk_ratio", "Used fraction of the commit log's disk (0..1)."),
            "reserve": _gauge("rocketmq_storage_message_reserve_time",
                              "Milliseconds since the oldest message in the store was stored."),
            "uptime": _gauge("pocketmq_broker_uptime_seconds", "Seconds since the broker started."),
            "flush_behind": _gauge("rocketmq_storage_flush_behind_bytes", "Commit-log bytes written, not flushed."),
        }
        flush = HistogramMetricFamily("pocketmq_flush_latency_seconds",
                                      "How long the commit log's flushes take.", labels=NODE)
        info = await self.admin.examine_broker_cluster_info()
        brokers: list[tuple[str, str, str]] = []  # (cluster, broker name, master address)
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                bd = info.broker_addr_table.get(name)
                addr = bd.broker_addrs.get(0) if bd is not None else None
                if addr is not None:
                    brokers.append((cluster, name, addr))
        calls = BrokerCalls()  # this scrape's: concurrent, and a broker that failed once is not asked again
        runtimes = await asyncio.gather(*(calls.ask(addr, partial(self.admin.fetch_broker_runtime_stats, addr))
                                          for _, _, addr in brokers))
        now_ms = time.time() * 1000
        for (cluster, name, addr), rt in zip(brokers, runtimes, strict=True):
            node = [cluster, NODE_TYPE, name]
            if rt:  # (a broker down or silent has no runtime info: no gauges)
                hi, lo = _int(rt, "commitLogMaxOffset"), _int(rt, "commitLogMinOffset")
                store["size"].add_metric(node, hi - lo)
                store["max"].add_metric(node, hi)
                store["dispatch"].add_metric(node, _int(rt, "dispatchBehindBytes"))
                with contextlib.suppress(ValueError):
                    store["ratio"].add_metric(node, float(rt.get("commitLogDiskRatio", "")))
                earliest = _int(rt, "earliestMessageTimeStamp")
                if earliest:
                    store["reserve"].add_metric(node, now_ms - earliest)
                boot = _int(rt, "bootTimestamp")
                if boot:
                    store["uptime"].add_metric(node, (now_ms - boot) / 1000)
            controller = self.local.by_address(addr)
            if controller is not None:
                self._local_traffic(out, node, controller)
                store_ = controller.store
                mfq = store_.commit_log.mapped_file_queue
                store["flush_behind"].add_metric(node, max(0, store_.get_max_phy_offset() - mfq.flushed_where))
                fs = store_.flush_stats
                flush.add_metric(node, _buckets(FLUSH_LATENCY_BOUNDS, list(fs.counts)), fs.sum_seconds)
        remote = [(cluster, name, addr) for cluster, name, addr in brokers if self.local.by_address(addr) is None]
        for samples in await asyncio.gather(*(self._remote_traffic([cluster, NODE_TYPE, name], addr, calls)
                                              for cluster, name, addr in remote)):
            for labels, total in samples:
                out.messages_in.add_metric(labels, total)
        await self._lag(out, brokers, calls)
        out.extra = [*store.values(), flush]
        return out.all()

    @staticmethod
    def _local_traffic(out: _Families, node: list[str], controller: Any) -> None:
        stats = controller.broker_stats_manager
        put_nums, put_size = stats.sets[TOPIC_PUT_NUMS], stats.sets[TOPIC_PUT_SIZE]
        for topic, item in _items(put_nums.items):
            labels = [*node, topic, _message_type(topic)]
            out.messages_in.add_metric(labels, item.value)
            out.throughput_in.add_metric(labels, put_size.total(topic))
        get_size = stats.sets[GROUP_GET_SIZE]
        for key, item in _items(stats.sets[GROUP_GET_NUMS].items):
            topic, _, group = key.partition("@")
            out.messages_out.add_metric([*node, topic, group], item.value)
            out.throughput_out.add_metric([*node, topic, group], get_size.total(key))
        for topic, counts in _items(stats.message_sizes):
            counts = list(counts)
            out.message_size.add_metric([*node, topic, _message_type(topic)],
                                        _buckets(MESSAGE_SIZE_BOUNDS, counts[:-1]), counts[-1])

    async def _remote_traffic(self, node: list[str], addr: str, calls: BrokerCalls) -> list[tuple[list[str], int]]:
        """messages_in of a broker elsewhere: (labels, the sum of its queues' max offsets) of each topic."""
        configs = await calls.ask(addr, partial(self.admin.get_all_topic_config, addr))
        if configs is None:
            return []
        topics = [t for t in sorted(configs.topic_config_table)
                  if not _is_system_topic(t) or t.startswith((RETRY_PREFIX, DLQ_PREFIX))]
        # Each topic's offsets from this broker alone: no route lookup, no other broker asked.
        tables = await asyncio.gather(*(calls.ask(addr, partial(self.admin.examine_topic_stats, t, addr))
                                        for t in topics))
        return [([*node, topic, _message_type(topic)],
                 sum(o.max_offset for mq, o in stats.offset_table.items() if mq.broker_name == node[2]))
                for topic, stats in zip(topics, tables, strict=True) if stats is not None]

    async def _lag(self, out: _Families, brokers: list[tuple[str, str, str]], calls: BrokerCalls) -> None:
        """Each master's groups' offsets on that master: one request a broker."""
        tables = await consume_stats_by_group(self.admin, calls, [addr for _, _, addr in brokers])
        found = [(cluster, group, stats) for (cluster, _, _), table in zip(brokers, tables, strict=True)
                 for group, listed in sorted((table or {}).items()) for stats in listed]
        for cluster, group, stats in sorted(found, key=lambda x: x[1]):
            lag: dict[tuple[str, str], int] = {}
            consumed: dict[tuple[str, str], int] = {}
            for mq, w in stats.offset_table.items():
                key = (mq.broker_name, mq.topic)
                lag[key] = lag.get(key, 0) + max(0, w.broker_offset - w.consumer_offset)
                consumed[key] = consumed.get(key, 0) + max(0, w.consumer_offset)
            for (broker, topic), n in sorted(lag.items()):
                node = [cluster, NODE_TYPE, broker]
                out.lag.add_metric([*node, topic, group, _flag(topic.startswith(RETRY_PREFIX)),
                                    _flag(_is_system_topic(topic))], n)
                if self.local.by_name(broker) is None:
                    out.messages_out.add_metric([*node, topic, group], consumed[(broker, topic)])


def _items(table: dict[str, Any]) -> list[tuple[str, Any]]:
    # The broker's event loop may add a key while this copies (the console can run on another thread).
    for _ in range(5):
        try:
            return sorted(table.items())
        except RuntimeError:
            continue
    return []


def _buckets(bounds: Sequence[float], counts: list[int]) -> list[tuple[str, float]]:
    """Per-bucket counts -> Prometheus' cumulative (le, count) pairs, +Inf last."""
    out: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip((*bounds, float("inf")), counts, strict=False):
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out


def _int(table: dict[str, str], key: str) -> int:
    try:
        return int(table.get(key, "0"))
    except ValueError:
        return 0


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _message_type(topic: str) -> str:
    # RocketMQ 5.1 takes it from the topic's attribute (Normal, FIFO, Delay, Transaction); 4.x topics have none.
    return "Normal"
