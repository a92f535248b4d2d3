"""/metrics against Apache RocketMQ 5.5.0's own Prometheus exporter (metricsExporterType=PROM): the same traffic
through both, over RocketMQ's remoting protocol, then each one scraped and the families both export compared,
label set for label set and value for value. Byte counts, sizes, addresses and the broker's own tables' sizes
are masked (their records and built-in topics differ); what is compared is which messages count where.

The traffic: sends to MT (single ones, a batch), a delayed one to MD, a committed transaction to MT and a rolled
back one; a pull group that reads both queues of MT and commits the first (the other never committed), hands one
message back with a delay (it comes back through the schedule topic into %RETRY%PullG) and one to its
dead-letter queue."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

pytest.importorskip("prometheus_client", reason="the console extra")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pocketmq.client.admin.mq_admin_ext import MQAdminExt  # noqa: E402
from pocketmq.client.consumer.pull_consumer import PullConsumer  # noqa: E402
from pocketmq.client.message import Message  # noqa: E402
from pocketmq.client.producer.producer import Producer  # noqa: E402
from pocketmq.client.producer.transaction_producer import LocalTransactionState, TransactionProducer  # noqa: E402
from pocketmq.embedded import EmbeddedCluster  # noqa: E402
from pocketmq.remoting.client_body import SubscriptionGroupConfig  # noqa: E402
from pocketmq.remoting.codes import RequestCode as R  # noqa: E402
from pocketmq.remoting.topic_config import TopicConfig  # noqa: E402
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ, free_port  # noqa: E402

from .differential import call, request  # noqa: E402

NODE = {"cluster", "node_type", "node_id", "otel_scope_name"}
# Families whose values are bytes, sizes, times or table sizes: their label sets are compared, not their values.
MASKED = {"rocketmq_throughput_in_total", "rocketmq_throughput_out_total", "rocketmq_message_size_sum",
          "rocketmq_storage_dispatch_behind_bytes", "rocketmq_storage_flush_behind_bytes",
          "rocketmq_storage_message_reserve_time_milliseconds", "rocketmq_storage_size_bytes",
          "rocketmq_topic_number", "rocketmq_consumer_group_number"}
COMPARED = ("rocketmq_messages_in", "rocketmq_messages_out", "rocketmq_throughput_in", "rocketmq_throughput_out",
            "rocketmq_message_size", "rocketmq_consumer_lag_messages", "rocketmq_send_to_dlq_messages",
            "rocketmq_commit_messages", "rocketmq_rollback_messages", "rocketmq_topic_number",
            "rocketmq_consumer_group_number", "rocketmq_broker_permission", "rocketmq_storage_dispatch_behind_bytes",
            "rocketmq_storage_flush_behind_bytes", "rocketmq_storage_message_reserve_time_milliseconds",
            "rocketmq_storage_size_bytes")
# Apache's transaction check reads its op topic as the system group CID_RMQ_SYS_TRANS, on its own timer;
# pocketmq's check reads the store directly (docs/compatibility.md).
INTERNAL_GROUPS = {"CID_RMQ_SYS_TRANS"}


class Commit:
    def __init__(self, commit: bool) -> None:
        self.state = LocalTransactionState.COMMIT_MESSAGE if commit else LocalTransactionState.ROLLBACK_MESSAGE

    def execute_local_transaction(self, msg: Any, arg: Any) -> LocalTransactionState:
        return self.state

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return self.state


async def traffic(namesrv: str) -> None:
    async with MQAdminExt(namesrv, protocol="rocketmq") as admin:
        info = await admin.examine_broker_cluster_info()
        broker = next(iter(info.broker_addr_table.values())).broker_addrs[0]
        for topic in ("MT", "MD"):
            await admin.create_and_update_topic_config(broker, TopicConfig(topic, read_queue_nums=2,
                                                                           write_queue_nums=2))
        await admin.create_and_update_subscription_group_config(broker, SubscriptionGroupConfig("PullG"))
    async with Producer("ProdG", namesrv, protocol="rocketmq") as p:
        mqs = sorted(await _queues(p.fetch_publish_message_queues, "MT"), key=lambda q: q.queue_id)
        for i in range(3):
            await p.send(Message("MT", b"x" * (100 + i), tags="A"), mqs[0])
        await p.send(Message("MT", b"y" * 2000, tags="B"), mqs[1])
        await p.send_batch([Message("MT", b"b" * 300) for _ in range(3)], mqs[1])
        await p.send(Message("MD", b"d" * 50, delay_time_level=1))
    for commit in (True, False):
        async with TransactionProducer(f"TxG{commit}", namesrv, Commit(commit), protocol="rocketmq") as tp:
            await tp.send_message_in_transaction(Message("MT", b"t" * 400), arg=None)
    async with PullConsumer("PullG", namesrv, protocol="rocketmq") as c:
        # Both queues read (the committed transaction's message lands on either), only the first committed.
        mqs = sorted(await _queues(c.fetch_subscribe_message_queues, "MT"), key=lambda q: q.queue_id)
        for _ in range(100):  # the committed message dispatched
            if sum([await c.max_offset(mq) for mq in mqs]) == 8:
                break
            await asyncio.sleep(0.05)
        found = [(await c.pull(mq, "*", 0, 32)).msg_found_list or [] for mq in mqs]
        assert len(found[0]) >= 3
        await c.update_consume_offset(mqs[0], len(found[0]))
        for msg, delay in ((found[0][0], 1), (found[0][1], -1)):
            back = request(R.CONSUMER_SEND_MSG_BACK, {"offset": msg.commit_log_offset, "group": "PullG",
                                                      "delayLevel": delay, "originMsgId": msg.msg_id,
                                                      "originTopic": "MT", "maxReconsumeTimes": 16})
            assert (await asyncio.to_thread(call, broker, back)).code == 0


async def _queues(fetch: Any, topic: str) -> list[Any]:
    for _ in range(60):
        try:
            return list(await fetch(topic))
        except Exception:
            await asyncio.sleep(0.5)
    return list(await fetch(topic))


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float | str]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float | str] = {}
    for family in text_string_to_metric_families(text):
        if family.name not in COMPARED:
            continue
        for s in family.samples:
            labels = tuple(sorted((k, v) for k, v in s.labels.items() if k not in NODE))
            if dict(labels).get("consumer_group") in INTERNAL_GROUPS:
                continue
            out[(s.name, labels)] = "masked" if s.name in MASKED or family.name in MASKED else s.value
    return out


async def scrape_when_settled(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float | str]:
    """The scrape once both delayed messages reached their topics (the scheduler's 1 s level)."""
    wanted = {("rocketmq_messages_in_total", "MD"), ("rocketmq_messages_in_total", "%RETRY%PullG")}
    for _ in range(100):
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
        found = parse(text)
        if wanted <= {(name, dict(labels).get("topic")) for name, labels in found}:
            return found
        await asyncio.sleep(0.2)
    return found


@pytest.fixture(scope="module")
def apache_prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApacheRocketMQ, str]]:
    port = free_port(0)
    # (its store is thrown away: killed at the end, not shut down)
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache-prom"), version=V5, metricsExporterType="PROM",
                        metricsPromExporterHost="127.0.0.1",
                        metricsPromExporterPort=str(port)).killed_at_exit() as server:
        yield server, f"http://127.0.0.1:{port}/metrics"


@pytest.fixture
async def pocketmq_console(tmp_path: Any) -> AsyncIterator[tuple[str, str]]:
    from pocketmq.console import ConsoleServer

    async with EmbeddedCluster(tmp_path) as cluster, ConsoleServer(
            cluster.namesrv_addr, port=0, local_brokers=cluster.brokers) as console:
        yield cluster.namesrv_addr, console.url + "metrics"


async def test_metrics_count_what_apaches_exporter_counts(apache_prom: tuple[ApacheRocketMQ, str],
                                                          pocketmq_console: tuple[str, str]) -> None:
    apache, apache_url = apache_prom
    namesrv, url = pocketmq_console
    await traffic(apache.namesrv_addr)
    await traffic(namesrv)
    theirs, ours = await scrape_when_settled(apache_url), await scrape_when_settled(url)
    assert {k: v for k, v in ours.items() if k not in theirs} == {}
    assert {k: v for k, v in theirs.items() if k not in ours} == {}
    assert {k: (v, theirs[k]) for k, v in ours.items() if theirs[k] != v} == {}
