"""put_message_nowait / put_messages_nowait: a put that never blocks its caller (an event loop). It answers
the result itself when nothing is left to wait for, else a Future that the dispatcher hold (docs/storage.md
9.2) and the group commit complete from their threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from pocketmq.storage.results import PutMessageResult, PutMessageStatus

from .conftest import msg, wait_until

GUARD = 30.0  # a bound for what must happen; never a timing assertion
LIMIT = 4096


class Gate:
    """A dispatcher that cannot keep up, made to order: the arrival listener (called on the dispatcher thread
    for every record) waits for the gate. A slow dispatcher cannot be produced deterministically for real."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def __call__(self, *_args: object) -> None:
        self.open.wait(GUARD)


def gated_store(stores, **overrides):
    store = stores.open(max_dispatch_lag_bytes=LIMIT, **overrides)
    store.dispatch_hold_timeout = GUARD  # only the gate ends the hold
    gate = Gate()
    store.message_arriving_listener = gate
    return store, gate


def put_until_held(store, body: bytes = b"h" * 500) -> tuple[Future, list[object]]:
    """Put until a put leaves the dispatcher (stuck on the gate) more than LIMIT behind: that put's answer,
    and the answers before it."""
    answered = []
    for _ in range(100):
        put = store.put_message_nowait(msg(body=body))
        if store.get_max_phy_offset() - store.reput_service.reput_from_offset > LIMIT:
            assert isinstance(put, Future)
            return put, answered
        answered.append(put)
    raise AssertionError("the dispatcher never fell behind")


def test_a_put_with_nothing_to_wait_for_answers_the_result_itself(store):
    one = store.put_message_nowait(msg(body=b"one"))
    batch = store.put_messages_nowait([msg(body=b"b1"), msg(body=b"b2")])
    refused = store.put_message_nowait(msg(topic="bad topic!"))
    assert isinstance(one, PutMessageResult) and one.status is PutMessageStatus.PUT_OK
    assert isinstance(batch, PutMessageResult) and batch.append_result.msg_num == 2
    assert isinstance(refused, PutMessageResult) and refused.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.wait_dispatched() and store.get_max_offset_in_queue("TopicA", 0) == 3


def test_a_put_that_leaves_the_dispatcher_behind_answers_a_future_and_does_not_block(stores):
    store, gate = gated_store(stores)
    try:
        held, before = put_until_held(store)
        assert all(isinstance(put, PutMessageResult) for put in before)  # nothing to wait for until then
        # The put returned although the dispatcher is stuck: nothing blocked this thread.
        assert not held.done()
        end = store.get_max_phy_offset()
        also_held = store.put_messages_nowait([msg(body=b"x" * 500)] * 2)  # a writer held meanwhile
        assert isinstance(also_held, Future) and not also_held.done()
    finally:
        gate.open.set()
    result = held.result(GUARD)
    assert result.status is PutMessageStatus.PUT_OK
    # Done only once the dispatcher was back within half the limit of that put's end.
    assert store.reput_service.reput_from_offset >= end - LIMIT // 2
    assert also_held.result(GUARD).append_result.msg_num == 2
    assert store.wait_dispatched()
    assert store.get_max_offset_in_queue("TopicA", 0) == len(before) + 3


def test_a_hold_ends_after_its_timeout_when_the_dispatcher_stays_stuck(stores):
    store, gate = gated_store(stores)
    store.dispatch_hold_timeout = 0.05
    try:
        held, _ = put_until_held(store)
        # Still stuck, yet the put is answered: a writer never waits for good on a dispatcher.
        assert held.result(GUARD).status is PutMessageStatus.PUT_OK
        assert not gate.open.is_set()
    finally:
        gate.open.set()


def test_under_sync_flush_a_held_put_waits_for_the_flush_and_the_dispatcher(stores):
    store, gate = gated_store(stores, flush_disk_type="SYNC_FLUSH")
    try:
        held, before = put_until_held(store)
        assert all(isinstance(put, Future) for put in before)  # each waits for the group commit
        # The group commit serves the put on its own thread; the stuck dispatcher still holds the answer.
        wait_until(lambda: store.commit_log.mapped_file_queue.flushed_where >= store.get_max_phy_offset())
        assert not held.done()
    finally:
        gate.open.set()
    result = held.result(GUARD)
    assert result.status is PutMessageStatus.PUT_OK
    assert store.commit_log.mapped_file_queue.flushed_where >= result.append_result.wrote_offset


def test_async_put_is_put_nowait_as_a_future(stores):
    store, gate = gated_store(stores)
    gate.open.set()
    fut = store.async_put_message(msg(body=b"a"))
    batch = store.async_put_messages([msg(body=b"b1"), msg(body=b"b2")])
    assert isinstance(fut, Future) and fut.done() and fut.result().status is PutMessageStatus.PUT_OK
    assert batch.result(GUARD).status is PutMessageStatus.PUT_OK


def test_sustained_puts_that_wait_for_their_future_keep_the_dispatcher_within_the_limit(stores):
    # A listener that takes its time makes the dispatcher slower than the writer, as in test_dispatch.py; the
    # writer here waits the way an event loop does, on the Future.
    store = stores.open(max_dispatch_lag_bytes=LIMIT)
    store.message_arriving_listener = lambda *args: time.sleep(0.0002)
    worst = held = 0
    for i in range(400):
        put = store.put_message_nowait(msg(queue_id=i % 2, body=b"w" * 200))
        if isinstance(put, Future):
            held += 1
            put = put.result(GUARD)
        assert put.status is PutMessageStatus.PUT_OK
        worst = max(worst, store.dispatch_behind_bytes())
    record = put.append_result.wrote_bytes
    assert held > 0 and worst <= LIMIT + record
    assert store.wait_dispatched()
