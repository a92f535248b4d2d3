"""RocketMQ 5's timer messages from the client's side (Message.delay_time_sec / delay_time_ms / deliver_time_ms,
Java's setDelayTimeSec / setDelayTimeMs / setDeliverTimeMs), against a real cluster in both wire protocols; and a
typed topic refusing what does not fit it."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pull_helpers import pull_queues

from pocketmq.client import Message, MQBrokerException, Producer, PullConsumer, SendStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import TopicConfig

_names = itertools.count()


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, timer_precision_ms=50) as c:
        yield c


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def test_timer_messages_round_trip(cluster: EmbeddedCluster, protocol: str) -> None:
    n = next(_names)
    async with Producer("PG", cluster.namesrv_addr, instance_name=f"p{n}", protocol=protocol) as producer, \
            PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{n}", protocol=protocol) as consumer:
        sent_at = now_ms()
        by_sec, by_ms, at = Message("Timed", b"sec"), Message("Timed", b"ms"), Message("Timed", b"at")
        by_sec.delay_time_sec = 1
        by_ms.delay_time_ms = 400
        at.deliver_time_ms = sent_at + 700
        assert (by_sec.delay_time_sec, by_ms.delay_time_ms, at.deliver_time_ms) == (1, 400, sent_at + 700)
        for m in (by_sec, by_ms, at):
            assert (await producer.send(m)).send_status is SendStatus.SEND_OK
        got: dict[bytes, Any] = {}
        deadline = time.monotonic() + 30
        while len(got) < 3:
            assert time.monotonic() < deadline
            got = {m.body: m for m in await pull_queues(consumer, "Timed")}
            await asyncio.sleep(0.05)
        assert got[b"ms"].store_timestamp >= sent_at + 400 and got[b"at"].store_timestamp >= sent_at + 700
        assert got[b"sec"].store_timestamp >= sent_at + 1000
        assert got[b"at"].msg_id == at.uniq_key and got[b"at"].properties["TIMER_DELIVER_MS"] == str(sent_at + 700)


async def test_typed_topic_refuses_a_send_of_another_type(cluster: EmbeddedCluster, protocol: str) -> None:
    async with MQAdminExt(cluster.namesrv_addr, protocol=protocol) as admin:
        await admin.create_topic(TopicConfig("DelayOnly", 2, 2, attributes={"message.type": "DELAY"}),
                                 cluster="DefaultCluster")
    async with Producer("PG", cluster.namesrv_addr, instance_name=f"p{next(_names)}", protocol=protocol) as producer:
        timed = Message("DelayOnly", b"ok")
        timed.delay_time_sec = 1
        assert (await producer.send(timed)).send_status is SendStatus.SEND_OK
        with pytest.raises(MQBrokerException, match="the expected type is DELAY, but actual type is NORMAL"):
            await producer.send(Message("DelayOnly", b"plain"))
