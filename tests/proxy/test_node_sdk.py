"""Apache RocketMQ's Node SDK (npm rocketmq-client-nodejs 1.0.8, pinned by
tests/native_clients/node5/package-lock.json; `make native-clients` installs it) against pocketmq's gRPC endpoint,
in a process of its own (node5/producer.js), its messages read back by pocketmq's 4.x pull consumer."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from .sdk_helpers import create_topic, wait_pulled

NODE_DIR = Path(__file__).resolve().parents[1] / "native_clients" / "node5"


def run_node(cluster: Any, topic: str, scenario: str, *extra: str) -> list[dict[str, Any]]:
    node = shutil.which("node")
    assert node is not None, "node is not installed: `make native-clients`"
    assert (NODE_DIR / "node_modules" / "rocketmq-client-nodejs").is_dir(), \
        "rocketmq-client-nodejs is not installed in tests/native_clients/node5: `make native-clients`"
    proc = subprocess.run([node, str(NODE_DIR / "producer.js"), "--endpoint", cluster.grpc_endpoint, "--topic", topic,
                           "--timeout", "60", scenario, *extra], capture_output=True, text=True, timeout=90,
                          cwd=NODE_DIR)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and events[-1] == {"event": "done"}, (proc.stdout, proc.stderr[-3000:])
    return events


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
