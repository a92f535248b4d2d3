"""ConsumeFromWhere decides where a group starts a queue only when the broker has no offset for it."""

from __future__ import annotations

import time
from typing import Any

from push_helpers import FAST_BROKER, create_topic, make_consumer, send_many, unique

from pocketmq import embedded
from pocketmq.client import ConsumeConcurrentlyStatus, ConsumeFromWhere, MessageQueue, PullConsumer


async def consume(cluster: Any, poll: Any, group: str, topic: str, where: ConsumeFromWhere, expected: list[bytes],
                  **options: Any) -> list[bytes]:
    got: list[bytes] = []

    async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    # Short long-polls: an idle queue answers NO_NEW_MSG quickly, which records where the consumer stands.
    consumer = make_consumer(cluster, group, consume_from_where=where, broker_suspend_max_time=0.1,
                             consumer_timeout_when_suspend=2.0, **options)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(on_messages)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        await poll(lambda: len(got) >= len(expected))
        # Its start offset is settled and reached: whatever it got is all it gets of these messages.
        mq = MessageQueue(topic, "broker-a", 0)
        end = cluster.store.get_max_offset_in_queue(topic, 0)
        await poll(lambda: consumer.impl.offset_store.offset_table.get(mq, -1) >= end)
    return got


async def test_first_last_and_timestamp_apply_only_without_a_stored_offset(tmp_path, poll) -> None:
    # accessMessageInMemoryMaxRatio=0 makes the broker answer QUERY_NOT_FOUND for a group new to a queue;
    # by default it answers 0 for small queues held in memory (see the next test).
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER, access_message_in_memory_max_ratio=0) as cluster:
        topic = unique("WhereT")
        await create_topic(cluster, topic, 1)
        early = [f"early{i}".encode() for i in range(5)]
        await send_many(cluster, topic, early, 1)
        second = int(time.time())
        await poll(lambda: int(time.time()) > second, timeout=2)  # consumeTimestamp has 1 s resolution
        # localtime() of the current time would read the kernel's coarse clock, a tick behind time.time().
        since = time.strftime("%Y%m%d%H%M%S", time.localtime(second + 1))
        late = [f"late{i}".encode() for i in range(5)]
        await send_many(cluster, topic, late, 1)
        everything = early + late

        assert await consume(cluster, poll, unique("First"), topic, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                             everything) == everything
        assert await consume(cluster, poll, unique("Stamp"), topic, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
                             late, consume_timestamp=since) == late
        assert await consume(cluster, poll, unique("Last"), topic, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                             []) == []

        # A stored offset wins over every ConsumeFromWhere.
        for where in ConsumeFromWhere:
            group = unique("Stored")
            async with PullConsumer(group, cluster.namesrv_addr, instance_name=unique("p")) as setter:
                await setter.update_consume_offset(MessageQueue(topic, "broker-a", 0), 3)
            assert await consume(cluster, poll, group, topic, where, everything[3:],
                                 consume_timestamp=since) == everything[3:], where


async def test_a_new_group_on_a_small_queue_starts_at_zero_even_from_last(push_cluster, poll) -> None:
    """RocketMQ's QUERY_CONSUMER_OFFSET answers 0 for a group new to a queue whose first message is still in
    memory, so CONSUME_FROM_LAST_OFFSET reads the queue from the start: the broker has an "offset"."""
    topic = unique("SmallT")
    await create_topic(push_cluster, topic, 1)
    bodies = [f"m{i}".encode() for i in range(5)]
    await send_many(push_cluster, topic, bodies, 1)
    assert await consume(push_cluster, poll, unique("Last"), topic, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                         bodies) == bodies
