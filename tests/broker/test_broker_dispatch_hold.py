"""A send that leaves the store's dispatcher too far behind (maxDispatchLagBytes) waits for it, without
blocking the event loop: the sender's answer waits, every other connection is served meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from pocketmq.common.message_batch import BatchItem
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import GetMaxOffsetRequestHeader

GUARD = 30.0  # a bound for what must happen; never a timing assertion
LIMIT = 16 * 1024


def slow_dispatch(broker: Any) -> None:
    """A listener that takes its time makes the dispatcher slower than the sender (as in the store's own
    tests): a dispatcher that falls behind cannot be had on demand for real."""
    store = broker.store
    real = store.message_arriving_listener

    def slow(*args: Any) -> None:
        time.sleep(0.0002)
        real(*args)

    store.message_arriving_listener = slow


async def test_sustained_sends_keep_the_dispatcher_within_the_limit(cluster: Any, dispatched: Callable) -> None:
    broker = await cluster.broker(max_dispatch_lag_bytes=LIMIT)
    mq = cluster.mq(broker)
    slow_dispatch(broker)
    store = broker.store
    # Only the dispatcher's catching up ends a hold: with the default 50 ms, a machine loaded by other work
    # (CI saw it) lets a held send go on first, and the bound below is not the hold's to keep.
    store.dispatch_hold_timeout = GUARD
    worst_sync = worst_batch = 0
    for i in range(600):
        resp = await mq.send("TopicLag", b"s" * 200, queue_id=i % 2)
        assert resp.code == ResponseCode.SUCCESS
        worst_sync = max(worst_sync, store.dispatch_behind_bytes())
    record = store.get_max_phy_offset() // 600
    batch = [BatchItem(0, b"b" * 200, "") for _ in range(32)]
    for i in range(40):
        assert (await mq.send_batch("TopicLag", batch, queue_id=i % 2)).code == ResponseCode.SUCCESS
        worst_batch = max(worst_batch, store.dispatch_behind_bytes())
    assert store._pending_hold is not None  # sends were held: the dispatcher did fall behind
    # The bound the sends keep: within the limit but for the request that crossed it.
    assert worst_sync <= LIMIT + record
    assert worst_batch <= LIMIT + 32 * record
    await dispatched(broker)
    assert store.get_max_offset_in_queue("TopicLag", 0) + store.get_max_offset_in_queue("TopicLag", 1) == 600 + 1280


async def test_a_held_send_waits_while_the_loop_serves_everyone_else(
    cluster: Any, poll: Callable, dispatched: Callable
) -> None:
    broker = await cluster.broker(max_dispatch_lag_bytes=LIMIT)
    store = broker.store
    store.dispatch_hold_timeout = GUARD  # only the gate below ends the hold
    sender, other = cluster.mq(broker), cluster.mq(broker)
    # The dispatcher stuck on a gate, the way a dispatcher short of the GIL falls behind, only for as long as
    # the test needs (not producible for real on demand).
    gate = threading.Event()
    real = store.message_arriving_listener

    def gated(*args: Any) -> None:
        gate.wait(GUARD)
        real(*args)

    store.message_arriving_listener = gated
    try:
        def holding() -> bool:
            return store._pending_hold is not None and not store._pending_hold.done()

        answered = []
        while True:  # send until a send is held
            assert len(answered) < 100, "the dispatcher never fell behind"
            held = asyncio.create_task(sender.send("TopicHold", b"h" * 1000))
            await poll(lambda t=held: t.done() or holding())
            if not held.done():
                break
            answered.append(held.result())
        assert store.get_max_phy_offset() - store.reput_service.reput_from_offset > LIMIT
        # The event loop is not blocked: this test runs on it, and other requests are answered.
        max_offset = await other.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader("TopicHold", 0))
        assert max_offset.code == ResponseCode.SUCCESS
        assert (await other.query_offset("G", "TopicHold", 0)).code == ResponseCode.SUCCESS  # via a pull thread
        assert not held.done()
    finally:
        gate.set()
    assert all(r.code == ResponseCode.SUCCESS for r in answered)
    assert (await asyncio.wait_for(held, GUARD)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    assert store.get_max_offset_in_queue("TopicHold", 0) == len(answered) + 1
