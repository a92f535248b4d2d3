"""Push consumers in a group share a topic's queues, rebalance when members come and go, and lose nothing.

Real name server and broker; each consumer runs on its own event loop in a thread, like a process of its
own, so one can die (tasks cancelled, no shutdown) and only the broker's channel expiry reveals it.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Any

import pytest
from push_helpers import (
    ConsumerProcess,
    committed,
    create_topic,
    make_consumer,
    max_offsets,
    send_many,
    unique,
)

from pocketmq.client import ConsumeConcurrentlyStatus, ConsumeFromWhere

QUEUES = 8


class Deliveries:
    """Every message every consumer got: (consumer, queue id, offset, body)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.lock = threading.Lock()
        self.items: list[tuple[str, int, int, bytes]] = []

    def listener(self, name: str) -> Any:
        async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
            with self.lock:
                for m in msgs:
                    assert m.topic == self.topic
                    self.items.append((name, m.queue_id, m.queue_offset, m.body))
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        return on_messages

    def distinct(self) -> set[bytes]:
        with self.lock:
            return {body for *_, body in self.items}

    def snapshot(self) -> list[tuple[str, int, int, bytes]]:
        with self.lock:
            return list(self.items)


def owners(processes: dict[str, ConsumerProcess], topic: str) -> dict[str, set[int]]:
    return {
        name: {mq.queue_id for mq in p.consumer.assigned_queues() if mq.topic == topic}
        for name, p in processes.items()
        if not p.dead
    }


def split_evenly(processes: dict[str, ConsumerProcess], topic: str, members: int) -> bool:
    """Every queue owned by exactly one live member, shares as AllocateMessageQueueAveragely deals them."""
    shares = owners(processes, topic)
    queues = [q for s in shares.values() for q in s]
    sizes = sorted(len(s) for s in shares.values())
    base, extra = divmod(QUEUES, members)
    return sorted(queues) == list(range(QUEUES)) and sizes == [base] * (members - extra) + [base + 1] * extra


async def test_group_shares_queues_survives_join_and_death_and_commits_everything(push_cluster, poll) -> None:
    topic, group = unique("PushT"), unique("PushG")
    await create_topic(push_cluster, topic, QUEUES)
    deliveries = Deliveries(topic)
    processes: dict[str, ConsumerProcess] = {}

    async def join(name: str) -> None:
        consumer = make_consumer(
            push_cluster, group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(deliveries.listener(name))
        processes[name] = ConsumerProcess(consumer)
        await processes[name].start()

    bodies = [f"m{i:05d}".encode() for i in range(5000)]
    try:
        for name in ("c1", "c2", "c3"):
            await join(name)
        await poll(lambda: split_evenly(processes, topic, 3), timeout=10)

        await send_many(push_cluster, topic, bodies[:2000], QUEUES)
        await poll(lambda: len(deliveries.distinct()) >= 1000, timeout=10)
        await join("c4")  # joins mid-run: the broker notifies the group, every member rebalances
        await poll(lambda: split_evenly(processes, topic, 4), timeout=10)

        await send_many(push_cluster, topic, bodies[2000:3500], QUEUES)
        await poll(lambda: len(deliveries.distinct()) >= 3000, timeout=10)
        victim = processes["c1"]
        victim_queues = owners(processes, topic)["c1"]
        await victim.kill()  # no shutdown, no unregister: the broker finds out when its channel expires
        await send_many(push_cluster, topic, bodies[3500:], QUEUES)
        await poll(lambda: split_evenly(processes, topic, 3), timeout=10)
        await poll(lambda: len(deliveries.distinct()) == len(bodies), timeout=15)

        # Offsets: the survivors commit up to the end of every queue, the dead member's queues included.
        ends = max_offsets(push_cluster, topic, QUEUES)
        assert sum(ends) == len(bodies)
        await poll(lambda: committed(push_cluster, group, topic, QUEUES) == ends, timeout=10)
    finally:
        for p in processes.values():
            if p.dead:
                await p.close_dead()
            else:
                await p.shutdown()

    items = deliveries.snapshot()
    assert deliveries.distinct() == set(bodies)
    assert victim_queues  # the victim held queues when it died, so they had to move
    # Duplicates only in the rebalance window: a message delivered twice went to two different members (a
    # queue changing hands before its offset was committed), never twice to the same member.
    per_message = Counter((q, offset) for _, q, offset, _ in items)
    by_message: dict[tuple[int, int], set[str]] = defaultdict(set)
    for name, q, offset, _ in items:
        by_message[(q, offset)].add(name)
    for key, times in per_message.items():
        if times > 1:
            assert len(by_message[key]) == times, f"{key} delivered {times} times to {by_message[key]}"
    moved = {q for q in range(QUEUES) if len({n for n, qq, *_ in items if qq == q}) > 1}
    assert {q for (q, _), times in per_message.items() if times > 1} <= moved


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_shutdown_hands_queues_over_at_once(push_cluster, poll, protocol: str) -> None:
    """A consumer that shuts down unregisters: the others take its queues without waiting for any expiry,
    and start where it committed (nothing consumed twice). In both wire protocols: on a native connection the
    broker's NOTIFY_CONSUMER_IDS_CHANGED comes as a native request, and the heartbeats go as fastjson."""
    topic, group = unique("PushH"), unique("PushHG")
    await create_topic(push_cluster, topic, 4)
    got: list[tuple[str, bytes]] = []

    def listener(name: str) -> Any:
        def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:  # sync: runs on a thread
            got.extend((name, m.body) for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        return on_messages

    a, b = (make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET", rebalance_interval=60,
                          protocol=protocol) for _ in range(2))
    for name, c in (("a", a), ("b", b)):
        c.subscribe(topic, "*")
        c.register_message_listener(listener(name))
    async with a, b:
        # Only NOTIFY_CONSUMER_IDS_CHANGED can rebalance within the test: the periodic one is a minute away.
        def ids(c: Any) -> list[int]:
            return [q.queue_id for q in c.assigned_queues() if q.topic == topic]

        await poll(lambda: sorted(ids(a) + ids(b)) == [0, 1, 2, 3] and ids(a) and ids(b), timeout=10)
        await send_many(push_cluster, topic, [f"x{i}".encode() for i in range(200)], 4, batch=10)
        await poll(lambda: len(got) == 200)
        await poll(lambda: committed(push_cluster, group, topic, 4) == max_offsets(push_cluster, topic, 4))
        await a.shutdown()
        await poll(lambda: ids(b) == [0, 1, 2, 3])
        await send_many(push_cluster, topic, [f"y{i}".encode() for i in range(100)], 4, batch=10)
        await poll(lambda: len(got) == 300)
    assert len({body for _, body in got}) == 300
    assert {name for name, body in got if body.startswith(b"y")} == {"b"}


async def test_assigned_queues_never_shows_half_a_round(push_cluster, poll) -> None:
    """A round takes its queues one by one, asking the broker for each start offset in between; what
    assigned_queues() reports changes only when the round is over (tests wait on it for a settled split)."""
    topic, group = unique("PushQ"), unique("PushQG")
    consumer = make_consumer(push_cluster, group, rebalance_interval=60)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(lambda msgs, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    seen_mid_round: list[tuple[int, list[int]]] = []
    async with consumer:
        rebalance = consumer.impl.rebalance_impl
        compute = rebalance.compute_pull_from_where

        async def observing(mq: Any) -> int:  # wraps the real call, only to look at the consumer in between
            if mq.topic == topic:
                held = [q.queue_id for q in rebalance.process_queue_table if q.topic == topic]
                shown = [q.queue_id for q in consumer.assigned_queues() if q.topic == topic]
                seen_mid_round.append((len(held), shown))
            return await compute(mq)

        rebalance.compute_pull_from_where = observing
        # The topic appears only now, so the round that takes its queues runs with the observer in place.
        await create_topic(push_cluster, topic, 4)
        await poll(lambda: topic in rebalance.topic_subscribe_info_table)
        consumer.instance.rebalance_immediately()
        await poll(lambda: [q.queue_id for q in consumer.assigned_queues() if q.topic == topic] == [0, 1, 2, 3])
    assert [held for held, _ in seen_mid_round] == [0, 1, 2, 3]  # the table did fill one queue at a time
    assert all(shown == [] for _, shown in seen_mid_round)
    assert consumer.assigned_queues() == []  # shut down: holds nothing
