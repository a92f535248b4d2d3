"""Apache RocketMQ's Python SDK (PyPI rocketmq-python-client) consuming from pocketmq's gRPC endpoint: SimpleConsumer
(receive, ack, a message not acked coming back, a changed invisible duration, tag filters, FIFO groups, delay and
recalled messages, the dead-letter queue) and PushConsumer, on one cluster for the module, and messages crossing
between the SDK and pocketmq's own client.

The SDK is synchronous (its own threads and event loop), so the cluster runs in a thread of its own
(ThreadedCluster) and these tests are plain functions."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
)

from pocketmq import embedded
from pocketmq.client.message import Message as PocketMessage
from pocketmq.client.sync import SyncProducer, SyncSimpleConsumer
from pocketmq.common.message import MessageExt

from .sdk_helpers import create_topic, pull_all, set_group, wait_for

# The SDK may open a stream on the main thread, which needs a current event loop (see main_thread_loop).
pytestmark = pytest.mark.usefixtures("main_thread_loop")

# --- consumption: SimpleConsumer and PushConsumer on one cluster for the module ----------------------------------

# Milliseconds where the SDKs allow it: revives every 50 ms, long polls of a tenth of a second (the SDKs' own
# intervals are whole seconds: an invisible time of 1 s, nack delays of 1 s).
CONSUMER_CLUSTER: dict[str, Any] = {
    "revive_interval": 0.05, "timer_precision_ms": 100,
    "proxy_overrides": {"min_invisible_time_millis_for_recv": 1000, "consumer_min_long_polling_timeout_millis": 100,
                        "consumer_max_long_polling_timeout_millis": 1000, "renew_schedule_period_millis": 50},
}


@pytest.fixture(scope="module")
def consumer_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("consumers5"), grpc=True, **CONSUMER_CLUSTER) as c:
        yield c


@pytest.fixture(scope="module")
def producer5(consumer_cluster: embedded.ThreadedCluster) -> Iterator[Producer]:
    """One SDK producer for the module; a topic is made before its first send (the SDK routes on first use)."""
    producer = Producer(ClientConfiguration(consumer_cluster.grpc_endpoint, Credentials(), request_timeout=5))
    producer.startup()
    yield producer
    producer.shutdown()


@contextlib.contextmanager
def simple_consumer(cluster: embedded.ThreadedCluster, group: str, topic: str, expression: str = "*",
                    await_duration: int = 1) -> Iterator[SimpleConsumer]:
    consumer = SimpleConsumer(ClientConfiguration(cluster.grpc_endpoint, Credentials(), request_timeout=5), group,
                              {topic: FilterExpression(expression)}, await_duration=await_duration)
    consumer.startup()
    try:
        yield consumer
    finally:
        consumer.shutdown()


def send5(producer: Producer, topic: str, body: bytes, tag: str | None = None, group: str | None = None,
          keys: tuple[str, ...] = (), properties: dict[str, str] | None = None, at: int | None = None) -> Any:
    msg = Message()
    msg.topic, msg.body = topic, body
    if tag:
        msg.tag = tag
    if group:
        msg.message_group = group
    for key in keys:
        msg.keys = key
    for name, value in (properties or {}).items():
        msg.add_property(name, value)
    if at is not None:
        msg.delivery_timestamp = at
    return producer.send(msg)


def receive_until(consumer: SimpleConsumer, count: int, invisible: int = 10, timeout: float = 20.0,
                  batch: int = 32) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} messages within {timeout}s"
        got.extend(consumer.receive(batch, invisible))
    return got


def test_a_simple_consumer_receives_what_the_sdk_sent_and_acks_it(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Recv5")
    receipt = send5(producer5, "Recv5", b"hello 5", tag="TagA", keys=("k1", "k2"), properties={"color": "red"})
    with simple_consumer(cluster, "RecvGroup5", "Recv5") as consumer:
        [msg] = receive_until(consumer, 1)
        assert (msg.message_id, msg.body, msg.tag, sorted(msg.keys)) == (receipt.message_id, b"hello 5", "TagA",
                                                                        ["k1", "k2"])
        assert msg.properties == {"color": "red"} and msg.delivery_attempt == 1 and not msg.corrupted
        assert msg.topic == "Recv5" and msg.receipt_handle
        consumer.ack(msg)
        assert consumer.receive(32, 10) == []


def test_a_message_not_acked_comes_back_with_its_next_attempt(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Redeliver5")
    receipt = send5(producer5, "Redeliver5", b"again")
    with simple_consumer(cluster, "RedeliverGroup5", "Redeliver5") as consumer:
        [first] = receive_until(consumer, 1, invisible=1)
        [second] = receive_until(consumer, 1, invisible=10)
        assert first.message_id == second.message_id == receipt.message_id
        assert (first.delivery_attempt, second.delivery_attempt) == (1, 2)
        assert first.receipt_handle != second.receipt_handle
        consumer.ack(second)
        assert consumer.receive(32, 10) == []


def test_change_invisible_duration_gives_a_new_handle_that_acks(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Change5")
    send5(producer5, "Change5", b"nack me")
    with simple_consumer(cluster, "ChangeGroup5", "Change5") as consumer:
        [msg] = receive_until(consumer, 1, invisible=30)
        old = msg.receipt_handle
        consumer.change_invisible_duration(msg, 1)  # back in a second, not in thirty
        assert msg.receipt_handle != old
        [again] = receive_until(consumer, 1, invisible=30)
        assert again.message_id == msg.message_id and again.delivery_attempt == 2
        consumer.change_invisible_duration(again, 30)
        consumer.ack(again)  # with the handle the change gave
        assert consumer.receive(32, 10) == []


def test_a_tag_filter_delivers_only_its_tags(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Tags5")
    for tag in ("A", "B", "C", "A"):
        send5(producer5, "Tags5", f"tag {tag}".encode(), tag=tag)
    with simple_consumer(cluster, "TagGroup5", "Tags5", expression="A || C") as consumer:
        got = receive_until(consumer, 3)
        for msg in got:
            consumer.ack(msg)
        assert sorted(m.tag for m in got) == ["A", "A", "C"]
        assert consumer.receive(32, 10) == []


def test_a_fifo_group_gets_a_message_group_in_order_one_batch_at_a_time(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Fifo5C", queues=4)
    set_group(cluster, "FifoGroup5", consume_message_orderly=True)
    for i in range(4):
        send5(producer5, "Fifo5C", f"step {i}".encode(), group="order-7")
    with simple_consumer(cluster, "FifoGroup5", "Fifo5C") as consumer:
        seen = []
        for _ in range(2):
            [msg] = receive_until(consumer, 1, batch=1)
            assert msg.message_group == "order-7"
            assert consumer.receive(32, 10) == []  # the group's queue waits for this one's ack
            seen.append(msg.body)
            consumer.ack(msg)
        rest = receive_until(consumer, 2)  # a batch: in order
        for msg in rest:
            consumer.ack(msg)
    assert seen + [m.body for m in rest] == [f"step {i}".encode() for i in range(4)]


def test_a_delay_message_is_not_received_before_its_time(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Delay5C")
    deliver_at = int(time.time()) + 2  # (the Python SDK sends whole seconds)
    receipt = send5(producer5, "Delay5C", b"later", at=deliver_at)
    with simple_consumer(cluster, "DelayGroup5", "Delay5C") as consumer:
        [msg] = receive_until(consumer, 1)
        received_at = time.time()
        consumer.ack(msg)
    assert msg.message_id == receipt.message_id
    assert msg.delivery_timestamp == deliver_at * 1000 or msg.delivery_timestamp == deliver_at
    assert received_at >= deliver_at


def test_a_recalled_delay_message_is_never_received(consumer_cluster, producer5):
    """Producer.recall_message with the send receipt's recall handle (RocketMQ 5's RecallMessage); once its
    message is delivered, the handle is refused."""
    create_topic(consumer_cluster, "Recall5")
    deliver_at = int(time.time()) + 3  # (whole seconds: at least two left for the sends and the recall)
    recalled, kept = (send5(producer5, "Recall5", body, at=deliver_at) for body in (b"recalled", b"kept"))
    assert recalled.recall_handle and kept.recall_handle
    assert producer5.recall_message("Recall5", recalled.recall_handle) == recalled.message_id
    with simple_consumer(consumer_cluster, "RecallGroup5", "Recall5") as consumer:
        got = receive_until(consumer, 1)
        got += consumer.receive(32, 10)  # (one more long poll: the recalled one was due in the same slot)
        for msg in got:
            consumer.ack(msg)
    assert [m.body for m in got] == [b"kept"]
    with pytest.raises(Exception, match="recall failed, timestamp invalid"):
        producer5.recall_message("Recall5", kept.recall_handle)


def dead_letters(cluster: embedded.ThreadedCluster, group: str, count: int) -> list[MessageExt]:
    async def register() -> None:
        broker = cluster.cluster.broker
        assert broker is not None
        await broker.register_broker_all()

    found: list[MessageExt] = []

    def enough() -> bool:
        cluster._call(register())
        try:
            found[:] = pull_all(cluster, f"%DLQ%{group}")
        except Exception:
            return False
        return len(found) >= count

    wait_for(enough, 20)
    return found


def test_a_message_retried_past_its_group_s_attempts_goes_to_the_dead_letter_queue(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Dlq5")
    set_group(cluster, "DlqGroup5", retry_max_times=1)
    receipt = send5(producer5, "Dlq5", b"poison")
    with simple_consumer(cluster, "DlqGroup5", "Dlq5") as consumer:
        attempts = [receive_until(consumer, 1, invisible=1)[0].delivery_attempt for _ in range(2)]
        [dead] = dead_letters(cluster, "DlqGroup5", 1)
        assert consumer.receive(32, 10) == []
    assert attempts == [1, 2]
    assert dead.uniq_key == receipt.message_id and dead.body == b"poison"


class Listener(MessageListener):
    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.lock = threading.Lock()
        self.got: list[tuple[str, bytes, int]] = []

    def consume(self, message: Any) -> ConsumeResult:
        with self.lock:
            self.got.append((message.message_id, message.body, message.delivery_attempt))
            fails = message.delivery_attempt <= self.fail_first
        return ConsumeResult.FAILURE if fails else ConsumeResult.SUCCESS


def push_consumer(cluster: embedded.ThreadedCluster, group: str, topic: str, listener: Listener) -> PushConsumer:
    consumer = PushConsumer(ClientConfiguration(cluster.grpc_endpoint, Credentials(), request_timeout=5), group,
                            listener, {topic: FilterExpression("*")}, consumption_thread_count=4)
    consumer.startup()
    return consumer


def test_a_push_consumer_acks_what_succeeds_and_gets_back_what_failed(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Push5")
    ids = [send5(producer5, "Push5", f"push {i}".encode()).message_id for i in range(3)]
    listener = Listener(fail_first=1)  # every message fails once: nacked, then back with its second attempt
    consumer = push_consumer(cluster, "PushGroup5", "Push5", listener)
    try:
        wait_for(lambda: len(listener.got) >= 6, 30)
    finally:
        consumer.shutdown()
    assert sorted((i, a) for i, _, a in listener.got) == sorted([(i, 1) for i in ids] + [(i, 2) for i in ids])


def test_a_push_group_of_two_shares_a_topic(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "PushShare5")
    listeners = [Listener(), Listener()]
    consumers = [push_consumer(cluster, "ShareGroup5", "PushShare5", listener) for listener in listeners]
    ids: list[str] = []
    try:
        # Each member receives once it has its assignment (the SDK asks for it on a timer), and POP hands a
        # message to whichever member's receive is waiting: one member may take a whole round, so more are sent
        # until both took part.
        deadline = time.monotonic() + 45
        while len(ids) < 20 or not all(listener.got for listener in listeners):
            assert time.monotonic() < deadline, [len(listener.got) for listener in listeners]
            if ids:
                time.sleep(1.0)
            ids += [send5(producer5, "PushShare5", f"share {i}".encode()).message_id
                    for i in range(len(ids), len(ids) + 20)]
            wanted = len(ids)
            wait_for(lambda wanted=wanted: sum(len(listener.got) for listener in listeners) >= wanted, 30)
        time.sleep(0.5)  # (room for a duplicate to show)
    finally:
        for consumer in consumers:
            consumer.shutdown()
    got = [i for listener in listeners for i, _, _ in listener.got]
    assert sorted(got) == sorted(ids)  # each message once, to one member of the group
    assert all(listener.got for listener in listeners)


def test_a_message_sent_by_pocketmq_s_client_reaches_the_sdk_with_its_id_tag_keys_and_properties(
        consumer_cluster):
    cluster = consumer_cluster
    create_topic(cluster, "Meet5")
    with SyncProducer("MeetProducer", cluster.namesrv_addr) as producer:
        result = producer.send(PocketMessage("Meet5", b"from 4.x", tags="Tag4", keys=["a", "b"],
                                             properties={"origin": "pocketmq"}))
    with simple_consumer(cluster, "MeetGroup5", "Meet5") as consumer:
        [msg] = receive_until(consumer, 1)
        consumer.ack(msg)
    assert (msg.message_id, msg.body, msg.tag, sorted(msg.keys)) == (result.msg_id, b"from 4.x", "Tag4", ["a", "b"])
    assert msg.properties == {"origin": "pocketmq"} and not msg.corrupted


def test_a_message_sent_by_the_sdk_is_popped_by_pocketmq_s_simple_consumer(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "Meet5Pop")
    receipt = send5(producer5, "Meet5Pop", b"from 5.x", tag="Tag5", keys=("x",), properties={"origin": "sdk"})
    with SyncSimpleConsumer("MeetPopGroup", cluster.namesrv_addr, subscriptions={"Meet5Pop": "*"},
                            await_duration=0.5) as consumer:
        got: list[MessageExt] = []
        wait_for(lambda: bool(got.extend(consumer.receive(16, 10)) or got), 20)
        consumer.ack(got[0])
    [msg] = got
    assert (msg.uniq_key, msg.body, msg.tags, msg.keys) == (receipt.message_id, b"from 5.x", "Tag5", ["x"])
    assert msg.properties["origin"] == "sdk"


def test_a_fifo_push_consumer_forwards_what_keeps_failing_to_the_dead_letter_queue(consumer_cluster, producer5):
    cluster = consumer_cluster
    create_topic(cluster, "FifoDlq5", queues=2)
    set_group(cluster, "FifoDlqGroup5", consume_message_orderly=True, retry_max_times=1)
    receipt = send5(producer5, "FifoDlq5", b"never", group="g-1")
    listener = Listener(fail_first=99)
    consumer = push_consumer(cluster, "FifoDlqGroup5", "FifoDlq5", listener)
    try:
        # Two attempts (retryMaxTimes 1), retried by the SDK itself, then ForwardMessageToDeadLetterQueue.
        [dead] = dead_letters(cluster, "FifoDlqGroup5", 1)
    finally:
        consumer.shutdown()
    assert dead.uniq_key == receipt.message_id and dead.body == b"never"
    # (the Python SDK retries a FIFO message with the same view: its delivery attempt stays 1)
    assert len([i for i, _, _ in listener.got if i == receipt.message_id]) == 2
