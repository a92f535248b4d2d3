"""LitePullConsumer against a real name server and broker: subscribe (the group splits the queues) or assign,
poll, seek, pause / resume, auto and manual commit, flow control."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from push_helpers import committed, create_topic, make_producer, max_offsets, send_many, unique

from pocketmq.client import LitePullConsumer, Message, MessageQueue, MQClientException, Producer

# Every timer in tens of milliseconds (rebalance, heartbeats, offset persistence, pauses).
FAST: dict[str, Any] = {
    "rebalance_interval": 0.2,
    "heartbeat_broker_interval": 0.1,
    "poll_name_server_interval": 0.2,
    "persist_consumer_offset_interval": 0.1,
    "pull_time_delay_when_exception": 0.05,
    "pull_time_delay_when_pause": 0.02,
    "pull_time_delay_when_flow_control": 0.01,
    "auto_commit_interval": 0.05,
}


def lite(cluster: Any, group: str, **options: Any) -> LitePullConsumer:
    settings = dict(FAST)
    settings.setdefault("instance_name", unique("lite"))
    settings.update(options)
    return LitePullConsumer(group, cluster.namesrv_addr, **settings)


async def poll_while(consumer: LitePullConsumer, predicate: Any, rounds: int = 1500) -> None:
    """Keep polling (each poll auto-commits what the earlier ones returned) until ``predicate()``."""
    for _ in range(rounds):
        if predicate():
            return
        assert await consumer.poll(timeout=0.02) == []
    raise AssertionError("condition not met")


async def poll_until(consumer: LitePullConsumer, count: int, rounds: int = 600) -> list[Any]:
    got: list[Any] = []
    for _ in range(rounds):
        if len(got) >= count:
            break
        got += await consumer.poll(timeout=0.05)
    return got


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_subscribe_polls_everything_once_and_auto_commits(push_cluster, protocol) -> None:
    topic, group = unique("LiteT"), unique("LiteG")
    await create_topic(push_cluster, topic, 2)
    bodies = [b"m%03d" % i for i in range(40)]
    await send_many(push_cluster, topic, bodies, 2, batch=10)
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", protocol=protocol)
    consumer.subscribe(topic, "*")
    async with consumer:
        got = await poll_until(consumer, len(bodies))
        assert sorted(m.body for m in got) == bodies  # each once
        assert consumer.assignment() == {MessageQueue(topic, "broker-a", q) for q in range(2)}
        # Later polls commit what the earlier ones returned; the instance persists it.
        everything = max_offsets(push_cluster, topic, 2)
        await poll_while(consumer, lambda: committed(push_cluster, group, topic, 2) == everything)


async def test_tag_subscription_filters(push_cluster) -> None:
    topic, group = unique("LiteTagT"), unique("LiteTagG")
    await create_topic(push_cluster, topic, 1)
    async with make_producer(push_cluster) as producer:
        for i in range(10):
            await producer.send(Message(topic, b"%d" % i, tags="even" if i % 2 == 0 else "odd"))
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "even")
    async with consumer:
        got = await poll_until(consumer, 5)
        assert [m.body for m in got] == [b"0", b"2", b"4", b"6", b"8"]
        assert await consumer.poll(timeout=0.05) == []


async def test_two_members_split_the_queues_and_the_survivor_takes_them_all(push_cluster, poll) -> None:
    topic, group = unique("LiteSplitT"), unique("LiteSplitG")
    await create_topic(push_cluster, topic, 4)
    a = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    b = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    a.subscribe(topic)
    b.subscribe(topic)
    everything = {MessageQueue(topic, "broker-a", q) for q in range(4)}
    async with a:
        await poll(lambda: a.assignment() == everything, timeout=10)
        async with b:
            await poll(lambda: len(a.assignment()) == len(b.assignment()) == 2, timeout=10)
            assert a.assignment() | b.assignment() == everything
            await send_many(push_cluster, topic, [b"x%02d" % i for i in range(40)], 4, batch=5)
            got_a = await poll_until(a, 20)
            got_b = await poll_until(b, 20)
            assert {m.queue_id for m in got_a} == {mq.queue_id for mq in a.assignment()}
            assert sorted(m.body for m in got_a + got_b) == [b"x%02d" % i for i in range(40)]
            await a.poll(timeout=0.06)  # (past the auto-commit interval: b's shutdown commits all it polled)
        await poll(lambda: a.assignment() == everything, timeout=10)
        # b committed when it left: a starts b's old queues where b stopped, so nothing comes again.
        assert await a.poll(timeout=0.1) == []


async def test_assign_seek_seek_to_begin_and_end(push_cluster) -> None:
    topic, group = unique("LiteSeekT"), unique("LiteSeekG")
    await create_topic(push_cluster, topic, 2)
    mq = MessageQueue(topic, "broker-a", 0)
    async with make_producer(push_cluster) as producer:
        for i in range(10):
            await producer.send(Message(topic, b"%d" % i), mq)
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    with pytest.raises(MQClientException, match="not running"):
        await consumer.poll(0.01)
    consumer.assign([mq])
    with pytest.raises(MQClientException, match="mutually exclusive"):
        consumer.subscribe(topic)
    async with consumer:
        assert consumer.assignment() == {mq}
        got = await poll_until(consumer, 10)
        assert [m.queue_offset for m in got] == list(range(10))
        await consumer.seek(mq, 7)
        assert [m.queue_offset for m in await poll_until(consumer, 3)] == [7, 8, 9]
        await consumer.seek_to_begin(mq)
        assert [m.queue_offset for m in await poll_until(consumer, 10)] == list(range(10))
        await consumer.seek_to_end(mq)
        assert await consumer.poll(timeout=0.05) == []
        async with make_producer(push_cluster) as producer:
            await producer.send(Message(topic, b"new"), mq)
        [new] = await poll_until(consumer, 1)
        assert (new.body, new.queue_offset) == (b"new", 10)
        with pytest.raises(MQClientException, match="Seek offset illegal"):
            await consumer.seek(mq, 12)
        with pytest.raises(MQClientException, match="not in assigned list"):
            await consumer.seek(MessageQueue(topic, "broker-a", 1), 0)


async def test_offset_for_timestamp_finds_the_first_message_stored_at_or_after_it(push_cluster) -> None:
    topic = unique("LiteTimeT")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    async with make_producer(push_cluster) as producer:
        for i in range(6):
            await producer.send(Message(topic, b"%d" % i), mq)
            await asyncio.sleep(0.003)  # (distinct store times, a millisecond apart at least)
    consumer = lite(push_cluster, unique("LiteTimeG"), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    with pytest.raises(MQClientException, match="not running"):
        await consumer.offset_for_timestamp(mq, 0)
    consumer.assign([mq])
    async with consumer:
        stored = [(m.queue_offset, m.store_timestamp) for m in await poll_until(consumer, 6)]
        assert [offset for offset, _ in stored] == list(range(6))
        for _, ts in stored:
            expected = min(offset for offset, t in stored if t >= ts)
            assert await consumer.offset_for_timestamp(mq, ts) == expected
        assert await consumer.offset_for_timestamp(mq, 0) == 0
        assert await consumer.offset_for_timestamp(mq, stored[-1][1] + 60_000) == 6  # past the last: the end


async def test_queue_change_listener_hears_of_new_queues(push_cluster) -> None:
    topic = unique("LiteGrowT")
    await create_topic(push_cluster, topic, 2)
    heard: list[tuple[str, set[MessageQueue]]] = []
    consumer = lite(push_cluster, unique("LiteGrowG"), topic_metadata_check_interval=0.05)
    consumer.register_topic_message_queue_change_listener(topic, lambda t, queues: heard.append((t, set(queues))))
    async with consumer:
        for _ in range(3000):  # the queues it starts with are remembered, not announced
            if topic in consumer._queues_for_topic:
                break
            await asyncio.sleep(0.01)
        assert heard == []
        await create_topic(push_cluster, topic, 4)
        for _ in range(3000):
            if heard:
                break
            await asyncio.sleep(0.01)
    assert heard == [(topic, {MessageQueue(topic, "broker-a", q) for q in range(4)})]


async def test_an_async_queue_change_listener_is_run(push_cluster) -> None:
    # Called and never awaited, an async def listener never ran (a RuntimeWarning): new queues were never assigned.
    topic = unique("LiteGrowAsyncT")
    await create_topic(push_cluster, topic, 2)
    heard: list[int] = []
    consumer = lite(push_cluster, unique("LiteGrowAsyncG"), topic_metadata_check_interval=0.05)

    async def listener(t: str, queues: Any) -> None:
        await asyncio.sleep(0)
        heard.append(len(queues))

    consumer.register_topic_message_queue_change_listener(topic, listener)
    async with consumer:
        for _ in range(3000):
            if topic in consumer._queues_for_topic:
                break
            await asyncio.sleep(0.01)
        await create_topic(push_cluster, topic, 4)
        for _ in range(3000):
            if heard:
                break
            await asyncio.sleep(0.01)
    assert heard == [4]


async def test_a_seek_without_a_commit_stores_no_offset(push_cluster) -> None:
    # setSeekOffset alone, as in RocketMQ: a seek stored the offset, so a manual-commit consumer that seeked ahead
    # and stopped before committing skipped the messages it never polled.
    topic, group = unique("LiteSeekT"), unique("LiteSeekG")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    await send_many(push_cluster, topic, [b"%d" % i for i in range(20)], 1, batch=10)
    consumer = lite(push_cluster, group, auto_commit=False, pull_batch_size=5)
    consumer.assign([mq])
    async with consumer:
        assert [m.queue_offset for m in await consumer.poll(timeout=5)] == list(range(5))
        await consumer.commit_sync()
        await consumer.seek(mq, 15)
        assert [m.queue_offset for m in await poll_until(consumer, 5)] == list(range(15, 20))
        for _ in range(600):  # the commit's persist (every 0.1 s; later on a loaded machine)
            if committed(push_cluster, group, topic, 1) != [-1]:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # three persist periods more
        assert committed(push_cluster, group, topic, 1) == [5]
    assert committed(push_cluster, group, topic, 1) == [5]  # (nor at shutdown)


async def test_a_queue_assigned_away_and_back_goes_on_from_its_commit_in_memory(push_cluster) -> None:
    # Read from the broker only, a commit not yet persisted was ignored (and overwritten): the queue's messages
    # came again (RebalanceLitePullImpl reads MEMORY_FIRST_THEN_STORE).
    topic, group = unique("LiteBackT"), unique("LiteBackG")
    await create_topic(push_cluster, topic, 2)
    q0, q1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)
    await send_many(push_cluster, topic, [b"%d" % i for i in range(10)], 2, batch=10)  # (one batch: queue 0)
    consumer = lite(push_cluster, group, persist_consumer_offset_interval=60.0)
    consumer.assign([q0])
    async with consumer:
        assert len(await poll_until(consumer, 10)) == 10
        for _ in range(1500):  # (a poll auto-commits what the earlier ones returned)
            if await consumer.committed(q0) == 10:
                break
            assert await consumer.poll(timeout=0.02) == []
        assert committed(push_cluster, group, topic, 2) == [-1, -1]  # in memory only
        consumer.assign([q1])
        consumer.assign([q0])
        assert await consumer.poll(timeout=0.5) == []


async def test_manual_commit_stores_only_what_was_polled(push_cluster) -> None:
    topic, group = unique("LiteCommitT"), unique("LiteCommitG")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    await send_many(push_cluster, topic, [b"%d" % i for i in range(30)], 1, batch=10)
    consumer = lite(push_cluster, group, auto_commit=False, pull_batch_size=10)
    consumer.assign([mq])
    async with consumer:
        first = await consumer.poll(timeout=5)
        assert [m.queue_offset for m in first] == list(range(10))
        await asyncio.sleep(0.3)  # three persist periods: still nothing stored, commits are manual
        assert committed(push_cluster, group, topic, 1) == [-1]
        await consumer.commit_sync()
        assert committed(push_cluster, group, topic, 1) == [10]  # stored at the broker when it returns
        assert await consumer.committed(mq) == 10
    # A new member starts at the commit: the 20 pulled but never polled come again.
    again = lite(push_cluster, group, auto_commit=False, pull_batch_size=10)
    again.assign([mq])
    async with again:
        assert [m.queue_offset for m in await poll_until(again, 20)] == list(range(10, 30))


async def test_pause_stops_a_queues_pulls_until_resume(push_cluster) -> None:
    topic, group = unique("LitePauseT"), unique("LitePauseG")
    await create_topic(push_cluster, topic, 2)
    q0, q1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.assign([q0, q1])
    async with consumer:
        consumer.pause([q0])
        async with make_producer(push_cluster) as producer:
            for i in range(5):
                await producer.send(Message(topic, b"zero%d" % i), q0)
                await producer.send(Message(topic, b"one%d" % i), q1)
        got = await poll_until(consumer, 5)
        assert sorted(m.body for m in got) == [b"one%d" % i for i in range(5)]
        assert await consumer.poll(timeout=0.1) == []  # q0 paused: nothing of it pulled
        consumer.resume([q0])
        assert sorted(m.body for m in await poll_until(consumer, 5)) == [b"zero%d" % i for i in range(5)]


async def test_flow_control_bounds_what_is_pulled_and_not_polled(push_cluster, poll) -> None:
    topic, group = unique("LiteFlowT"), unique("LiteFlowG")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    await send_many(push_cluster, topic, [b"%03d" % i for i in range(200)], 1, batch=50)
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                    pull_batch_size=4, pull_threshold_for_queue=10)
    consumer.assign([mq])
    async with consumer:
        await poll(lambda: consumer.queue_flow_control_times > 0)
        pq = consumer.assigned_message_queue.get(mq).process_queue
        assert pq.msg_count <= 10 + 4  # one pull may cross the threshold, then pulls stop
        got = await poll_until(consumer, 200, rounds=2000)
        assert [m.body for m in got] == [b"%03d" % i for i in range(200)]  # in order, nothing lost


async def test_the_cache_over_every_queue_is_bounded_too(push_cluster, poll) -> None:
    topic, group = unique("LiteAllT"), unique("LiteAllG")
    await create_topic(push_cluster, topic, 4)
    await send_many(push_cluster, topic, [b"%03d" % i for i in range(200)], 4, batch=25)
    consumer = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                    pull_batch_size=5, pull_threshold_for_all=20)
    consumer.subscribe(topic)
    async with consumer:
        await poll(lambda: consumer.consume_request_flow_control_times > 0, timeout=10)
        got = await poll_until(consumer, 200, rounds=2000)
        assert sorted(m.body for m in got) == [b"%03d" % i for i in range(200)]


async def test_a_commit_made_while_an_offset_is_on_its_way_reaches_the_broker_at_shutdown(push_cluster) -> None:
    # The store sent offset 5; while it was on its way another task committed 10. Clearing the queue's mark when
    # 5 was answered lost 10: shutdown's persist skipped the queue and a restart consumed 5..9 again.
    topic, group = unique("LiteT"), unique("LiteG")
    await create_topic(push_cluster, topic, 1)
    await send_many(push_cluster, topic, [b"x"], 1)
    [broker] = push_cluster.brokers
    mq = MessageQueue(topic, broker.broker_config.broker_name, 0)
    consumer = lite(push_cluster, group, auto_commit=False, persist_consumer_offset_interval=60)
    consumer.assign([mq])
    async with consumer:
        store = consumer.offset_store
        store.update_offset(mq, 5)
        persisting = asyncio.ensure_future(store.persist(mq))
        await asyncio.sleep(0)  # the request is written; its answer is still to come
        store.update_offset(mq, 10)
        await persisting
        assert store.unsent_offset(mq) == 10
    assert broker.consumer_offset_manager.query_offset(group, topic, 0) == 10


async def test_a_seek_back_over_buffered_messages_commits_no_further_than_what_was_polled(push_cluster) -> None:
    # After a seek back, the queue's record of the highest offset pulled stayed: the poll that emptied it set the
    # consume offset past every message buffered before the seek, and a commit skipped all those never polled.
    topic, group = unique("LiteT"), unique("LiteG")
    await create_topic(push_cluster, topic, 1)
    await send_many(push_cluster, topic, [b"%d" % i for i in range(100)], 1, batch=20)
    [broker] = push_cluster.brokers
    mq = MessageQueue(topic, broker.broker_config.broker_name, 0)
    consumer = lite(push_cluster, group, auto_commit=False, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                    pull_batch_size=10)
    consumer.assign([mq])
    async with consumer:
        for _ in range(3000):  # the pulls buffer the whole queue (ten requests of ten)
            if consumer.assigned_message_queue.get(mq).process_queue.queue_offset_max >= 99:
                break
            await asyncio.sleep(0.01)
        first = await poll_until(consumer, 1)
        assert [m.queue_offset for m in first] == list(range(10))
        await consumer.seek(mq, 0)
        again = await poll_until(consumer, 1)
        assert again and again[0].queue_offset == 0
        await consumer.commit_sync()
    assert committed(push_cluster, group, topic, 1) == [again[-1].queue_offset + 1]


async def test_a_batch_still_in_hand_when_its_queue_is_taken_away_is_read_again(push_cluster, poll) -> None:
    """With auto commit, a poll commits the batches before it. A rebalance that takes a queue away committed the
    batch the last poll returned, which the application may still be processing: the next owner started past it,
    and a crash of the first member lost it. As RocketMQ's RebalanceLitePullImpl, only what earlier commits stored
    is persisted: the next owner reads the batch again (a duplicate, never a loss)."""
    topic, group = unique("LiteHandT"), unique("LiteHandG")
    await create_topic(push_cluster, topic, 2)
    q1 = MessageQueue(topic, "broker-a", 1)  # (the queue the second member, sorted after the first, will take)
    async with Producer(unique("HandPG"), push_cluster.namesrv_addr, instance_name=unique("hp")) as producer:
        for i in range(10):
            await producer.send(Message(topic, b"h%d" % i), q1)
    first = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", instance_name="a-first",
                 pull_batch_size=10)
    second = lite(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", instance_name="b-second")
    first.subscribe(topic)
    second.subscribe(topic)
    async with first:
        in_hand = await poll_until(first, 10)
        assert [m.body for m in in_hand] == [b"h%d" % i for i in range(10)]  # (not polled again: still in hand)
        async with second:
            await poll(lambda: second.assignment() == {q1} and q1 not in first.assignment(), timeout=10)
            await asyncio.sleep(0.3)  # (several offset persists of both members)
            assert committed(push_cluster, group, topic, 2)[1] < 10  # (it was 10: the batch counted as consumed)
            again = await poll_until(second, 10)
            assert [m.body for m in again] == [m.body for m in in_hand]


async def test_a_consumer_shut_down_is_not_started_again(push_cluster) -> None:
    """DefaultLitePullConsumerImpl.start refuses SHUTDOWN_ALREADY. A second start was taken, and an assign() made
    after the first start was forgotten by it: the consumer ran and read nothing, without an error."""
    topic, group = unique("LiteAgainT"), unique("LiteAgainG")
    await create_topic(push_cluster, topic, 1)
    consumer = lite(push_cluster, group)
    await consumer.start()
    consumer.assign([MessageQueue(topic, "broker-a", 0)])
    await consumer.shutdown()
    with pytest.raises(MQClientException, match="maybe started once"):
        await consumer.start()


async def test_a_poll_waiting_at_shutdown_returns_at_once(push_cluster) -> None:
    # Nothing woke it: a poll(timeout=30) waiting when the consumer shut down returned only at its timeout.
    topic, group = unique("LiteWakeT"), unique("LiteWakeG")
    await create_topic(push_cluster, topic, 1)
    consumer = lite(push_cluster, group)
    consumer.subscribe(topic, "*")
    await consumer.start()
    waiting = asyncio.create_task(consumer.poll(timeout=30))
    await asyncio.sleep(0)  # (the poll is waiting for messages now)
    await consumer.shutdown()
    try:
        assert waiting.done() and waiting.result() == []
    finally:
        waiting.cancel()
