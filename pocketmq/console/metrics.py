"""/metrics: RocketMQ 5's broker metrics (its Prometheus exporter's names, labels and counting rules) and the
store's own, in Prometheus' text format (prometheus_client).

Each scrape reads the cluster afresh through MQAdminExt: the brokers from the name server, each broker's runtime
info (GET_BROKER_RUNTIME_INFO: the store's offsets, dispatch lag, disk ratio, boot time), every subscription
group's consume stats (lag) and every topic's queue offsets. The traffic counters come from the broker's own
BrokerMetrics when the broker runs in this process (`pocketmq dev`, tests); for a broker elsewhere they are
derived from offsets: messages in = the sum of its queues' max offsets, messages out = the sum of the groups'
committed offsets (bytes and sizes are not known there, so those families skip it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from pocketmq.broker.stats.broker_metrics import is_system
from pocketmq.broker.stats.broker_metrics import is_system_topic as _apache_system_topic
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.mix_all import DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX
from pocketmq.common.pop_ack_constants import parse_normal_topic
from pocketmq.common.topic_attributes import METRICS_NORMAL
from pocketmq.common.topic_validator import is_system_topic as _is_system_topic
from pocketmq.storage.flush_stats import FLUSH_LATENCY_BOUNDS

from .fanout import BrokerCalls, consume_stats_by_group
from .local import LocalBrokers
from .metrics_local import STORAGE_VALUES, Families, buckets, flag, local_storage, local_traffic, storage_gauge

__all__ = ["CONTENT_TYPE_LATEST", "MetricsCollector"]

NODE = ("cluster", "node_type", "node_id")
NODE_TYPE = "broker"


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
        out = Families.new()
        store = {
            "size": _gauge("pocketmq_commitlog_bytes", "Bytes of the commit log between its min and max offset."),
            "max": _gauge("pocketmq_commitlog_max_offset", "The commit log's max (next write) offset."),
            "dispatch": storage_gauge("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes"),
            "ratio": _gauge("pocketmq_commitlog_disk_ratio", "Used fraction of the commit log's disk (0..1)."),
            "reserve": storage_gauge("rocketmq_storage_message_reserve_time_milliseconds",
                                     "Broker message reserve time"),
            "uptime": _gauge("pocketmq_broker_uptime_seconds", "Seconds since the broker started."),
            "flush_behind": storage_gauge("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes"),
            "storage_size": storage_gauge("rocketmq_storage_size_bytes", "Broker storage size"),
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
        for (cluster, name, addr), rt in zip(brokers, runtimes, strict=True):
            node = [cluster, NODE_TYPE, name]
            if rt:  # (a broker down or silent has no runtime info: no gauges)
                _runtime_gauges(store, node, rt)
            controller = self.local.by_address(addr)
            if controller is not None:
                local_traffic(out, node, controller)
                local_storage(store, node, controller)
                fs = controller.store.flush_stats
                flush.add_metric(node, buckets(FLUSH_LATENCY_BOUNDS, list(fs.counts)), fs.sum_seconds)
        remote = [(cluster, name, addr) for cluster, name, addr in brokers if self.local.by_address(addr) is None]
        for samples in await asyncio.gather(*(self._remote_traffic([cluster, NODE_TYPE, name], addr, calls)
                                              for cluster, name, addr in remote)):
            for labels, total in samples:
                out.messages_in.add_metric(labels, total)
        await self._lag(out, brokers, calls)
        out.extra = [*store.values(), flush]
        return out.all()

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
        return [([*node, topic, METRICS_NORMAL, flag(_apache_system_topic(topic))],
                 sum(o.max_offset for mq, o in stats.offset_table.items() if mq.broker_name == node[2]))
                for topic, stats in zip(topics, tables, strict=True) if stats is not None]

    async def _lag(self, out: Families, brokers: list[tuple[str, str, str]], calls: BrokerCalls) -> None:
        """Each master's groups' offsets on that master: one request a broker. As RocketMQ 5's
        ConsumerLagCalculator: a queue the group never committed lags nothing (its offset is taken to be the
        broker's; only a broker of this process tells that apart from a committed 0), the group's own retry topic
        is left out, and a POP retry topic's backlog is the is_retry row of the topic it retries."""
        tables = await consume_stats_by_group(self.admin, calls, [addr for _, _, addr in brokers])
        found = [(cluster, group, stats) for (cluster, _, _), table in zip(brokers, tables, strict=True)
                 for group, listed in sorted((table or {}).items()) for stats in listed]
        for cluster, group, stats in sorted(found, key=lambda x: x[1]):
            lag: dict[tuple[str, str, bool], int] = {}
            consumed: dict[tuple[str, str], int] = {}
            for mq, w in stats.offset_table.items():
                topic = parse_normal_topic(mq.topic, group) if mq.topic.startswith(RETRY_PREFIX) else mq.topic
                if topic.startswith(RETRY_PREFIX):
                    continue
                retry = topic != mq.topic
                key = (mq.broker_name, topic, retry)
                lag[key] = lag.get(key, 0) + self._queue_lag(group, mq, w.broker_offset, w.consumer_offset)
                if not retry:
                    consumed[key[:2]] = consumed.get(key[:2], 0) + max(0, w.consumer_offset)
            for (broker, topic, retry), n in sorted(lag.items()):
                node = [cluster, NODE_TYPE, broker]
                system = flag(is_system(topic, group))
                out.lag.add_metric([*node, topic, group, flag(retry), system], n)
                if not retry and self.local.by_name(broker) is None:
                    out.messages_out.add_metric([*node, topic, group, system], consumed[(broker, topic)])

    def _queue_lag(self, group: str, mq: Any, broker_offset: int, consumer_offset: int) -> int:
        controller = self.local.by_name(mq.broker_name)
        if controller is not None and controller.consumer_offset_manager.query_offset(group, mq.topic,
                                                                                      mq.queue_id) < 0:
            return 0
        return max(0, broker_offset - consumer_offset)


def _runtime_gauges(store: dict[str, GaugeMetricFamily], node: list[str], rt: dict[str, str]) -> None:
    """The store's gauges a broker's runtime info (GET_BROKER_RUNTIME_INFO) gives, of any broker."""
    hi, lo = _int(rt, "commitLogMaxOffset"), _int(rt, "commitLogMinOffset")
    store["size"].add_metric(node, hi - lo)
    store["max"].add_metric(node, hi)
    store["dispatch"].add_metric([*node, *STORAGE_VALUES], _int(rt, "dispatchBehindBytes"))
    with contextlib.suppress(ValueError):
        store["ratio"].add_metric(node, float(rt.get("commitLogDiskRatio", "")))
    now_ms = int(time.time() * 1000)
    earliest = _int(rt, "earliestMessageTimeStamp")
    if earliest:
        store["reserve"].add_metric([*node, *STORAGE_VALUES], now_ms - earliest)
    boot = _int(rt, "bootTimestamp")
    if boot:
        store["uptime"].add_metric(node, (now_ms - boot) / 1000)


def _int(table: dict[str, str], key: str) -> int:
    try:
        return int(table.get(key, "0"))
    except ValueError:
        return 0
