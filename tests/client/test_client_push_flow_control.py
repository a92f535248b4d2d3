"""Flow control: a slow listener never makes a consumer cache more than its thresholds, and pulls resume
once it catches up."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from push_helpers import committed, create_topic, make_consumer, max_offsets, send_many, unique

from pocketmq.client import ConsumeConcurrentlyStatus, MessageQueue


def gated_listener(gate: asyncio.Event, consumed: list[int], hold: set[int] | None = None) -> Any:
    """Blocks until ``gate`` opens (only for offsets in ``hold`` when given)."""

    async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            if hold is None or m.queue_offset in hold:
                await gate.wait()
            consumed.append(m.queue_offset)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    return on_messages


@pytest.mark.parametrize("limit", ["count", "size"])
async def test_cache_limits_hold_back_pulls_until_the_listener_catches_up(push_cluster, poll, limit) -> None:
    topic, group = unique("FlowT"), unique("FlowG")
    await create_topic(push_cluster, topic, 1)
    gate, consumed = asyncio.Event(), []
    if limit == "count":
        options, bodies = {"pull_threshold_for_queue": 10}, [b"%03d" % i for i in range(200)]
    else:  # 256 KiB of incompressible bytes each: over 1 MiB after five
        options, bodies = {"pull_threshold_size_for_queue": 1}, [os.urandom(256 * 1024) for _ in range(12)]
    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                             pull_batch_size=4, consume_thread_max=1, **options)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(gated_listener(gate, consumed))
    mq = MessageQueue(topic, "broker-a", 0)
    async with consumer:
        await send_many(push_cluster, topic, bodies, 1, batch=4 if limit == "size" else 50)
        impl = consumer.impl
        await poll(lambda: impl.queue_flow_control_times >= 5, timeout=10)  # engaged, and staying engaged
        pq = impl.rebalance_impl.process_queue_table[mq]
        if limit == "count":
            # Pulls stop once more than 10 are cached; the pull that crossed the line added at most 4.
            assert 10 < pq.msg_count <= 10 + 4
        else:
            assert 1024 * 1024 < pq.msg_size <= 1024 * 1024 + 4 * 256 * 1024
        assert len(consumed) == 0 and pq.msg_count < len(bodies)
        gate.set()  # the listener catches up: the cache drains and pulling resumes
        await poll(lambda: len(consumed) == len(bodies), timeout=10)
        assert sorted(consumed) == list(range(len(bodies)))
        await poll(lambda: committed(push_cluster, group, topic, 1) == max_offsets(push_cluster, topic, 1))


async def test_span_limit(push_cluster, poll) -> None:
    """With the listener stuck, the span of cached offsets reaches its limit long before the count does."""
    topic, group = unique("SpanT"), unique("SpanG")
    await create_topic(push_cluster, topic, 1)
    gate, consumed = asyncio.Event(), []
    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                             pull_batch_size=4, consume_thread_max=1, consume_concurrently_max_span=20)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(gated_listener(gate, consumed))
    mq = MessageQueue(topic, "broker-a", 0)
    async with consumer:
        await send_many(push_cluster, topic, [b"%03d" % i for i in range(100)], 1)
        impl = consumer.impl
        await poll(lambda: impl.queue_max_span_flow_control_times >= 5, timeout=10)
        pq = impl.rebalance_impl.process_queue_table[mq]
        assert 20 < pq.get_max_span() <= 20 + 4 and impl.queue_flow_control_times == 0
        gate.set()
        await poll(lambda: len(consumed) == 100, timeout=10)


async def test_a_stuck_message_holds_the_committed_offset(push_cluster, poll) -> None:
    """Later messages are consumed around a stuck one, but the group's offset stays at the stuck message
    (RocketMQ's rule: a restart may repeat work, never skip it)."""
    topic, group = unique("StuckT"), unique("StuckG")
    await create_topic(push_cluster, topic, 1)
    gate, consumed = asyncio.Event(), []
    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(gated_listener(gate, consumed, hold={10}))
    mq = MessageQueue(topic, "broker-a", 0)
    async with consumer:
        await send_many(push_cluster, topic, [b"%03d" % i for i in range(100)], 1)
        impl = consumer.impl
        await poll(lambda: len(consumed) == 99, timeout=10)
        assert 10 not in consumed and impl.rebalance_impl.process_queue_table[mq].first_offset() == 10
        assert impl.offset_store.offset_table[mq] == 10
        await poll(lambda: committed(push_cluster, group, topic, 1) == [10])
        gate.set()
        await poll(lambda: len(consumed) == 100)
        await poll(lambda: committed(push_cluster, group, topic, 1) == [100])


async def test_a_queue_held_back_longer_than_the_pull_idle_time_is_not_taken_from_its_slow_listener(
        push_cluster, poll) -> None:
    # Flow control held the pulls back while one message took longer than pull_max_idle_time: the rebalance read
    # the queue as "not pulled", dropped it, threw the slow batch's result away and took the queue again at the
    # same offset, over and over (the Java client stamps the pull time before its flow-control checks).
    topic, group = unique("IdleT"), unique("IdleG")
    await create_topic(push_cluster, topic, 1)
    await send_many(push_cluster, topic, [b"%02d" % i for i in range(20)], 1)
    deliveries: dict[int, int] = {}
    gate = asyncio.Event()

    async def slow_first(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            deliveries[m.queue_offset] = deliveries.get(m.queue_offset, 0) + 1
            if m.queue_offset == 0:
                # A guard, released by the test: one the test's own waits could outlast on a loaded machine timed
                # the listener out, and its message came again.
                await asyncio.wait_for(gate.wait(), 30)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", pull_batch_size=4,
                             consume_thread_max=1, pull_threshold_for_queue=5, pull_max_idle_time=0.5,
                             broker_suspend_max_time=0.1, consumer_timeout_when_suspend=0.3)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(slow_first)
    async with consumer:
        await poll(lambda: consumer.impl.queue_flow_control_times > 0, timeout=10)
        await asyncio.sleep(1.5)  # three idle times of flow control, the first message still in its listener
        gate.set()
        await poll(lambda: committed(push_cluster, group, topic, 1) == [20], timeout=15)
    assert deliveries[0] == 1 and sorted(deliveries) == list(range(20))


async def test_topic_limits_are_split_over_every_queue_the_client_holds(push_cluster, poll) -> None:
    # RebalancePushImpl.messageQueueChanged divides by processQueueTable's size: the queues of all the topics
    # the consumer holds, not of the topic that changed.
    first, second, group = unique("FlowTopicA"), unique("FlowTopicB"), unique("FlowTopicG")
    await create_topic(push_cluster, first, 4)
    await create_topic(push_cluster, second, 4)
    consumer = make_consumer(push_cluster, group, pull_threshold_for_topic=100, pull_threshold_size_for_topic=64)
    consumer.subscribe(first, "*")
    consumer.subscribe(second, "*")
    consumer.register_message_listener(gated_listener(asyncio.Event(), []))
    async with consumer:
        impl = consumer.impl
        table = impl.rebalance_impl.process_queue_table
        # (the group's retry topic, once routed, adds its queue: 8 or 9 queues held)
        await poll(lambda: sum(mq.topic in (first, second) for mq in table) == 8, timeout=10)

        def split_over_all() -> bool:
            n = len(table)
            return (impl.pull_threshold_for_queue, impl.pull_threshold_size_for_queue) == (100 // n, 64 // n)

        await poll(split_over_all, timeout=10)
        assert impl.pull_threshold_for_queue in (100 // 8, 100 // 9)
