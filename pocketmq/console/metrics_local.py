"""/metrics' families of a broker running in the console's process, read from its BrokerMetrics (the counters
RocketMQ 5's BrokerMetricsManager keeps) and its tables, with RocketMQ 5's labels."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from pocketmq.broker.stats.broker_metrics import MESSAGE_SIZE_BOUNDS, POP, POP_RETRY, PULL, is_system, is_system_topic

NODE = ("cluster", "node_type", "node_id")
# RocketMQ 5's store gauges carry these (DefaultStoreMetricsManager: a local store on a disk).
STORAGE = ("storage_type", "storage_medium")
STORAGE_VALUES = ("local", "disk")


@dataclass
class Families:
    """The metric families one scrape fills."""

    messages_in: CounterMetricFamily
    messages_out: CounterMetricFamily
    throughput_in: CounterMetricFamily
    throughput_out: CounterMetricFamily
    message_size: HistogramMetricFamily
    lag: GaugeMetricFamily
    dlq: CounterMetricFamily
    commits: CounterMetricFamily
    rollbacks: CounterMetricFamily
    topics: GaugeMetricFamily
    groups: GaugeMetricFamily
    permission: GaugeMetricFamily
    extra: list[Metric] = field(default_factory=list)

    @classmethod
    def new(cls) -> Families:
        topic = (*NODE, "topic", "message_type", "is_system")
        group = (*NODE, "topic", "consumer_group", "is_system")
        return cls(
            CounterMetricFamily("rocketmq_messages_in", "Total number of incoming messages", labels=topic),
            CounterMetricFamily("rocketmq_messages_out", "Total number of outgoing messages", labels=group),
            CounterMetricFamily("rocketmq_throughput_in", "Total traffic of incoming messages", labels=topic),
            CounterMetricFamily("rocketmq_throughput_out", "Total traffic of outgoing messages", labels=group),
            HistogramMetricFamily("rocketmq_message_size", "Incoming messages size", labels=topic),
            GaugeMetricFamily("rocketmq_consumer_lag_messages", "Consumer lag messages",
                              labels=(*NODE, "topic", "consumer_group", "is_retry", "is_system")),
            CounterMetricFamily("rocketmq_send_to_dlq_messages", "Consumer send to DLQ messages", labels=group),
            CounterMetricFamily("rocketmq_commit_messages", "Total number of commit messages",
                                labels=(*NODE, "topic")),
            CounterMetricFamily("rocketmq_rollback_messages", "Total number of rollback messages",
                                labels=(*NODE, "topic")),
            GaugeMetricFamily("rocketmq_topic_number", "Active topic number", labels=NODE),
            GaugeMetricFamily("rocketmq_consumer_group_number", "Active subscription group number", labels=NODE),
            GaugeMetricFamily("rocketmq_broker_permission", "Broker permission", labels=NODE),
        )

    def all(self) -> list[Metric]:
        return [self.messages_in, self.messages_out, self.throughput_in, self.throughput_out, self.message_size,
                self.lag, self.dlq, self.commits, self.rollbacks, self.topics, self.groups, self.permission,
                *self.extra]


def flag(b: bool) -> str:
    return "true" if b else "false"


def storage_gauge(name: str, doc: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=(*NODE, *STORAGE))


def local_traffic(out: Families, node: list[str], controller: Any) -> None:
    """A broker of this process: its counters, as RocketMQ 5's BrokerMetricsManager counts them."""
    metrics = controller.broker_stats_manager.metrics
    for mtype, rows in sorted(metrics.messages_in.items()):
        for topic, row in items(rows):
            row = list(row)
            labels = [*node, topic, mtype, flag(is_system_topic(topic))]
            out.messages_in.add_metric(labels, row[0])
            out.throughput_in.add_metric(labels, row[1])
            out.message_size.add_metric(labels, buckets(MESSAGE_SIZE_BOUNDS, row[3:]), row[2])
    for group, topics in items(metrics.messages_out):
        for topic, row in items(topics):
            _out_rows(out, node, group, topic, list(row))
    for (group, topic), n in items(metrics.send_to_dlq):
        out.dlq.add_metric([*node, topic, group, flag(is_system(topic, group))], n)
    for family, table in ((out.commits, metrics.commits), (out.rollbacks, metrics.rollbacks)):
        for topic, n in items(table):
            family.add_metric([*node, topic], n)
    out.topics.add_metric(node, len(controller.topic_config_manager.topic_config_table))
    out.groups.add_metric(node, len(controller.subscription_group_manager.subscription_group_table))
    out.permission.add_metric(node, controller.broker_config.broker_permission)


def _out_rows(out: Families, node: list[str], group: str, topic: str, row: list[int]) -> None:
    labels = dict(zip((*NODE, "topic", "consumer_group", "is_system"),
                      (*node, topic, group, flag(is_system(topic, group))), strict=True))
    for kind in (PULL, POP, POP_RETRY):
        if row[kind]:
            # A pop's rows carry is_retry, a pull's do not (RocketMQ's PopMessageProcessor adds the label).
            these = labels if kind == PULL else {**labels, "is_retry": flag(kind == POP_RETRY)}
            out.messages_out.add_sample("rocketmq_messages_out_total", these, row[kind])
            out.throughput_out.add_sample("rocketmq_throughput_out_total", these, row[kind + 1])


def local_storage(gauges: dict[str, GaugeMetricFamily], node: list[str], controller: Any) -> None:
    store = controller.store
    labels = [*node, *STORAGE_VALUES]
    mfq = store.commit_log.mapped_file_queue
    gauges["flush_behind"].add_metric(labels, max(0, store.get_max_phy_offset() - mfq.flushed_where))
    try:  # DefaultStoreMetricsManager: the total space of the store root's disk
        gauges["storage_size"].add_metric(labels, shutil.disk_usage(controller.broker_config.store_root).total)
    except OSError:
        pass


def items(table: dict[Any, Any]) -> list[tuple[Any, Any]]:
    # The broker's event loop may add a key while this copies (the console can run on another thread).
    for _ in range(5):
        try:
            return sorted(table.items())
        except RuntimeError:
            continue
    return []


def buckets(bounds: Sequence[float], counts: list[int]) -> list[tuple[str, float]]:
    """Per-bucket counts -> Prometheus' cumulative (le, count) pairs, +Inf last."""
    out: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip((*bounds, float("inf")), counts, strict=False):
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out
