"""The console's JSON API against a live cluster, where a page's figures need more than a browser check:
consumer groups (clients, queue owners, lag) and a message's retry history."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.client import ConsumeConcurrentlyStatus, Message, Producer, PushConsumer  # noqa: E402
from pocketmq.console import ConsoleServer  # noqa: E402
from pocketmq.embedded import EmbeddedCluster  # noqa: E402

FAST_BROKER = {"stats_sample_interval": 0.02, "message_delay_level": "10ms 20ms 30ms 40ms 50ms 60ms",
               "client_housekeeping_interval": 0.1}
FAST_CONSUMER = {"rebalance_interval": 0.2, "heartbeat_broker_interval": 0.1, "poll_name_server_interval": 0.2,
                 "persist_consumer_offset_interval": 0.1, "pull_time_delay_when_exception": 0.05}


@pytest.fixture
async def fast(tmp_path: Any):
    async with EmbeddedCluster(tmp_path, **FAST_BROKER) as cluster, ConsoleServer(
        cluster.namesrv_addr, port=0, local_brokers=cluster.brokers
    ) as console:
        yield cluster, console


async def get(url: str) -> Any:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def test_a_group_its_clients_queue_owners_and_a_messages_retries(fast, poll):
    cluster, console = fast
    deliveries: list[Any] = []

    async def listener(msgs: list[Any], _context: Any) -> Any:
        deliveries.extend(msgs)
        # The first delivery of "retry-me" fails: the consumer sends it back to %RETRY%ApiGroup.
        if any(m.body == b"retry-me" and m.reconsume_times == 0 for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("ApiPG", cluster.namesrv_addr) as p:
        sent = await p.send(Message("ApiT", b"retry-me"))
        for i in range(3):
            await p.send(Message("ApiT", f"ok-{i}".encode()))
    consumer = PushConsumer("ApiGroup", cluster.namesrv_addr, **FAST_CONSUMER)
    consumer.subscribe("ApiT", "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        await poll(lambda: sum(m.body == b"retry-me" for m in deliveries) >= 2, timeout=20)
        await poll(lambda: len(deliveries) >= 5, timeout=20)

        # Offsets reach the broker every persist interval (0.1 s): read the page until they have.
        group = await get(console.url + "api/group?group=ApiGroup")
        for _ in range(200):
            if group["lag"] == 0 and group["queues"] and all(q["client"] for q in group["queues"]):
                break
            await asyncio.sleep(0.05)
            group = await get(console.url + "api/group?group=ApiGroup")
        assert [c["client_id"] for c in group["clients"]] == [consumer.client_id]
        own = [q for q in group["queues"] if q["topic"] == "ApiT"]
        assert len(own) == 4 and all(q["client"] == consumer.client_id for q in own)
        assert group["lag"] == 0
        assert group["strategy"] == "AVG"
        listing = await get(console.url + "api/groups")
        row = next(g for g in listing["groups"] if g["group"] == "ApiGroup")
        assert row["lag"] == 0 and row["system"] is False

        detail = await get(console.url + f"api/message?msgId={sent.msg_id}&topic=ApiT")
        assert detail["body_text"] == "retry-me"
        retries = [h for h in detail["history"] if h["kind"] == "retry"]
        assert retries and retries[0]["topic"] == "%RETRY%ApiGroup" and retries[0]["group"] == "ApiGroup"
        assert retries[0]["reconsume_times"] == 1
    finally:
        await consumer.shutdown()


async def test_a_topics_queues_and_their_rate_between_two_views(fast):
    cluster, console = fast
    async with Producer("ApiPG", cluster.namesrv_addr) as p:
        await p.send(Message("RateT", b"a"))
        assert await cluster.wait_routed("RateT") and await cluster.wait_dispatched()
        first = await get(console.url + "api/topic?topic=RateT")
        assert len(first["queues"]) == 4 and all(q["tps"] is None for q in first["queues"])  # nothing to compare
        for _ in range(8):
            await p.send(Message("RateT", b"b"))
    assert await cluster.wait_dispatched()  # (a queue's max offset counts what is in its consume queue)
    second = await get(console.url + "api/topic?topic=RateT")
    assert sum(q["max_offset"] for q in second["queues"]) == 9
    assert sum(q["tps"] > 0 for q in second["queues"]) >= 1
    assert second["route"]["broker_datas"][0]["addrs"] == {"0": cluster.broker_addr}


async def test_over_rocketmqs_own_wire_protocol(fast):
    """`pocketmq console --protocol rocketmq`, as for an Apache RocketMQ cluster: the same pages and metrics."""
    cluster, _ = fast
    async with Producer("ApiPG", cluster.namesrv_addr) as p:
        await p.send(Message("WireT", b"a", keys="wk"))
    assert await cluster.wait_routed("WireT") and await cluster.wait_dispatched()
    async with ConsoleServer(cluster.namesrv_addr, port=0, protocol="rocketmq") as console:
        brokers = (await get(console.url + "api/cluster"))["brokers"]
        assert brokers[0]["addr"] == cluster.broker_addr and brokers[0]["put_today"] >= 1
        found = (await get(console.url + "api/messages?topic=WireT&key=wk"))["messages"]
        assert [m["keys"] for m in found] == [["wk"]]
        async with aiohttp.ClientSession() as s, s.get(console.url + "metrics") as r:
            assert 'rocketmq_messages_in_total{cluster="DefaultCluster"' in await r.text()


async def test_the_rebalance_history_shows_clients_joining_and_leaving_and_the_queues_moving(fast, poll):
    """Each client reports its own rounds in its ConsumerRunningInfo; the page merges them, newest first, and keeps
    those of a client that has left."""
    cluster, console = fast

    async def listener(_msgs: list[Any], _context: Any) -> Any:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("ApiPG", cluster.namesrv_addr) as p:
        await p.send(Message("MoveT", b"x"))  # the topic exists, 4 queues
    assert await cluster.wait_routed("MoveT")

    def consumer(name: str) -> PushConsumer:
        c = PushConsumer("MoveGroup", cluster.namesrv_addr, instance_name=name, **FAST_CONSUMER)
        c.subscribe("MoveT", "*")
        c.register_message_listener(listener)
        return c

    def own(c: PushConsumer) -> set[int]:
        return {mq.queue_id for mq in c.assigned_queues() if mq.topic == "MoveT"}

    async def history() -> list[dict[str, Any]]:
        return [e for e in (await get(console.url + "api/group?group=MoveGroup"))["rebalances"]
                if e["topic"] == "MoveT"]

    a, b = consumer("first"), consumer("second")
    await a.start()
    try:
        await poll(lambda: own(a) == {0, 1, 2, 3}, timeout=20)
        first = await history()
        assert [(e["client"], e["joined"], e["gained"], e["lost"]) for e in first] == [
            (a.client_id, [a.client_id], ["broker-a:0", "broker-a:1", "broker-a:2", "broker-a:3"], [])]

        await b.start()
        b_id = b.client_id  # (a consumer shut down has no client id any more)
        await poll(lambda: len(own(a)) == 2 and len(own(b)) == 2, timeout=20)
        joined = await history()
        a_gives = next(e for e in joined if e["client"] == a.client_id and e["lost"])
        b_takes = next(e for e in joined if e["client"] == b_id and e["gained"])
        assert a_gives["joined"] == [b_id] and a_gives["strategy"] == "AVG"
        assert sorted(a_gives["clients"]) == sorted([a.client_id, b_id])
        assert set(a_gives["lost"]) == set(b_takes["gained"]) == {f"broker-a:{q}" for q in own(b)}
        assert joined.index(a_gives) < joined.index(first[0])  # newest first

        await b.shutdown()
        await poll(lambda: own(a) == {0, 1, 2, 3}, timeout=20)
        left = await history()
        a_takes_back = left[0]
        assert a_takes_back["client"] == a.client_id and a_takes_back["left"] == [b_id]
        assert set(a_takes_back["gained"]) == set(a_gives["lost"]) and a_takes_back["held"] == first[0]["gained"]
        assert b_takes in left  # the departed client's rounds stay: the console saw them while it was there
    finally:
        await b.shutdown()
        await a.shutdown()
