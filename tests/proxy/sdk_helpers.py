"""What the SDK tests share: a cluster in a thread of its own (the SDKs block, or run elsewhere), topics made and
groups configured on it, pocketmq's 4.x pull consumer reading back what they sent, and the Node SDK's drivers."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pocketmq import embedded
from pocketmq.client.message import PullStatus
from pocketmq.client.sync import SyncPullConsumer
from pocketmq.common.message import MessageExt
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig

NODE5_DIR = Path(__file__).resolve().parents[1] / "native_clients" / "node5"

# The broker's transaction checks in milliseconds, so a check-back happens within the test.
FAST_CHECK: dict[str, Any] = {"transaction_timeout": 0.3, "transaction_check_interval": 0.05}


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.01)


def create_topic(cluster: embedded.ThreadedCluster, topic: str, queues: int = 4) -> None:
    async def create() -> None:
        broker = cluster.cluster.broker
        assert broker is not None
        broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
        await broker.register_broker_all()

    cluster._call(create())


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


def set_group(cluster: embedded.ThreadedCluster, group: str, **config: Any) -> None:
    async def update() -> None:
        broker = cluster.cluster.broker
        assert broker is not None
        broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig(group, **config))

    cluster._call(update())


def run_node5(script: str, endpoint: str, *args: str) -> list[dict[str, Any]]:
    """A node5 driver (producer.js, consumer.js) run against ``endpoint``: its events, the last one done."""
    node = shutil.which("node")
    assert node is not None, "node is not installed: `make native-clients`"
    assert (NODE5_DIR / "node_modules" / "rocketmq-client-nodejs").is_dir(), \
        "rocketmq-client-nodejs is not installed in tests/native_clients/node5: `make native-clients`"
    proc = subprocess.run([node, str(NODE5_DIR / script), "--endpoint", endpoint, "--timeout", "60", *args],
                          capture_output=True, text=True, timeout=90, cwd=NODE5_DIR)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and events[-1] == {"event": "done"}, (proc.stdout, proc.stderr[-3000:])
    return events
