"""QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE (RocketMQ 5's server-side rebalance) over real sockets, in both
wire protocols, through the client's own API: the split by strategy in pull mode, "queue -1" and shared queues in
pop mode, the retry-topic refusal and messageRequestMode.json across a restart. The Java 5.x client consuming in
pop mode against pocketmq and Apache RocketMQ is in tests/java_client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client.client_config import ClientConfig
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.client.impl.mq_client_api import MQClientAPIImpl
from pocketmq.remoting.assignment_body import QueryAssignmentRequestBody, SetMessageRequestModeRequestBody
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import ConsumerData, HeartbeatData, SubscriptionData
from pocketmq.remoting.codes import ResponseCode

TOPIC = "AssignTopic"
GROUP = "assign_group"


@pytest.fixture(params=["msgpack", "rocketmq"])
async def api(request: Any, tmp_path: Path) -> AsyncIterator[tuple[embedded.EmbeddedCluster, MQClientAPIImpl]]:
    async with embedded.EmbeddedCluster(tmp_path) as cluster:
        cluster.broker.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4, 6))
        await cluster.broker.register_broker_all()
        client = MQClientAPIImpl(ClientConfig(cluster.namesrv_addr, protocol=request.param))
        members: list[MQClientAPIImpl] = []
        client.members = members  # type: ignore[attr-defined]
        try:
            yield cluster, client
        finally:
            for c in [client, *members]:
                await c.shutdown()


async def join(client: MQClientAPIImpl, addr: str, *client_ids: str) -> None:
    """Each client id on a connection of its own, as the broker keys a consumer by its channel."""
    for cid in client_ids:
        member = MQClientAPIImpl(client.config)
        client.members.append(member)  # type: ignore[attr-defined]
        consumer = ConsumerData(GROUP, subscription_data_set=[SubscriptionData(TOPIC)])
        await member.send_heartbeat(addr, HeartbeatData(cid, consumer_data_set=[consumer]), 3.0)


async def assigned(client: MQClientAPIImpl, addr: str, cid: str, strategy: str = "AVG",
                   topic: str = TOPIC) -> list[tuple[int, str]] | None:
    got = await client.query_assignment(addr, QueryAssignmentRequestBody(topic, GROUP, cid, strategy), 3.0)
    if got is None:
        return None
    return sorted((a.message_queue.queue_id, a.mode) for a in got)


async def test_pull_mode_splits_the_queues_by_the_named_strategy(api: Any) -> None:
    cluster, client = api
    await join(client, cluster.broker_addr, "cid-a", "cid-b")
    assert await assigned(client, cluster.broker_addr, "cid-a") == [(0, "PULL"), (1, "PULL")]
    assert await assigned(client, cluster.broker_addr, "cid-b") == [(2, "PULL"), (3, "PULL")]
    assert await assigned(client, cluster.broker_addr, "cid-a", "AVG_BY_CIRCLE") == [(0, "PULL"), (2, "PULL")]
    # An unknown strategy, an unknown topic: no answer, and the client keeps what it has.
    assert await assigned(client, cluster.broker_addr, "cid-a", "NO_SUCH") is None
    assert await assigned(client, cluster.broker_addr, "cid-a", topic="NoSuchTopic") is None


async def test_pop_mode_gives_queue_minus_one_or_shared_queues(api: Any) -> None:
    cluster, client = api
    addr = cluster.broker_addr
    await join(client, addr, "cid-a", "cid-b", "cid-c")
    await client.set_message_request_mode(addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "POP", -1), 3.0)
    assert await assigned(client, addr, "cid-a") == [(-1, "POP")]
    # Sharing with one neighbour: cid-a pops its own two queues (AVG: 0, 1) and cid-b's (2).
    await client.set_message_request_mode(addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "POP", 1), 3.0)
    assert await assigned(client, addr, "cid-a") == [(i, "POP") for i in range(3)]
    assert await assigned(client, addr, "cid-c") == [(0, "POP"), (1, "POP"), (3, "POP")]
    # Sharing with both others is every queue.
    await client.set_message_request_mode(addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "POP", 2), 3.0)
    assert await assigned(client, addr, "cid-b") == [(-1, "POP")]
    # Back to pull.
    await client.set_message_request_mode(addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "PULL"), 3.0)
    assert await assigned(client, addr, "cid-b") == [(2, "PULL")]


async def test_more_pop_clients_than_queues_each_get_one(api: Any) -> None:
    cluster, client = api
    addr = cluster.broker_addr
    cids = [f"cid-{i}" for i in range(6)]
    await join(client, addr, *cids)
    await client.set_message_request_mode(addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "POP", 1), 3.0)
    got = [await assigned(client, addr, cid) for cid in cids]
    assert got == [[(i % 4, "POP")] for i in range(6)]


async def test_a_retry_topic_cannot_be_set(api: Any) -> None:
    cluster, client = api
    with pytest.raises(MQBrokerException) as e:
        await client.set_message_request_mode(
            cluster.broker_addr, SetMessageRequestModeRequestBody(f"%RETRY%{GROUP}", GROUP, "POP"), 3.0)
    assert e.value.code == ResponseCode.NO_PERMISSION
    assert "retry topic is not allowed to set mode" in str(e.value)


async def test_the_mode_is_kept_in_message_request_mode_json_across_a_restart(tmp_path: Path) -> None:
    async with embedded.EmbeddedCluster(tmp_path) as cluster:
        cluster.broker.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4, 6))
        await cluster.broker.register_broker_all()
        client = MQClientAPIImpl(ClientConfig(cluster.namesrv_addr, protocol="rocketmq"))
        await client.set_message_request_mode(
            cluster.broker_addr, SetMessageRequestModeRequestBody(TOPIC, GROUP, "POP", 2), 3.0)
        await client.shutdown()
        path = Path(cluster.broker.broker_config.config_dir) / "messageRequestMode.json"
    # RocketMQ's layout, so an Apache RocketMQ broker opening this store reads it too.
    assert json.loads(path.read_text())["messageRequestModeMap"] == {
        TOPIC: {GROUP: {"topic": TOPIC, "consumerGroup": GROUP, "mode": "POP", "popShareQueueNum": 2}}}
    async with embedded.EmbeddedCluster(tmp_path) as again:
        mode = again.broker.query_assignment_processor.mode_of(TOPIC, GROUP)
        assert (mode.mode, mode.pop_share_queue_num) == ("POP", 2)
