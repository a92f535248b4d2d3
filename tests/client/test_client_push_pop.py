"""PushConsumer with ``client_rebalance=False``: consuming by POP instead of client rebalance (RocketMQ 5's
remoting client), against a real name server and broker in both codecs: every message once across consumers,
retries with the attempt count and the DLQ, an orderly listener, and one group moving between client
rebalance and POP without losing or doubling a message."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Any

import pytest
from push_helpers import FAST_BROKER, create_topic, make_consumer

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
    Message,
    Producer,
    PushConsumer,
)
from pocketmq.common.codec import decode_all
from pocketmq.embedded import EmbeddedCluster

PROTOCOLS = pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
POP = {"client_rebalance": False, "broker_suspend_max_time": 0.5, "consumer_timeout_when_suspend": 15.0,
       "mq_client_api_timeout": 15.0,
       "pop_retry_delays": (0.05, 0.05, 0.05), "consume_from_where": "CONSUME_FROM_FIRST_OFFSET"}


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, revive_interval=0.02, **FAST_BROKER) as c:
        yield c


async def produce(cluster: EmbeddedCluster, topic: str, bodies: list[bytes], group: str | None = None,
                  protocol: str = "msgpack") -> None:
    async with Producer("pp", cluster.namesrv_addr, protocol=protocol) as producer:
        for b in bodies:
            await producer.send(Message(topic, b, message_group=group))


async def until(predicate: Any, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@PROTOCOLS
async def test_consumers_that_pop_get_every_message_once(cluster: EmbeddedCluster, protocol: str) -> None:
    await create_topic(cluster, "PopPush", 4)
    bodies = [f"m{i}".encode() for i in range(200)]
    seen: list[bytes] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        seen.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumers = [make_consumer(cluster, "PG1", protocol=protocol, **POP) for _ in range(2)]
    for c in consumers:
        c.subscribe("PopPush", "*")
        c.register_message_listener(listener)
        await c.start()
    try:
        await produce(cluster, "PopPush", bodies, protocol=protocol)
        await until(lambda: len(seen) >= len(bodies))
        await asyncio.sleep(0.2)
        assert sorted(seen) == sorted(bodies) and len(seen) == len(set(seen))
        assert [(q.topic, q.queue_id) for q in consumers[0].assigned_queues()] == [("PopPush", -1)]
    finally:
        for c in consumers:
            await c.shutdown()


async def test_failed_messages_come_back_with_the_attempt_count_then_go_to_the_dlq(
    cluster: EmbeddedCluster,
) -> None:
    assert cluster.broker is not None
    await create_topic(cluster, "PopRetry", 2)
    attempts: dict[bytes, list[int]] = collections.defaultdict(list)

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            attempts[m.body].append(m.reconsume_times)
        if msgs[0].body == b"ok":
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        if msgs[0].body == b"flaky" and msgs[0].reconsume_times >= 1:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    c = make_consumer(cluster, "PGR", max_reconsume_times=2, **POP)
    c.subscribe("PopRetry", "*")
    c.register_message_listener(listener)
    await c.start()
    try:
        await produce(cluster, "PopRetry", [b"ok", b"flaky", b"poison"])
        await until(lambda: len(attempts[b"poison"]) >= 3)
        dlq: list[Any] = []

        def in_dlq() -> bool:
            dlq[:] = decode_all(cluster.broker.store.get_message("x", "%DLQ%PGR", 0, 0, 8).body)  # type: ignore
            return bool(dlq)

        await until(in_dlq)
        await asyncio.sleep(0.3)
        assert attempts == {b"ok": [0], b"flaky": [0, 1], b"poison": [0, 1, 2]}
        assert [m.body for m in dlq] == [b"poison"]
    finally:
        await c.shutdown()


async def test_a_listener_raising_cancelled_error_is_retried_and_loses_no_worker(cluster: EmbeddedCluster) -> None:
    """asyncio.CancelledError out of an async listener that was not itself cancelled (it awaited a future
    cancelled elsewhere) is a failed call: the message comes back with its attempt counted, and the one worker
    of consume_thread_max=1 goes on with the rest. It used to end that worker: nothing was consumed again."""
    await create_topic(cluster, "PopCancel", 1)
    attempts: dict[bytes, list[int]] = collections.defaultdict(list)

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [m] = msgs
        attempts[m.body].append(m.reconsume_times)
        if m.body == b"bad" and m.reconsume_times == 0:
            other = asyncio.get_running_loop().create_future()
            other.cancel()
            await other
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = make_consumer(cluster, "PGC", consume_thread_max=1, **POP)
    c.subscribe("PopCancel", "*")
    c.register_message_listener(listener)
    await c.start()
    try:
        await produce(cluster, "PopCancel", [b"bad", b"good-1", b"good-2"])
        await until(lambda: sum(map(len, attempts.values())) >= 4)
        assert attempts == {b"bad": [0, 1], b"good-1": [0], b"good-2": [0]}
    finally:
        await c.shutdown()


async def test_an_orderly_listener_gets_each_group_in_order_through_a_suspension(cluster: EmbeddedCluster) -> None:
    await create_topic(cluster, "PopFifo", 4)
    got: dict[str, list[tuple[bytes, int]]] = collections.defaultdict(list)
    suspended = False

    async def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        nonlocal suspended
        if msgs[0].body == b"ga-2" and not suspended:
            suspended = True
            context.suspend_current_queue_time = 0.05
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        for m in msgs:
            got[m.properties["__SHARDINGKEY"]].append((m.body, m.reconsume_times))
        return ConsumeOrderlyStatus.SUCCESS

    c = make_consumer(cluster, "PGF", **POP)
    c.subscribe("PopFifo", "*")
    c.register_message_listener_orderly(listener)
    for i in range(5):
        for g in ("ga", "gb"):
            await produce(cluster, "PopFifo", [f"{g}-{i}".encode()], group=g)
    await c.start()
    try:
        await until(lambda: sum(map(len, got.values())) >= 10)
        assert [b for b, _ in got["ga"]] == [f"ga-{i}".encode() for i in range(5)]
        assert [b for b, _ in got["gb"]] == [f"gb-{i}".encode() for i in range(5)]
        assert dict(got["ga"])[b"ga-2"] == 1 and dict(got["ga"])[b"ga-0"] == 0  # the attempt, counted in place
    finally:
        await c.shutdown()


async def test_an_orderly_poison_message_goes_to_the_dlq_alone(cluster: EmbeddedCluster) -> None:
    """A message suspended until its max reconsume times goes to the DLQ; the message queued behind it in the same
    popped batch (counted by every pop too, never given to the listener) is consumed after it, not dead-lettered."""
    await create_topic(cluster, "PopFifoDlq", 1)
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        if msgs[0].body == b"bad":
            context.suspend_current_queue_time = 0.05
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    c = make_consumer(cluster, "PGFD", max_reconsume_times=2, **POP)
    c.subscribe("PopFifoDlq", "*")
    c.register_message_listener_orderly(listener)
    await produce(cluster, "PopFifoDlq", [b"bad", b"good"], group="g")
    store = cluster.broker.store
    await c.start()
    try:
        await until(lambda: any(body == b"good" for body, _ in seen))
        assert [body for body, _ in seen] == [b"bad", b"bad", b"bad", b"good"]
        assert store.get_max_offset_in_queue("%DLQ%PGFD", 0) == 1
    finally:
        await c.shutdown()


async def test_a_group_moves_between_client_rebalance_and_pop_without_losing_or_doubling(
    cluster: EmbeddedCluster,
) -> None:
    await create_topic(cluster, "PopMix", 4)
    seen: list[bytes] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        seen.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def consumer(pop: bool) -> PushConsumer:
        options = POP if pop else {"consume_from_where": "CONSUME_FROM_FIRST_OFFSET"}
        c = make_consumer(cluster, "PGM", **options)
        c.subscribe("PopMix", "*")
        c.register_message_listener(listener)
        return c

    for phase, pop in enumerate((False, True, False)):
        batch = [f"p{phase}-{i}".encode() for i in range(60)]
        await produce(cluster, "PopMix", batch)
        c = consumer(pop)
        await c.start()
        try:
            want = 60 * (phase + 1)
            await until(lambda want=want: len(seen) >= want)  # type: ignore[misc]
            await asyncio.sleep(0.3)  # nothing more comes
        finally:
            await c.shutdown()
        assert sorted(seen[-60:]) == sorted(batch) and len(seen) == 60 * (phase + 1), phase


async def test_a_popped_message_that_waited_past_its_invisible_time_is_not_consumed_from_that_pop(
        cluster: EmbeddedCluster) -> None:
    # One consume thread, and the first message's listener outlasts the pop's invisible time: the other nine are
    # given out again by then. RocketMQ skips them (ConsumeRequest.isPopTimeout); consuming and acking these copies
    # with their stale handles only added deliveries, again at each round.
    await create_topic(cluster, "PopLate", 1)
    await produce(cluster, "PopLate", [b"m%d" % i for i in range(10)])
    calls: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        calls.extend((m.body, m.reconsume_times) for m in msgs)
        if msgs[0].body == b"m0" and msgs[0].reconsume_times == 0:
            await asyncio.sleep(1.3)  # past the 1 s invisible time
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(cluster, "PGLate", **{**POP, "pop_invisible_time": 1.0, "consume_thread_max": 1,
                                                   "pop_batch_nums": 10})
    consumer.subscribe("PopLate", "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await until(lambda: {body for body, _ in calls} == {b"m%d" % i for i in range(10)})
    first_copies = [body for body, times in calls if times == 0]
    assert first_copies == [b"m0"], calls  # the nine that waited came back, and only their new copies ran
