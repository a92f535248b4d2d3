"""The search by topic and time starts each queue where the broker's binary search puts ``begin`` (it does not read
the queue from its min offset), and the topic list marks the name server's system topics (cluster and broker
names) as system ones."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.client import Message, Producer  # noqa: E402
from pocketmq.client.exceptions import MQClientException  # noqa: E402
from pocketmq.remoting.body import TopicConfig  # noqa: E402

OLD = 100  # messages before the searched range: the old search read each of them


async def get(url: str) -> Any:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def test_a_search_by_time_reads_only_from_where_begin_falls(cluster, console, poll):
    await console.admin.create_topic(TopicConfig("SearchT", read_queue_nums=1, write_queue_nums=1),
                                     cluster="DefaultCluster")
    await _route(console, "SearchT")
    broker = cluster.brokers[0]
    async with Producer("SearchPG", cluster.namesrv_addr) as p:
        for i in range(OLD):
            await p.send(Message("SearchT", f"old-{i}".encode()))
        last_old = time.time() * 1000
        await poll(lambda: time.time() * 1000 > last_old + 2)  # the new messages are stored in a later ms
        begin = int(time.time() * 1000)
        for i in range(3):
            await p.send(Message("SearchT", f"new-{i}".encode()))
    await poll(lambda: _dispatched(broker))
    got_before = broker.broker_stats_manager.broker_get_total
    found = await get(console.url + f"api/messages?topic=SearchT&begin={begin}")
    assert sorted(m["queue_offset"] for m in found["messages"]) == [OLD, OLD + 1, OLD + 2]
    # Messages the broker handed out for the search: the three found, none of the hundred before them.
    assert broker.broker_stats_manager.broker_get_total - got_before == 3
    everything = await get(console.url + "api/messages?topic=SearchT&begin=0")
    assert [m["queue_offset"] for m in everything["messages"]] == list(range(64))


async def _route(console: Any, topic: str) -> None:
    """Wait until the name server has the topic's route (a broker registers its topics in the background)."""
    for _ in range(500):
        try:
            await console.admin.examine_topic_route_info(topic)
            return
        except MQClientException:
            await asyncio.sleep(0.01)
    raise AssertionError(f"no route for {topic}")


def _dispatched(broker: Any) -> bool:
    return broker.store.dispatch_behind_bytes() == 0


async def test_cluster_and_broker_names_are_system_topics(cluster, console):
    await _route(console, "DefaultCluster")
    topics = {t["topic"]: t["system"] for t in (await get(console.url + "api/topics"))["topics"]}
    broker_name = cluster.brokers[0].broker_config.broker_name
    assert topics["DefaultCluster"] is True and topics[broker_name] is True
    assert topics["TBW102"] is True
