"""Apache RocketMQ's Python SDK (PyPI rocketmq-python-client, the real one) against pocketmq's gRPC endpoint, and
what it sends read back by pocketmq's own 4.x client: both generations meet on one store.

The SDK is synchronous (its own threads and event loop), so the cluster runs in a thread of its own
(ThreadedCluster) and these tests are plain functions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer, TransactionChecker, TransactionResolution

from pocketmq import embedded
from pocketmq.client.message import PullStatus
from pocketmq.client.sync import SyncPullConsumer
from pocketmq.common.message import MessageExt
from pocketmq.remoting.body import TopicConfig

# The broker's transaction checks in milliseconds, so a check-back happens within the test.
FAST_CHECK: dict[str, Any] = {"transaction_timeout": 0.3, "transaction_check_interval": 0.05}


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.01)


@pytest.fixture
def cluster(tmp_path: Any) -> Iterator[embedded.ThreadedCluster]:
    with embedded.ThreadedCluster(tmp_path, grpc=True) as c:
        yield c


@pytest.fixture
def fast_check_cluster(tmp_path: Any) -> Iterator[embedded.ThreadedCluster]:
    """Checks within the test (a check racing a client's own commit would roll it back in the other tests)."""
    with embedded.ThreadedCluster(tmp_path, grpc=True, **FAST_CHECK) as c:
        yield c


def create_topic(cluster: embedded.ThreadedCluster, topic: str, queues: int = 4) -> None:
    async def create() -> None:
        broker = cluster.cluster.broker
        assert broker is not None
        broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
        await broker.register_broker_all()

    cluster._call(create())


def sdk_producer(cluster: embedded.ThreadedCluster, topics: tuple[str, ...], checker: Any = None) -> Producer:
    producer = Producer(ClientConfiguration(cluster.grpc_endpoint, Credentials(), request_timeout=5), topics, checker)
    producer.startup()
    return producer


def pull_all(cluster: embedded.ThreadedCluster, topic: str) -> list[MessageExt]:
    """Every message of ``topic``, pulled by pocketmq's 4.x pull consumer."""
    out: list[MessageExt] = []
    with SyncPullConsumer("ReaderGroup", cluster.namesrv_addr) as consumer:
        for mq in consumer.fetch_subscribe_message_queues(topic):
            offset = 0
            while True:
                result = consumer.pull(mq, "*", offset, 32)
                out.extend(result.msg_found_list)
                if result.pull_status is not PullStatus.FOUND:
                    break
                offset = result.next_begin_offset
    return out


def wait_pulled(cluster: embedded.ThreadedCluster, topic: str, count: int) -> list[MessageExt]:
    assert cluster.wait_dispatched()
    found: list[MessageExt] = []

    def enough() -> bool:
        found[:] = pull_all(cluster, topic)
        return len(found) >= count

    wait_for(enough)
    return found


def test_a_normal_message_reaches_a_4x_consumer_with_its_id_tag_keys_and_properties(cluster):
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


def test_fifo_messages_of_one_group_share_a_queue_in_order(cluster):
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


def test_a_delay_message_carries_its_delivery_time_to_the_broker(cluster):
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


def test_transactions_commit_and_rollback(cluster):
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
        [got] = wait_pulled(cluster, "TxnCheck5", 1)
    finally:
        producer.shutdown()
    assert checker.checked[0] == receipt.message_id
    assert got.body == b"decided later" and got.uniq_key == receipt.message_id
