"""SyncPushConsumer: the push consumer from plain code, its listener on the consumer's threads."""

from __future__ import annotations

import threading
from typing import Any

from push_helpers import FAST_CONSUMER

from pocketmq import embedded
from pocketmq.client import ConsumeConcurrentlyStatus, Message, SyncProducer, SyncPushConsumer


def test_sync_push_consumer(tmp_path: Any) -> None:
    got: list[bytes] = []
    threads: set[str] = set()
    all_in = threading.Event()

    def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        threads.add(threading.current_thread().name)
        got.extend(m.body for m in msgs)
        if len(got) >= 10:
            all_in.set()
            # Still in the listener when the main thread shuts the consumer down: with
            # await_termination_when_shutdown the shutdown waits for this batch and commits its offset, so the
            # restart below gets m10 alone (with Java's default 0 this batch would come again: at least once).
            threading.Event().wait(0.2)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with embedded.ThreadedCluster(tmp_path) as cluster:
        with SyncProducer("SyncPushP", cluster.namesrv_addr, instance_name="sp") as producer:
            for i in range(10):
                producer.send(Message("SyncPush", f"m{i}".encode()))
        consumer = SyncPushConsumer("SyncPushG", cluster.namesrv_addr, await_termination_when_shutdown=5.0,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET", **FAST_CONSUMER)
        consumer.subscribe("SyncPush", "*")
        consumer.register_message_listener(on_messages)
        with consumer:
            assert all_in.wait(10)
        assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))
        # Started again, as a PushConsumer can be (it said "the consumer was started already").
        all_in.clear()
        with SyncProducer("SyncPushP", cluster.namesrv_addr, instance_name="sp") as producer:
            producer.send(Message("SyncPush", b"m10"))
        consumer.start()
        try:
            assert all_in.wait(10)
        finally:
            consumer.shutdown()
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(11))
    assert all(name.startswith("ConsumeMessageThread_SyncPushG") for name in threads)


def test_a_listener_and_the_main_thread_may_both_shut_the_consumer_down(tmp_path: Any) -> None:
    # "Stop after N messages, then leave the with block": the listener's shutdown() and the main thread's ran at
    # once, and whichever finished first stopped the loop, cancelling the other one's wait (CancelledError).
    outcomes: dict[str, str] = {}
    in_listener = threading.Event()

    def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        if not in_listener.is_set():
            in_listener.set()
            try:
                consumer.shutdown()
                outcomes["listener"] = "ok"
            except BaseException as e:  # (to be reported, not lost in the consume thread)
                outcomes["listener"] = repr(e)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with embedded.ThreadedCluster(tmp_path) as cluster:
        with SyncProducer("BothStopP", cluster.namesrv_addr, instance_name="bs") as producer:
            producer.send(Message("BothStop", b"m"))
        consumer = SyncPushConsumer("BothStopG", cluster.namesrv_addr, consume_thread_max=1,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET", **FAST_CONSUMER)
        consumer.subscribe("BothStop", "*")
        consumer.register_message_listener(on_messages)
        consumer.start()
        assert in_listener.wait(10)
        try:
            consumer.shutdown()
            outcomes["main"] = "ok"
        except BaseException as e:
            outcomes["main"] = repr(e)
        deadline = threading.Event()
        for _ in range(600):  # the listener's call returns once the loop is stopped
            if "listener" in outcomes:
                break
            deadline.wait(0.05)
    assert outcomes == {"listener": "ok", "main": "ok"}
