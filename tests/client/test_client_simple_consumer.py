"""pocketmq's SimpleConsumer (RocketMQ 5's model over POP) against a real name server and broker, in both
codecs: receive with an invisible duration, ack, change invisible duration, redelivery with the attempt count,
the DLQ, two consumers on one queue, FIFO message groups with a consumer process killed mid-batch, and the
blocking wrapper."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.client import Message, Producer, SimpleConsumer, SyncSimpleConsumer
from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import parse_extra_info
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig

PROTOCOLS = pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
# The revive every 20 ms, and POP's timer messages in milliseconds (RocketMQ: 1 s slots, 1 s + 1 s margins).
FAST = {"revive_interval": 0.02, "flush_consumer_offset_interval": 0.2, "timer_precision_ms": 50,
        "pop_ack_time_interval": 0.05, "pop_revive_margin": 0.05}
SLOW_OK = {"mq_client_api_timeout": 15.0}  # a loaded machine answers late; nothing here waits for a timeout


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, **FAST) as c:
        yield c


async def topic(cluster: EmbeddedCluster, name: str, queues: int = 2) -> str:
    assert cluster.broker is not None
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(name, queues, queues, 6))
    await cluster.broker.register_broker_all()
    return name


async def produce(cluster: EmbeddedCluster, topic_name: str, bodies: list[bytes], group: str | None = None,
                  protocol: str = "msgpack") -> None:
    async with Producer("pop-producers", cluster.namesrv_addr, protocol=protocol) as producer:
        for body in bodies:
            await producer.send(Message(topic_name, body, tags="T", message_group=group))
    await cluster.wait_dispatched()


async def receive_until(consumer: SimpleConsumer, n: int, **kw: Any) -> list[Any]:
    got: list[Any] = []
    for _ in range(100):
        got += await consumer.receive(32, await_duration=0.2, **kw)
        if len(got) >= n:
            return got
    raise AssertionError(f"only {len(got)} of {n} came")


@PROTOCOLS
async def test_receive_ack_and_redelivery_with_the_attempt_count(cluster: EmbeddedCluster, protocol: str) -> None:
    t = await topic(cluster, "SimpleT")
    await produce(cluster, t, [f"m{i}".encode() for i in range(6)], protocol=protocol)
    async with SimpleConsumer("SG", cluster.namesrv_addr, subscriptions={t: "T"}, protocol=protocol,
                              **SLOW_OK) as consumer:
        first = await receive_until(consumer, 6, invisible_duration=0.3)
        assert sorted(m.body for m in first) == [f"m{i}".encode() for i in range(6)]
        assert all(m.reconsume_times == 0 and parse_extra_info(m.properties[PROPERTY_POP_CK]) for m in first)
        acked = [m for m in first if m.body < b"m3"]
        await consumer.ack(acked[0])
        await consumer.ack_batch(acked[1:])
        again = await receive_until(consumer, 3, invisible_duration=30)
        assert sorted(m.body for m in again) == [b"m3", b"m4", b"m5"]
        assert [m.reconsume_times for m in again] == [1, 1, 1] and all(m.topic == t for m in again)
        for m in again:
            await consumer.ack(m)
        assert await consumer.receive(32, await_duration=0.5) == []


@PROTOCOLS
async def test_change_invisible_duration_gives_a_new_handle(cluster: EmbeddedCluster, protocol: str) -> None:
    t = await topic(cluster, "SimpleC", 1)
    await produce(cluster, t, [b"slow", b"fast"])
    async with SimpleConsumer("SG", cluster.namesrv_addr, subscriptions={t: "*"}, protocol=protocol,
                              **SLOW_OK) as consumer:
        slow, fast = await receive_until(consumer, 2, invisible_duration=60)
        old = slow.properties[PROPERTY_POP_CK]
        new = await consumer.change_invisible_duration(slow, 60)
        assert new != old and slow.properties[PROPERTY_POP_CK] == new
        await consumer.ack(slow)  # with the new handle: never again
        await consumer.change_invisible_duration(fast, 0.1)  # back soon, attempt 2
        [back] = await receive_until(consumer, 1, invisible_duration=60)
        assert (back.body, back.reconsume_times) == (b"fast", 1)
        await consumer.ack(back)
        await asyncio.sleep(0.3)
        assert await consumer.receive(32, await_duration=0.3) == []


async def test_after_the_retry_maximum_a_message_goes_to_the_dlq(cluster: EmbeddedCluster) -> None:
    assert cluster.broker is not None
    t = await topic(cluster, "SimpleD", 1)
    cluster.broker.subscription_group_manager.update_subscription_group_config(
        SubscriptionGroupConfig("SGD", retry_max_times=1))
    await produce(cluster, t, [b"poison"])
    async with SimpleConsumer("SGD", cluster.namesrv_addr, subscriptions={t: "*"}, **SLOW_OK) as consumer:
        attempts = [m.reconsume_times for m in await receive_until(consumer, 1, invisible_duration=0.05)]
        attempts += [m.reconsume_times for m in await receive_until(consumer, 1, invisible_duration=0.05)]
        assert attempts == [0, 1]
        dlq: list[Any] = []
        for _ in range(1000):  # (a guard for a loaded machine)
            await asyncio.sleep(0.02)
            await cluster.wait_dispatched()
            dlq = decode_all(cluster.broker.store.get_message("x", "%DLQ%SGD", 0, 0, 8).body)
            if dlq:
                break
        assert [(m.body, m.reconsume_times) for m in dlq] == [(b"poison", 2)]
        assert await consumer.receive(32, await_duration=0.3) == []


async def test_two_consumers_never_get_the_same_message_while_it_is_invisible(cluster: EmbeddedCluster) -> None:
    t = await topic(cluster, "SimpleTwo", 1)
    bodies = [f"b{i}".encode() for i in range(120)]
    await produce(cluster, t, bodies)
    seen: list[bytes] = []

    async def run(name: str) -> None:
        async with SimpleConsumer("SG2", cluster.namesrv_addr, subscriptions={t: "*"}, instance_name=name,
                                  **SLOW_OK) as c:
            while True:
                msgs = await c.receive(4, invisible_duration=60, await_duration=0.3)
                if not msgs:
                    return
                seen.extend(m.body for m in msgs)
                await c.ack(msgs[0])  # the rest stay invisible for a minute

    await asyncio.gather(run("one"), run("two"))
    assert sorted(seen) == sorted(bodies) and len(seen) == len(set(seen))


_KILLED_CONSUMER = """
import sys
from pocketmq.client import SyncSimpleConsumer
c = SyncSimpleConsumer("FG", sys.argv[1], subscriptions={sys.argv[2]: "*"}, fifo=True, instance_name="doomed")
msgs = []
while not msgs:
    msgs = c.receive(3, invisible_duration=0.5, await_duration=1)
c.ack(msgs[0])
print(" ".join(m.body.decode() for m in msgs), flush=True)
sys.stdin.read()  # until killed
"""


async def test_a_fifo_group_stays_in_order_with_a_consumer_killed_mid_batch(cluster: EmbeddedCluster) -> None:
    t = await topic(cluster, "SimpleFifo", 4)
    groups = {g: [f"{g}-{i}".encode() for i in range(5)] for g in ("ga", "gb")}
    for i in range(5):  # interleaved, as producers send them
        for g, bodies in groups.items():
            await produce(cluster, t, [bodies[i]], group=g)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KILLED_CONSUMER, cluster.namesrv_addr, t, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().split()
    os.kill(proc.pid, signal.SIGKILL)  # mid-batch: one acked, the others never
    await proc.wait()
    assert len(line) == 3
    delivered: dict[str, list[bytes]] = {"ga": [], "gb": []}
    delivered[line[0].split("-")[0]].append(line[0].encode())  # the one it acked
    async with SimpleConsumer("FG", cluster.namesrv_addr, subscriptions={t: "*"}, fifo=True,
                              **SLOW_OK) as consumer:
        while sum(map(len, delivered.values())) < 10:
            msgs = await consumer.receive(2, invisible_duration=30, await_duration=2)
            assert msgs, "nothing came"
            for m in msgs:
                delivered[m.properties["__SHARDINGKEY"]].append(m.body)
            await consumer.ack_batch(msgs)
    assert delivered == groups


def test_the_blocking_simple_consumer(tmp_path: Any) -> None:
    from pocketmq.embedded import ThreadedCluster

    with ThreadedCluster(tmp_path, **FAST) as cluster:
        from pocketmq.client import SyncProducer

        with SyncProducer("PG", cluster.namesrv_addr) as producer:
            for i in range(3):
                producer.send(Message("SyncPop", f"s{i}".encode()))
        assert cluster.wait_dispatched()
        assert cluster.wait_routed("SyncPop")
        with SyncSimpleConsumer("SSG", cluster.namesrv_addr, subscriptions={"SyncPop": "*"}, init_mode=0,
                                **SLOW_OK) as c:
            got: list[Any] = []
            while len(got) < 3:
                got += c.receive_async(32, 30, 0.5).result(10)
            assert sorted(m.body for m in got) == [b"s0", b"s1", b"s2"]
            by_body = {m.body: m for m in got}
            c.ack(by_body[b"s0"])
            c.ack_async(by_body[b"s1"]).result(10)
            c.change_invisible_duration(by_body[b"s2"], 0.05)
            again: list[Any] = []
            while not again:
                again = c.receive(32, 30, 0.5)
            assert [(m.body, m.reconsume_times) for m in again] == [(b"s2", 1)]
            c.ack_batch(again)
