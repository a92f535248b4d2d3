"""The search by topic and time starts each queue where the broker's binary search puts ``begin`` (it does not read
the queue from its min offset), and the topic list marks the name server's system topics (cluster and broker
names) as system ones."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.client import Message, Producer  # noqa: E402
from pocketmq.client.exceptions import MQClientException  # noqa: E402
from pocketmq.common.message import create_message_id  # noqa: E402
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
    for _ in range(1500):  # (under the broker's periodic registration)
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


async def test_an_offset_id_is_read_only_from_a_broker_of_the_cluster(cluster, console):
    # An offset message id encodes a host:port. One naming a server that is no broker of the cluster (here a listener
    # of the test's) is refused before the console dials it: each address dialled kept a connection open.
    dialled: list[asyncio.StreamWriter] = []
    other = await asyncio.start_server(lambda _r, w: dialled.append(w), "127.0.0.1", 0)
    try:
        port = other.sockets[0].getsockname()[1]
        foreign = create_message_id(socket.inet_aton("127.0.0.1") + port.to_bytes(4, "big"), 0)
        async with aiohttp.ClientSession() as s, s.get(console.url + f"api/messages?offsetId={foreign}") as r:
            answer = await r.json()
            assert r.status == 400, answer
        assert f"127.0.0.1:{port}" in answer["error"] and "not a broker" in answer["error"]
        assert dialled == []
    finally:
        other.close()
        for w in dialled:
            w.close()
    async with Producer("OffsetIdPG", cluster.namesrv_addr) as p:
        sent = await p.send(Message("OffsetIdT", b"found"))
    found = await get(console.url + f"api/messages?offsetId={sent.offset_msg_id}")
    assert [m["offset_msg_id"] for m in found["messages"]] == [sent.offset_msg_id]
