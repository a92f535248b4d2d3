"""Orderly push consumption: per-queue order, one consumer per queue at any moment, across rebalances."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any

from push_helpers import committed, create_topic, make_consumer, make_producer, max_offsets, send_many, unique

from pocketmq.client import (
    ConsumeOrderlyStatus,
    Message,
    MessageQueue,
    PullConsumer,
    select_message_queue_by_hash,
)
from pocketmq.common.codec import decode_all

QUEUES = 4
ORDERS = 12
STEPS = 30


class Recorder:
    """What the listeners saw: arrivals per order id, and who was inside each queue at every moment."""

    def __init__(self) -> None:
        self.arrivals: dict[str, list[tuple[str, int]]] = defaultdict(list)  # order id -> (consumer, step)
        self.inside: dict[int, set[str]] = defaultdict(set)  # queue id -> consumers in the listener now
        self.overlaps: list[tuple[int, set[str]]] = []
        self.count = 0

    def listener(self, name: str) -> Any:
        async def on_messages(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
            q = context.message_queue.queue_id
            if self.inside[q]:
                self.overlaps.append((q, self.inside[q] | {name}))
            self.inside[q].add(name)
            try:
                for m in msgs:
                    order, step = m.body.decode().split(":")
                    self.arrivals[order].append((name, int(step)))
                    self.count += 1
                await asyncio.sleep(0.001)  # the work; other consumers' batches run meanwhile
            finally:
                self.inside[q].discard(name)
            return ConsumeOrderlyStatus.SUCCESS

        return on_messages


async def send_orders(cluster: Any, topic: str, steps: range) -> None:
    async with make_producer(cluster) as producer:
        for step in steps:
            for order in range(ORDERS):
                msg = Message(topic, f"o{order}:{step}".encode(), keys=f"o{order}")
                await producer.send(msg, selector=select_message_queue_by_hash, arg=f"o{order}")


async def test_orderly_keeps_order_and_never_shares_a_queue_across_rebalances(push_cluster, poll) -> None:
    topic, group = unique("OrderT"), unique("OrderG")
    await create_topic(push_cluster, topic, QUEUES)
    rec = Recorder()

    def orderly(name: str) -> Any:
        c = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                          consume_message_batch_max_size=2)
        c.subscribe(topic, "*")
        c.register_message_listener_orderly(rec.listener(name))
        return c

    def topic_queues(c: Any) -> set[int]:
        return {mq.queue_id for mq in c.assigned_queues() if mq.topic == topic}

    a, b = orderly("a"), orderly("b")
    async with a:
        await poll(lambda: topic_queues(a) == set(range(QUEUES)), timeout=10)
        await send_orders(push_cluster, topic, range(0, 10))
        await poll(lambda: rec.count >= 40, timeout=10)
        await b.start()  # takes half of the queues, each only once a has finished its batch and unlocked it
        await poll(lambda: len(topic_queues(a)) == len(topic_queues(b)) == QUEUES // 2, timeout=10)
        await send_orders(push_cluster, topic, range(10, 20))
        await poll(lambda: rec.count >= 8 * ORDERS + 40, timeout=10)
    # a has shut down mid-run: b takes every queue at the offsets a persisted.
    try:
        await poll(lambda: topic_queues(b) == set(range(QUEUES)), timeout=10)
        await send_orders(push_cluster, topic, range(20, STEPS))
        await poll(lambda: rec.count >= ORDERS * STEPS, timeout=10)
        await poll(lambda: committed(push_cluster, group, topic, QUEUES) == max_offsets(push_cluster, topic, QUEUES))
    finally:
        await b.shutdown()

    assert rec.overlaps == []
    assert {name for arrivals in rec.arrivals.values() for name, _ in arrivals} == {"a", "b"}
    for order, arrivals in rec.arrivals.items():
        # Every step once, in send order, even where the order's queue changed hands.
        assert [step for _, step in arrivals] == list(range(STEPS)), order


async def test_orderly_suspends_in_place_then_dead_letters(push_cluster, poll) -> None:
    topic, group = unique("OrderRetryT"), unique("OrderRetryG")
    await create_topic(push_cluster, topic, 1)
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:  # a plain function: runs on a thread
        [m] = msgs
        seen.append((m.body, m.reconsume_times))
        if m.body == b"stuck":
            context.suspend_current_queue_time = 0.01
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = make_consumer(push_cluster, group, max_reconsume_times=2, suspend_current_queue_time=0.01)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    async with consumer:
        await poll(lambda: MessageQueue(topic, "broker-a", 0) in consumer.assigned_queues(), timeout=10)
        async with make_producer(push_cluster) as producer:
            for body in (b"before", b"stuck", b"after"):
                await producer.send(Message(topic, body), MessageQueue(topic, "broker-a", 0))
        dlq = f"%DLQ%{group}"
        await poll(lambda: (b"after", 0) in seen, timeout=10)
        # Retried in place, in order: "after" waited until "stuck" was given up on after two retries.
        assert seen == [(b"before", 0), (b"stuck", 0), (b"stuck", 1), (b"stuck", 2), (b"after", 0)]
        await poll(lambda: push_cluster.store.get_max_offset_in_queue(dlq, 0) == 1)
        assert push_cluster.store.get_max_offset_in_queue(f"%RETRY%{group}", 0) == 0  # straight to the DLQ
    async with PullConsumer(unique("Reader"), push_cluster.namesrv_addr, instance_name=unique("r")) as reader:
        [dead] = (await reader.pull(MessageQueue(dlq, "broker-a", 0), "*", 0)).msg_found_list
    assert dead.body == b"stuck" and dead.properties["RETRY_TOPIC"] == topic


async def test_orderly_without_auto_commit_commits_on_commit_and_goes_back_on_rollback(push_cluster, poll) -> None:
    # RocketMQ's manual commit (ConsumeOrderlyContext.setAutoCommit(false)): SUCCESS leaves the offset where it
    # is; COMMIT commits every batch since the last commit; ROLLBACK consumes them all again.
    topic, group = unique("ManualT"), unique("ManualG")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    seen: list[tuple[str, int]] = []  # (body, the offset the consumer holds as it starts the batch)
    rolled_back = False
    answers = {"m0": ConsumeOrderlyStatus.SUCCESS, "m1": ConsumeOrderlyStatus.SUCCESS,
               "m2": ConsumeOrderlyStatus.COMMIT, "m3": ConsumeOrderlyStatus.SUCCESS}

    async def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        nonlocal rolled_back
        [m] = msgs
        body = m.body.decode()
        seen.append((body, consumer.impl.offset_store.offset_table.get(mq, -1)))
        if body == "m5":
            return ConsumeOrderlyStatus.SUCCESS  # auto commit again
        context.auto_commit = False
        if body == "m4":
            if not rolled_back:
                rolled_back = True
                context.suspend_current_queue_time = 0.01
                return ConsumeOrderlyStatus.ROLLBACK
            return ConsumeOrderlyStatus.COMMIT
        return answers[body]

    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    async with make_producer(push_cluster) as producer:
        for i in range(6):
            await producer.send(Message(topic, f"m{i}".encode()), mq)
    async with consumer:
        await poll(lambda: ("m5", 5) in seen, timeout=10)
        await poll(lambda: committed(push_cluster, group, topic, 1) == [6], timeout=10)
    held = {body: offset for body, offset in seen[:3]}
    assert held["m1"] == held["m2"] == held["m0"]  # nothing committed by the SUCCESS of m0 and m1
    assert seen[3:] == [("m3", 3), ("m4", 3), ("m3", 3), ("m4", 3), ("m5", 5)]


async def test_a_listener_raising_cancelled_error_suspends_its_batch_and_the_queue_goes_on(push_cluster, poll) -> None:
    """asyncio.CancelledError out of an orderly listener that was not itself cancelled (it awaited a future
    cancelled elsewhere) is a failed call, SUSPEND_CURRENT_QUEUE_A_MOMENT as RocketMQ's catch (Throwable) makes
    of it: the batch is retried in place and the rest follows in order. It used to end the worker with the
    batch taken and the queue marked consuming, so the queue was never consumed again."""
    topic, group = unique("OrderCancelT"), unique("OrderCancelG")
    await create_topic(push_cluster, topic, 1)
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        [m] = msgs
        seen.append((m.body, m.reconsume_times))
        if m.body == b"bad" and m.reconsume_times == 0:
            other = asyncio.get_running_loop().create_future()
            other.cancel()
            await other
        return ConsumeOrderlyStatus.SUCCESS

    consumer = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                             suspend_current_queue_time=0.01)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    async with consumer:
        await poll(lambda: MessageQueue(topic, "broker-a", 0) in consumer.assigned_queues(), timeout=10)
        await send_many(push_cluster, topic, [b"bad", b"good-1", b"good-2"], 1)
        await poll(lambda: committed(push_cluster, group, topic, 1) == [3], timeout=10)
    assert seen == [(b"bad", 0), (b"bad", 1), (b"good-1", 0), (b"good-2", 0)]


async def test_shutdown_leaves_a_plain_listener_still_in_its_batch_behind(push_cluster, poll) -> None:
    """Orderly shutdown gives a batch in the listener remove_queue_lock_wait to finish and then returns, as
    RocketMQ's does after awaitTerminateMillis, even though a plain listener's thread cannot be stopped; it used
    to wait for as long as the thread ran. The batch it left is not committed (the offset stays at it), its
    queue's consume lock is held until the thread returns, and the next owner consumes it again and nothing
    else twice."""
    topic, group = unique("OrderShutT"), unique("OrderShutG")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    entered, release = threading.Event(), threading.Event()
    seen_a: list[bytes] = []
    seen_b: list[bytes] = []

    def blocking(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:  # a plain function: runs on a thread
        [m] = msgs
        seen_a.append(m.body)
        if m.body == b"block":
            entered.set()
            release.wait(60)  # (a guard: the test releases it)
        return ConsumeOrderlyStatus.SUCCESS

    async def after(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        seen_b.extend(m.body for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    a = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", remove_queue_lock_wait=0.2)
    a.subscribe(topic, "*")
    a.register_message_listener_orderly(blocking)
    await a.start()
    shutdown: asyncio.Future[None] | None = None
    try:
        await poll(lambda: mq in a.assigned_queues(), timeout=10)
        pq = a.impl.rebalance_impl.process_queue_table[mq]
        await send_many(push_cluster, topic, [b"m0", b"block", b"m2"], 1)
        await poll(entered.is_set, timeout=10)
        # A guard, not a timing: the listener is released only below. (asyncio.wait, not wait_for: cancelling a
        # shutdown that hangs would break it loose and hide the hang.)
        shutdown = asyncio.ensure_future(a.shutdown())
        done, _ = await asyncio.wait([shutdown], timeout=10)
        assert done, "shutdown waits for the listener's thread"
        assert seen_a == [b"m0", b"block"]
        assert pq.consume_lock.locked()  # the thread still has the batch
        await poll(lambda: committed(push_cluster, group, topic, 1) == [1], timeout=10)  # m0's, not past block
    finally:
        release.set()
        if shutdown is not None:
            await shutdown
    await poll(lambda: not pq.consume_lock.locked(), timeout=10)  # given back as the thread returned
    assert committed(push_cluster, group, topic, 1) == [1]  # the abandoned answer committed nothing

    b = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    b.subscribe(topic, "*")
    b.register_message_listener_orderly(after)
    async with b:  # takes the queue once a's broker lock has expired
        await poll(lambda: committed(push_cluster, group, topic, 1) == [3], timeout=10)
    assert seen_b == [b"block", b"m2"] and seen_a == [b"m0", b"block"]


async def test_a_body_the_client_cannot_inflate_reaches_the_dlq_as_it_was_stored(push_cluster, poll) -> None:
    """A Java 5.x producer's LZ4 body (sysFlag 0x101): pocketmq's client delivers it as stored and marked, and the
    orderly consumer's dead-letter copy was built afresh: sent plain (sysFlag 0) or recompressed as zlib, so the LZ4
    bytes lost what they were. The copy now keeps the stored bytes and their compression bits."""
    from pocketmq.client.impl.producer.send_request import SendRequestOptions, build_send_request
    from pocketmq.remoting.client import RemotingClient
    from pocketmq.remoting.codes import RequestCode
    from pocketmq.remoting.command import RemotingCommand

    topic, group = unique("Lz4T"), unique("Lz4G")
    await create_topic(push_cluster, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    stored = b"\x04\x22\x4d\x18 not for zlib " * 4  # (what the client sees as bytes it cannot inflate)
    header, _, _ = build_send_request(Message(topic, b"x"), mq, SendRequestOptions("Lz4Producer"))
    header.sys_flag = 0x101  # COMPRESSED_FLAG | the LZ4 type bits
    client = RemotingClient()
    try:
        sent = await client.invoke(push_cluster.broker_addr, RemotingCommand.request(
            RequestCode.SEND_MESSAGE, header, stored), 5)
        assert sent.code == 0, sent.remark
    finally:
        await client.close()
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        seen.extend((m.body, m.sys_flag) for m in msgs)
        context.suspend_current_queue_time = 0.01
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

    consumer = make_consumer(push_cluster, group, max_reconsume_times=1, suspend_current_queue_time=0.01)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    dlq = f"%DLQ%{group}"
    async with consumer:
        await poll(lambda: push_cluster.store.get_max_offset_in_queue(dlq, 0) == 1, timeout=10)
    assert seen[0] == (stored, 0x101)
    result = push_cluster.store.get_message("reader", dlq, 0, 0, 1)
    [dead] = decode_all(result.body)  # (as stored: not inflated)
    assert (dead.body, dead.sys_flag & 0x701) == (stored, 0x101)
