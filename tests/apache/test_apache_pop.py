"""RocketMQ 5's POP, the same scenario against pocketmq and against Apache RocketMQ 5.5.0's broker, driven by
pocketmq's SimpleConsumer over RocketMQ's native remoting protocol: receive, ack, batch ack, change invisible
duration (a new receipt handle), a message not acked coming back with its attempt count through the retry topic,
and nothing left afterwards."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.client import Message, MQClientException, Producer, RemotingException, SimpleConsumer
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.embedded import EmbeddedCluster


@pytest.fixture(params=["pocketmq", "apache5"])
async def namesrv(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[str]:
    if request.param == "apache5":
        yield request.getfixturevalue("apache_rocketmq5").namesrv_addr
        return
    async with EmbeddedCluster(tmp_path, revive_interval=0.1) as cluster:
        yield cluster.namesrv_addr


async def receive(consumer: SimpleConsumer, n: int, invisible: float, deadline_s: float = 60.0) -> list[Any]:
    got: list[Any] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while len(got) < n and loop.time() < deadline:
        got += await consumer.receive(32, invisible_duration=invisible, await_duration=1.0)
    return got


async def test_pop_ack_change_invisible_and_redelivery_as_apache(namesrv: str) -> None:
    topic = f"Pop{uuid.uuid4().hex[:8]}"
    bodies = [b"acked", b"batch-acked", b"extended", b"dropped"]
    async with Producer(f"pg-{topic}", namesrv, protocol="rocketmq", send_timeout=15.0) as producer:
        for attempt in range(60):  # a broker that just started may not have its default topic's route out yet
            try:
                await producer.send(Message(topic, bodies[0], tags="T"))
                break
            except (MQClientException, RemotingException):
                assert attempt < 59
                await asyncio.sleep(0.5)
        for body in bodies[1:]:
            await producer.send(Message(topic, body, tags="T"))
    async with SimpleConsumer(f"cg-{topic}", namesrv, subscriptions={topic: "*"}, init_mode=0,
                              protocol="rocketmq", mq_client_api_timeout=15.0) as consumer:
        first = {m.body: m for m in await receive(consumer, 4, invisible=3.0)}
        assert sorted(first) == sorted(bodies)
        assert {m.reconsume_times for m in first.values()} == {0}
        await consumer.ack(first[b"acked"])
        await consumer.ack_batch([first[b"batch-acked"]])
        old = first[b"extended"].properties[PROPERTY_POP_CK]
        new = await consumer.change_invisible_duration(first[b"extended"], 60)
        assert new != old
        # "dropped" was never acked: it comes back once its 3 s are over, as attempt 2, under its topic.
        [back] = await receive(consumer, 1, invisible=60)
        assert (back.body, back.reconsume_times, back.topic) == (b"dropped", 1, topic)
        await consumer.ack(back)
        await consumer.ack(first[b"extended"])  # with its new handle
        await asyncio.sleep(4)
        assert await consumer.receive(32, invisible_duration=60, await_duration=1.0) == []
