"""/metrics: RocketMQ 5.1's broker metric names and labels, parsed with prometheus_client's own text parser,
against a live cluster; the counters move when messages flow."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pocketmq.client.consumer.pull_consumer import PullConsumer  # noqa: E402
from pocketmq.client.message import Message  # noqa: E402
from pocketmq.client.producer.producer import Producer  # noqa: E402
from pocketmq.remoting.body import TopicConfig  # noqa: E402
from pocketmq.remoting.client_body import SubscriptionGroupConfig  # noqa: E402
from pocketmq.remoting.codes import RequestCode  # noqa: E402


async def scrape(console) -> dict[str, list]:
    async with aiohttp.ClientSession() as s, s.get(console.url + "metrics") as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = await r.text()
    families = {f.name: f.samples for f in text_string_to_metric_families(text)}
    return families


def value(samples, name: str, **labels) -> float | None:
    for s in samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


async def test_metrics_parse_and_counters_move(cluster, console, poll):
    before = await scrape(console)
    assert value(before.get("rocketmq_messages_in", []), "rocketmq_messages_in_total", topic="MetricsT") is None
    async with Producer("PG", cluster.namesrv_addr) as p:
        for i in range(5):
            await p.send(Message("MetricsT", b"x" * (100 + i), keys=f"k{i}"))
        await p.send(Message("MetricsT", b"y" * 2000))
    after = await scrape(console)
    labels = {"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a", "topic": "MetricsT"}
    assert value(after["rocketmq_messages_in"], "rocketmq_messages_in_total", **labels) == 6
    assert value(after["rocketmq_throughput_in"], "rocketmq_throughput_in_total", **labels) > 6 * 100
    sizes = after["rocketmq_message_size"]
    assert value(sizes, "rocketmq_message_size_bucket", le="1024.0", **labels) == 5
    assert value(sizes, "rocketmq_message_size_bucket", le="4096.0", **labels) == 6
    assert value(sizes, "rocketmq_message_size_count", **labels) == 6
    # The store's own.
    assert value(after["pocketmq_commitlog_bytes"], "pocketmq_commitlog_bytes", node_id="broker-a") > 2500
    assert value(after["rocketmq_storage_dispatch_behind_bytes"], "rocketmq_storage_dispatch_behind_bytes",
                 node_id="broker-a") is not None
    ratio = value(after["pocketmq_commitlog_disk_ratio"], "pocketmq_commitlog_disk_ratio", node_id="broker-a")
    assert 0 <= ratio <= 1
    assert value(after["pocketmq_flush_latency_seconds"], "pocketmq_flush_latency_seconds_count",
                 node_id="broker-a") is not None

    # Consume 4 of the 6 with a group that commits its offset: out moves, the lag is what is left.
    assert await cluster.wait_routed("MetricsT")
    assert await cluster.wait_dispatched()
    async with PullConsumer("MetricsGroup", cluster.namesrv_addr) as c:
        got = 0
        for mq in sorted(await c.fetch_subscribe_message_queues("MetricsT"), key=lambda q: q.queue_id):
            result = await c.pull(mq, "*", 0, 32)
            taken = result.msg_found_list[: max(0, 4 - got)]
            got += len(taken)
            # (a queue the group never committed lags nothing, as in RocketMQ 5's ConsumerLagCalculator)
            await c.update_consume_offset(mq, taken[-1].queue_offset + 1 if taken else 0)
        assert got == 4
    later = await scrape(console)
    out = value(later["rocketmq_messages_out"], "rocketmq_messages_out_total", consumer_group="MetricsGroup",
                topic="MetricsT")
    assert out is not None and out >= 4
    lag = value(later["rocketmq_consumer_lag_messages"], "rocketmq_consumer_lag_messages",
                consumer_group="MetricsGroup", topic="MetricsT", is_retry="false")
    assert lag == 2
    assert value(later["rocketmq_throughput_out"], "rocketmq_throughput_out_total", consumer_group="MetricsGroup",
                 topic="MetricsT") > 4 * 100


async def test_a_remote_cluster_has_its_counters_from_offsets(cluster, tmp_path):
    """A console that does not run the broker (`pocketmq console -n`): messages in and out from the queues'
    offsets, read through MQAdminExt."""
    from pocketmq.console import ConsoleServer

    async with ConsoleServer(cluster.namesrv_addr, port=0) as remote:
        async with Producer("PG", cluster.namesrv_addr) as p:
            for _ in range(3):
                await p.send(Message("RemoteT", b"z"))
        assert await cluster.wait_dispatched()
        families = await scrape(remote)
        assert value(families["rocketmq_messages_in"], "rocketmq_messages_in_total", topic="RemoteT",
                     node_id="broker-a") == 3
        assert "rocketmq_message_size" in families  # the family is there, without a broker's samples


async def test_a_scrape_asks_a_broker_once_for_every_groups_lag(cluster, console):
    # One GET_CONSUME_STATS a group walked the broker's offset table each time, on its event loop: with 2,012
    # groups a scrape took 0.8 s and sends waited up to 66 ms behind it. The lag now comes from one
    # GET_BROKER_CONSUME_STATS a broker (its handler counted here, the real one answering).
    async with Producer("LagPG", cluster.namesrv_addr) as p:
        for _ in range(4):
            await p.send(Message("LagManyT", b"x"))
    assert await cluster.wait_dispatched()
    broker = cluster.broker
    queues = {q: broker.store.get_max_offset_in_queue("LagManyT", q) for q in range(4)}
    groups = [f"LagGroup{i}" for i in range(30)]
    for i, group in enumerate(groups):
        broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig(group))
        for q in range(4):
            broker.consumer_offset_manager.commit_offset("127.0.0.1", group, "LagManyT", q, min(i % 2, queues[q]))
    asked: dict[int, int] = {}
    for code in (RequestCode.GET_CONSUME_STATS, RequestCode.GET_BROKER_CONSUME_STATS):
        processor = broker.remoting_server._processors[int(code)].__self__
        real = processor.handlers[code]

        async def counted(channel, request, real=real, code=code):
            asked[code] = asked.get(code, 0) + 1
            return await real(channel, request)

        processor.handlers[code] = counted
    families = await scrape(console)
    lags = {g: value(families["rocketmq_consumer_lag_messages"], "rocketmq_consumer_lag_messages",
                     consumer_group=g, topic="LagManyT", is_retry="false") for g in groups}
    sent = sum(queues.values())
    assert lags == {g: sent - (i % 2) * sum(1 for n in queues.values() if n) for i, g in enumerate(groups)}
    assert asked == {RequestCode.GET_BROKER_CONSUME_STATS: 1}


async def test_the_lag_of_queues_a_shrink_left_read_only_is_counted(cluster, console):
    # Scaling a topic down cuts its write queues first and keeps reading the others until they drain: their
    # backlog is what an operator watches then. GET_BROKER_CONSUME_STATS walks write queues (as Apache's), so
    # the console asks a pocketmq broker for read queues.
    broker = cluster.broker
    broker.topic_config_manager.update_topic_config(TopicConfig("ShrinkT", 8, 8, 6))
    await broker.register_broker_all()
    async with Producer("ShrinkPG", cluster.namesrv_addr) as p:
        for mq in await p.fetch_publish_message_queues("ShrinkT"):
            await p.send(Message("ShrinkT", b"x"), mq)
    assert await cluster.wait_dispatched()
    broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig("ShrinkG"))
    for q in range(8):
        broker.consumer_offset_manager.commit_offset("127.0.0.1", "ShrinkG", "ShrinkT", q, 0)
    broker.topic_config_manager.update_topic_config(TopicConfig("ShrinkT", 8, 4, 6))
    families = await scrape(console)
    assert value(families["rocketmq_consumer_lag_messages"], "rocketmq_consumer_lag_messages",
                 consumer_group="ShrinkG", topic="ShrinkT", is_retry="false") == 8


async def test_a_pops_messages_out_carry_is_retry(cluster, console):
    # RocketMQ 5's PopMessageProcessor labels a pop's rows with is_retry (under the topic the client asked for);
    # a pull's rows have no such label.
    from pocketmq.client.consumer.simple_consumer import SimpleConsumer

    async with Producer("PopPG", cluster.namesrv_addr) as p:
        await p.send(Message("PopT", b"p"))
    assert await cluster.wait_dispatched()
    async with SimpleConsumer("PopMG", cluster.namesrv_addr, subscriptions={"PopT": "*"}, await_duration=1.0,
                              init_mode=0) as sc:
        got = []
        for _ in range(10):
            got += await sc.receive(16, 60.0)
            if got:
                break
        assert len(got) == 1
        await sc.ack(got[0])
    families = await scrape(console)
    rows = [s.labels for s in families["rocketmq_messages_out"]
            if s.name == "rocketmq_messages_out_total" and s.labels.get("consumer_group") == "PopMG"]
    assert [(r["topic"], r.get("is_retry"), r["is_system"]) for r in rows] == [("PopT", "false", "false")]
