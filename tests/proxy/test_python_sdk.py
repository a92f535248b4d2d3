"""Apache RocketMQ's Python SDK (PyPI rocketmq-python-client, the real one) against pocketmq's gRPC endpoint, and
what it sends read back by pocketmq's own 4.x client: both generations meet on one store. Its consumers are in
test_python_sdk_consumption.py.

The SDK is synchronous (its own threads and event loop), so the cluster runs in a thread of its own
(ThreadedCluster) and these tests are plain functions.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from rocketmq import (
    ClientConfiguration,
    Credentials,
    Message,
    Producer,
    TransactionChecker,
    TransactionResolution,
)

from pocketmq import embedded

from .sdk_helpers import create_topic, wait_for, wait_pulled

# The SDK may open a stream on the main thread, which needs a current event loop (see main_thread_loop).
pytestmark = pytest.mark.usefixtures("main_thread_loop")


def sdk_producer(cluster: embedded.ThreadedCluster, topics: tuple[str, ...], checker: Any = None) -> Producer:
    producer = Producer(ClientConfiguration(cluster.grpc_endpoint, Credentials(), request_timeout=5), topics, checker)
    producer.startup()
    return producer


def test_a_normal_message_reaches_a_4x_consumer_with_its_id_tag_keys_and_properties(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "Orders5")
    producer = sdk_producer(cluster, ("Orders5",))
    try:
        msg = Message()
        msg.topic, msg.body, msg.tag = "Orders5", b"order #1", "TagA"
        msg.keys = "order-1"
        msg.keys = "customer-9"
        msg.add_property("color", "red")
        msg.add_property("n", "42")
        receipt = producer.send(msg)
    finally:
        producer.shutdown()
    [got] = wait_pulled(cluster, "Orders5", 1)
    assert got.body == b"order #1"
    assert got.uniq_key == receipt.message_id and len(receipt.message_id) == 34
    assert got.tags == "TagA"
    assert sorted(got.keys) == ["customer-9", "order-1"]
    assert got.properties["color"] == "red" and got.properties["n"] == "42"
    # The topic is the producer group, as RocketMQ's proxy makes it.
    assert got.properties["PGROUP"] == "Orders5"
    assert receipt.offset == got.queue_offset


def test_fifo_messages_of_one_group_share_a_queue_in_order(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "Fifo5", queues=8)
    producer = sdk_producer(cluster, ("Fifo5",))
    try:
        for i in range(6):
            msg = Message()
            msg.topic, msg.body, msg.message_group = "Fifo5", f"step {i}".encode(), "order-42"
            producer.send(msg)
    finally:
        producer.shutdown()
    got = wait_pulled(cluster, "Fifo5", 6)
    assert {m.queue_id for m in got} == {got[0].queue_id}
    assert [m.body for m in sorted(got, key=lambda m: m.queue_offset)] == [f"step {i}".encode() for i in range(6)]
    assert {m.properties["__SHARDINGKEY"] for m in got} == {"order-42"}


def test_a_delay_message_carries_its_delivery_time_to_the_broker(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "Delay5")
    producer = sdk_producer(cluster, ("Delay5",))
    deliver_at = int(time.time()) + 1  # (the Python SDK sends whole seconds)
    try:
        msg = Message()
        msg.topic, msg.body = "Delay5", b"later"
        msg.delivery_timestamp = deliver_at
        receipt = producer.send(msg)
    finally:
        producer.shutdown()
    [got] = wait_pulled(cluster, "Delay5", 1)
    assert got.body == b"later" and got.uniq_key == receipt.message_id
    # TIMER_DELIVER_MS is what RocketMQ 5's timer wheel reads (it sets TIMER_OUT_MS when it delivers).
    props = got.properties
    assert int(props.get("TIMER_DELIVER_MS") or props["TIMER_OUT_MS"]) == deliver_at * 1000


class Checker(TransactionChecker):
    def __init__(self, resolution: Any) -> None:
        self.resolution = resolution
        self.checked: list[str] = []
        self.event = threading.Event()

    def check(self, message: Any) -> Any:
        self.checked.append(message.message_id)
        self.event.set()
        return self.resolution


def test_transactions_commit_and_rollback(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "Txn5")
    producer = sdk_producer(cluster, ("Txn5",), Checker(TransactionResolution.ROLLBACK))
    try:
        committed = _half(producer, "Txn5", b"commit me")
        committed[0].commit()
        rolled_back = _half(producer, "Txn5", b"roll me back")
        rolled_back[0].rollback()
    finally:
        producer.shutdown()
    broker = cluster.cluster.broker
    wait_for(lambda: broker.end_transaction_processor.committed == 1)
    wait_for(lambda: broker.end_transaction_processor.rolled_back == 1)
    [got] = wait_pulled(cluster, "Txn5", 1)
    assert got.body == b"commit me" and got.uniq_key == committed[1].message_id


def _half(producer: Producer, topic: str, body: bytes) -> tuple[Any, Any]:
    transaction = producer.begin_transaction()
    msg = Message()
    msg.topic, msg.body = topic, body
    return transaction, producer.send(msg, transaction)


def test_an_orphaned_transaction_is_checked_back_with_the_live_producer(fast_check_cluster):
    cluster = fast_check_cluster
    create_topic(cluster, "TxnCheck5")
    checker = Checker(TransactionResolution.COMMIT)
    producer = sdk_producer(cluster, ("TxnCheck5",), checker)
    try:
        _, receipt = _half(producer, "TxnCheck5", b"decided later")  # neither committed nor rolled back
        # The broker asks the proxy (CHECK_TRANSACTION_STATE), the proxy asks the SDK on its Telemetry stream
        # (RecoverOrphanedTransactionCommand), the SDK's checker answers with EndTransaction(SERVER_CHECK).
        assert checker.event.wait(20)
        got = wait_pulled(cluster, "TxnCheck5", 1)
    finally:
        producer.shutdown()
    # A check is at least once: an answer still on its way when the next round (every 50 ms here) reaches the
    # put-back copy of the half asks again, and each commit publishes (Apache's EndTransactionProcessor does too).
    assert set(checker.checked) == {receipt.message_id}
    assert {(m.body, m.uniq_key) for m in got} == {(b"decided later", receipt.message_id)}
