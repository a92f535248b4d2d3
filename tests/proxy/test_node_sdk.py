"""Apache RocketMQ's Node SDK (npm rocketmq-client-nodejs 1.0.8, pinned by
tests/native_clients/node5/package-lock.json; `make native-clients` installs it) against pocketmq's gRPC endpoint,
in a process of its own (node5/producer.js), its messages read back by pocketmq's 4.x pull consumer; its SimpleConsumer
and PushConsumer (node5/consumer.js) read what pocketmq's 4.x producer sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client.message import Message as PocketMessage
from pocketmq.client.sync import SyncProducer

from .sdk_helpers import create_topic, run_node5, wait_pulled


def run_node(cluster: Any, topic: str, scenario: str, *extra: str) -> list[dict[str, Any]]:
    return run_node5("producer.js", cluster.grpc_endpoint, "--topic", topic, scenario, *extra)


def sent(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "sent"]


def test_a_node_message_reaches_a_4x_consumer_with_its_id_tag_keys_and_properties(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "Node5")
    [receipt] = sent(run_node(cluster, "Node5", "normal"))
    [got] = wait_pulled(cluster, "Node5", 1)
    assert got.body == b"from node" and got.uniq_key == receipt["message_id"]
    assert got.tags == "TagN" and sorted(got.keys) == ["node-key-1", "node-key-2"]
    assert (got.properties["origin"], got.properties["n"]) == ("node", "7")
    assert receipt["offset"] == got.queue_offset


def test_node_fifo_messages_share_a_queue_in_order(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "NodeFifo5", queues=8)
    run_node(cluster, "NodeFifo5", "fifo", "--count", "5")
    got = sorted(wait_pulled(cluster, "NodeFifo5", 5), key=lambda m: m.queue_offset)
    assert len({m.queue_id for m in got}) == 1
    assert [m.body for m in got] == [f"node step {i}".encode() for i in range(5)]
    assert {m.properties["__SHARDINGKEY"] for m in got} == {"node-group"}


def test_a_node_delay_message_carries_its_delivery_time(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "NodeDelay5")
    at = int(time.time() * 1000) + 1000
    run_node(cluster, "NodeDelay5", "delay", "--at", str(at))
    [got] = wait_pulled(cluster, "NodeDelay5", 1)
    props = got.properties
    assert int(props.get("TIMER_DELIVER_MS") or props["TIMER_OUT_MS"]) == at


def test_node_transactions_commit_and_rollback(threaded_cluster):
    cluster = threaded_cluster
    create_topic(cluster, "NodeTxn5")
    [committed] = sent(run_node(cluster, "NodeTxn5", "commit"))
    run_node(cluster, "NodeTxn5", "rollback")
    broker = cluster.cluster.broker
    assert committed["transaction_id"]
    [got] = wait_pulled(cluster, "NodeTxn5", 1)
    assert got.body == b"node commit" and got.uniq_key == committed["message_id"]
    assert broker.end_transaction_processor.rolled_back == 1


def test_a_node_orphaned_transaction_is_checked_back(fast_check_cluster):
    cluster = fast_check_cluster
    create_topic(cluster, "NodeOrphan5")
    events = run_node(cluster, "NodeOrphan5", "orphan")
    [receipt] = sent(events)
    [check] = [e for e in events if e["event"] == "checked"][:1]
    assert check == {"event": "checked", "message_id": receipt["message_id"], "body": "node orphan"}
    [got] = wait_pulled(cluster, "NodeOrphan5", 1)
    assert got.uniq_key == receipt["message_id"]


# --- consumption (node5/consumer.js), on one cluster for the module ---------------------------------------------

@pytest.fixture(scope="module")
def node_consumer_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    # Long polls of a tenth of a second at least, invisible times from 1 s, revives every 50 ms.
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("node5c"), grpc=True, revive_interval=0.05,
                                  proxy_overrides={"consumer_min_long_polling_timeout_millis": 100,
                                                   "consumer_max_long_polling_timeout_millis": 1000,
                                                   "min_invisible_time_millis_for_recv": 1000}) as c:
        yield c


def run_consumer(cluster: Any, topic: str, group: str, scenario: str, count: int = 1) -> list[dict[str, Any]]:
    return run_node5("consumer.js", cluster.grpc_endpoint, "--topic", topic, "--group", group, "--count", str(count),
                     scenario)


def send4(cluster: Any, topic: str, n: int) -> list[str]:
    """Sent by pocketmq's 4.x client: the Node consumers read what the other generation wrote."""
    with SyncProducer("NodeFeeder", cluster.namesrv_addr) as producer:
        return [producer.send(PocketMessage(topic, f"to node {i}".encode(), tags="TagN", keys=[f"key-{i}"],
                                            properties={"n": str(i)})).msg_id for i in range(n)]


def received(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "received"]


def test_a_node_simple_consumer_receives_and_acks(node_consumer_cluster):
    cluster = node_consumer_cluster
    create_topic(cluster, "NodeRecv5")
    ids = send4(cluster, "NodeRecv5", 3)
    events = run_consumer(cluster, "NodeRecv5", "NodeRecvGroup", "simple", 3)
    got = sorted(received(events), key=lambda e: e["body"])
    assert [e["message_id"] for e in got] == ids
    assert [(e["body"], e["tag"], e["keys"], e["properties"], e["attempt"], e["corrupted"]) for e in got] == [
        (f"to node {i}", "TagN", [f"key-{i}"], {"n": str(i)}, 1, False) for i in range(3)]
    assert sorted(e["message_id"] for e in events if e["event"] == "acked") == ids


def test_a_node_simple_consumer_sees_a_message_again_and_changes_its_invisible_duration(node_consumer_cluster):
    cluster = node_consumer_cluster
    create_topic(cluster, "NodeAgain5")
    [message_id] = send4(cluster, "NodeAgain5", 1)
    events = run_consumer(cluster, "NodeAgain5", "NodeAgainGroup", "redeliver")
    first, again = received(events)
    assert first["message_id"] == again["message_id"] == message_id
    assert (first["attempt"], again["attempt"]) == (1, 2) and first["handle"] != again["handle"]
    assert {"event": "changed", "message_id": message_id, "new_handle": True} in events
    assert {"event": "acked", "message_id": message_id} in events


def test_a_node_push_consumer_consumes(node_consumer_cluster):
    cluster = node_consumer_cluster
    create_topic(cluster, "NodePush5")
    ids = send4(cluster, "NodePush5", 4)
    events = run_consumer(cluster, "NodePush5", "NodePushGroup", "push", 4)
    assert sorted(e["message_id"] for e in received(events)) == sorted(ids)
