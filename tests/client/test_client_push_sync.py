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
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with embedded.ThreadedCluster(tmp_path) as cluster:
        with SyncProducer("SyncPushP", cluster.namesrv_addr, instance_name="sp") as producer:
            for i in range(10):
                producer.send(Message("SyncPush", f"m{i}".encode()))
        consumer = SyncPushConsumer("SyncPushG", cluster.namesrv_addr,
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
