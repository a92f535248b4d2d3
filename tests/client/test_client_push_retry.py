"""Failed messages come back through %RETRY%group on the delay levels, then land in %DLQ%group.

The broker runs a scaled-down level table ("10ms 20ms 30ms ..."), so the retries of a test take tens of
milliseconds; which level each retry waited on is read from SCHEDULE_TOPIC_XXXX (queue = level - 1).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from push_helpers import committed, create_topic, make_consumer, make_producer, send_many, unique

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageQueue,
    PullConsumer,
    PullStatus,
)
from pocketmq.remoting.body import TopicConfig

SCHEDULE = "SCHEDULE_TOPIC_XXXX"


def schedule_counts(cluster: Any, levels: int = 8) -> list[int]:
    return [cluster.store.get_max_offset_in_queue(SCHEDULE, q) for q in range(levels)]


async def test_reconsume_later_comes_back_on_the_levels_then_goes_to_the_dlq(push_cluster, poll) -> None:
    topic, group = unique("RetryT"), unique("RetryG")
    await create_topic(push_cluster, topic, 2)
    seen: list[tuple[int, str, dict[str, str]]] = []

    async def fail_always(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [msg] = msgs  # consumeMessageBatchMaxSize = 1
        seen.append((msg.reconsume_times, msg.topic, dict(msg.properties)))
        if msg.reconsume_times == 0:
            raise RuntimeError("an exception counts as RECONSUME_LATER")
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = make_consumer(push_cluster, group, max_reconsume_times=3)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(fail_always)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        async with make_producer(push_cluster) as producer:
            sent = await producer.send(Message(topic, b"poison", tags="T1", keys="k-1"))
        dlq = f"%DLQ%{group}"
        await poll(lambda: push_cluster.store.get_max_offset_in_queue(dlq, 0) == 1, timeout=10)
        # The original and three retries; the fourth failure (reconsume_times 3 = max) went to the DLQ.
        assert [rt for rt, _, _ in seen] == [0, 1, 2, 3]
        # Retry n waited on delay level 3 + (n - 1): levels 3, 4 and 5, one message each, none elsewhere.
        assert schedule_counts(push_cluster) == [0, 0, 1, 1, 1, 0, 0, 0]
        now_ms = time.time() * 1000
        for _, _, props in seen:  # each call marked with when its consumption began (RocketMQ's property)
            assert now_ms - 60_000 < int(props["CONSUME_START_TIME"]) <= now_ms
        for _, shown_topic, props in seen[1:]:
            assert shown_topic == topic  # the listener sees the original topic, not %RETRY%group
            assert props["RETRY_TOPIC"] == topic
            assert props["ORIGIN_MESSAGE_ID"] == sent.offset_msg_id
            assert props["TAGS"] == "T1" and props["KEYS"] == "k-1"
            assert props["UNIQ_KEY"] == sent.msg_id
        # Nothing of the group is left to consume: the original and every retry were committed.
        om = push_cluster.broker.consumer_offset_manager
        retry = f"%RETRY%{group}"
        await poll(lambda: om.query_offset(group, retry, 0) == push_cluster.store.get_max_offset_in_queue(retry, 0))
        await poll(lambda: om.query_offset(group, topic, sent.message_queue.queue_id) == sent.queue_offset + 1)

    async with PullConsumer(unique("Reader"), push_cluster.namesrv_addr, instance_name=unique("r")) as reader:
        result = await reader.pull(MessageQueue(dlq, "broker-a", 0), "*", 0)
    assert result.pull_status is PullStatus.FOUND
    [dead] = result.msg_found_list
    assert dead.body == b"poison" and dead.reconsume_times == 4
    assert dead.properties["RETRY_TOPIC"] == topic and dead.properties["ORIGIN_MESSAGE_ID"] == sent.offset_msg_id


async def test_context_picks_the_level_or_the_dlq(push_cluster, poll) -> None:
    topic, group = unique("LevelT"), unique("LevelG")
    await create_topic(push_cluster, topic, 1)
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [msg] = msgs
        seen.append((msg.body, msg.reconsume_times))
        if msg.reconsume_times > 0:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        context.delay_level_when_next_consume = 7 if msg.body == b"level7" else -1
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = make_consumer(push_cluster, group)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        async with make_producer(push_cluster) as producer:
            await producer.send(Message(topic, b"level7"))
            await producer.send(Message(topic, b"straight-to-dlq"))
        await poll(lambda: sorted(seen) == [(b"level7", 0), (b"level7", 1), (b"straight-to-dlq", 0)], timeout=10)
        assert schedule_counts(push_cluster) == [0, 0, 0, 0, 0, 0, 1, 0]
        assert push_cluster.store.get_max_offset_in_queue(f"%DLQ%{group}", 0) == 1


async def test_send_back_failure_falls_back_to_a_send_then_to_a_local_retry(push_cluster, poll) -> None:
    """Two faults made for real: a message whose commit-log offset the broker cannot find (the listener
    corrupts it) makes CONSUMER_SEND_MSG_BACK fail, so the consumer sends the copy to %RETRY%group itself;
    a read-only retry topic makes that fail too, so the message is consumed again locally."""
    topic, group = unique("FallbackT"), unique("FallbackG")
    retry = f"%RETRY%{group}"
    await create_topic(push_cluster, topic, 1)
    seen: list[tuple[bytes, int, dict[str, str]]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [msg] = msgs
        seen.append((msg.body, msg.reconsume_times, dict(msg.properties)))
        if msg.reconsume_times > 0:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        msg.commit_log_offset += 1 << 40  # the broker will not find the original
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = make_consumer(push_cluster, group, local_retry_delay=0.05)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer, make_producer(push_cluster) as producer:
        await poll(lambda: any(q.topic == retry for q in consumer.assigned_queues()), timeout=10)
        await producer.send(Message(topic, b"first"))
        await poll(lambda: [(b, rt) for b, rt, _ in seen] == [(b"first", 0), (b"first", 1)], timeout=10)
        # The client's own copy: it carries RECONSUME_TIME and MAX_RECONSUME_TIMES, which the broker's does not.
        copy = seen[1][2]
        assert copy["RECONSUME_TIME"] == "1" and copy["MAX_RECONSUME_TIMES"] == "16"
        assert copy["RETRY_TOPIC"] == topic
        assert push_cluster.store.get_max_offset_in_queue(retry, 0) == 1
        assert schedule_counts(push_cluster)[2] == 1  # it still waited on delay level 3

        # Now the retry topic refuses writes too: the route says so, and the message is retried here.
        tcm = push_cluster.broker.topic_config_manager
        tcm.update_topic_config(TopicConfig(retry, 1, 1, 4))
        await push_cluster.broker.register_broker_all()
        await poll(lambda: consumer.instance.topic_route_table[retry].queue_datas[0].perm == 4, timeout=10)
        seen.clear()
        await producer.send(Message(topic, b"second"))
        await poll(lambda: [(b, rt) for b, rt, _ in seen] == [(b"second", 0), (b"second", 1)], timeout=10)
        assert "RECONSUME_TIME" not in seen[1][2]  # the same message, consumed again locally
        assert push_cluster.store.get_max_offset_in_queue(retry, 0) == 1  # nothing new was written there
        om = push_cluster.broker.consumer_offset_manager
        await poll(lambda: om.query_offset(group, topic, 0) == 2)


async def test_the_consumers_own_retry_copies_reach_the_dlq_after_as_many_deliveries_as_send_backs(
        push_cluster, poll) -> None:
    # Every send-back fails (the offset is corrupted), so each retry is the consumer's own copy, which carries
    # its next reconsume times: as RocketMQ 5's broker, the DLQ takes the one past the maximum.
    topic, group = unique("FallbackMaxT"), unique("FallbackMaxG")
    await create_topic(push_cluster, topic, 1)
    seen: list[int] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [msg] = msgs
        seen.append(msg.reconsume_times)
        msg.commit_log_offset += 1 << 40
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = make_consumer(push_cluster, group, max_reconsume_times=2, local_retry_delay=0.05)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    dlq = f"%DLQ%{group}"
    async with consumer, make_producer(push_cluster) as producer:
        await poll(lambda: any(q.topic == f"%RETRY%{group}" for q in consumer.assigned_queues()), timeout=10)
        await producer.send(Message(topic, b"doomed"))
        await poll(lambda: push_cluster.store.get_max_offset_in_queue(dlq, 0) == 1, timeout=10)
    assert seen == [0, 1, 2]  # (the same as when the broker's send-back works)
    async with PullConsumer(unique("Reader"), push_cluster.namesrv_addr, instance_name=unique("r")) as reader:
        [dead] = (await reader.pull(MessageQueue(dlq, "broker-a", 0), "*", 0)).msg_found_list
    assert (dead.body, dead.reconsume_times) == (b"doomed", 3)


async def test_a_message_stuck_in_the_listener_is_sent_back_after_the_consume_timeout(push_cluster, poll) -> None:
    topic, group = unique("StuckT"), unique("StuckG")
    await create_topic(push_cluster, topic, 1)
    release = asyncio.Event()
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [msg] = msgs
        seen.append((msg.body, msg.reconsume_times))
        if msg.body == b"slow" and msg.reconsume_times == 0:
            await release.wait()  # stuck far beyond the consume timeout
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(push_cluster, group, consume_timeout=0.2)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        async with make_producer(push_cluster) as producer:
            await producer.send(Message(topic, b"slow"))
            await producer.send(Message(topic, b"fast"))
        # The copy sent back comes through the retry topic while the first call is still stuck...
        await poll(lambda: (b"slow", 1) in seen, timeout=10)
        assert release.is_set() is False and schedule_counts(push_cluster)[2] == 1
        # ...and the queue's offset no longer waits for it.
        om = push_cluster.broker.consumer_offset_manager
        await poll(lambda: om.query_offset(group, topic, 0) == 2)
        release.set()


async def test_a_new_groups_first_retry_comes_after_the_delay_not_the_next_rebalance(push_cluster, poll) -> None:
    """A new group's %RETRY% topic is created by its first heartbeat, after the start-up route lookup, and
    reaches the name server with the broker's next registration: the consumer learns its queues at start-up,
    not at the next name-server poll and rebalance (30 s and 20 s here, RocketMQ's defaults), so the retry
    comes after the delay level's time (milliseconds here)."""
    topic, group = unique("FirstRetryT"), unique("FirstRetryG")
    await create_topic(push_cluster, topic, 1)
    broker = push_cluster.broker
    register = broker.register_broker_all

    async def slow_register() -> Any:
        # A name server farther away than this process's: the new topic reaches it after the consumer's
        # start-up rebalance (a delay wrapped around the real registration, which in-process takes ~1 ms).
        await asyncio.sleep(0.3)
        return await register()

    broker.register_broker_all = slow_register
    seen: list[int] = []

    async def fail_once(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        seen.extend(m.reconsume_times for m in msgs)
        if msgs[0].reconsume_times == 0:
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(push_cluster, group, rebalance_interval=20.0, poll_name_server_interval=30.0)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(fail_once)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        async with make_producer(push_cluster) as producer:
            await producer.send(Message(topic, b"again"))
        await poll(lambda: seen == [0, 1], timeout=10)  # (well before the next rebalance's)
        assert MessageQueue(f"%RETRY%{group}", "broker-a", 0) in consumer.assigned_queues()


async def test_an_ack_index_below_minus_one_means_none_of_the_batch_succeeded(push_cluster, poll) -> None:
    # ack_index -2 sliced the batch from its end: only the last message went back, the others were committed past.
    topic, group = unique("AckT"), unique("AckG")
    await create_topic(push_cluster, topic, 1)
    await send_many(push_cluster, topic, [b"m%d" % i for i in range(4)], 1, batch=4)
    succeeded: set[bytes] = set()

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        if any(m.reconsume_times == 0 for m in msgs):
            context.ack_index = -2  # "nothing of this batch succeeded"
        else:
            succeeded.update(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(push_cluster, group, consume_message_batch_max_size=4,
                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await poll(lambda: len(succeeded) == 4, timeout=15)  # every one came back from the retry topic
    assert succeeded == {b"m%d" % i for i in range(4)}


async def test_a_listener_raising_cancelled_error_is_retried_and_loses_no_worker(push_cluster, poll) -> None:
    """asyncio.CancelledError out of an async listener that was not itself cancelled (it awaited a future
    something else cancelled) is a failed call, as RocketMQ's catch (Throwable) makes of it: the message comes
    back through %RETRY% and the pool keeps its workers. It used to end one worker per call: with both of
    consume_thread_max gone, the messages behind were never consumed and the offset never moved."""
    topic, group = unique("CancelT"), unique("CancelG")
    await create_topic(push_cluster, topic, 1)
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        [m] = msgs
        seen.append((m.body, m.reconsume_times))
        if m.body.startswith(b"bad") and m.reconsume_times == 0:
            other = asyncio.get_running_loop().create_future()
            other.cancel()
            await other
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(push_cluster, group, consume_thread_max=2,
                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await poll(lambda: any(q.topic == topic for q in consumer.assigned_queues()), timeout=10)
        await send_many(push_cluster, topic, [b"bad-1", b"bad-2", b"good-1", b"good-2", b"good-3"], 1)
        await poll(lambda: len(seen) >= 7, timeout=10)
        assert sorted(seen) == [(b"bad-1", 0), (b"bad-1", 1), (b"bad-2", 0), (b"bad-2", 1),
                                (b"good-1", 0), (b"good-2", 0), (b"good-3", 0)]
        await poll(lambda: committed(push_cluster, group, topic, 1) == [5], timeout=10)
        executor = consumer.impl.consume_message_service.executor
        assert [w.done() for w in executor._workers] == [False, False]
