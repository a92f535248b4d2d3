"""What the SDK tests share: a cluster in a thread of its own (the SDKs block, or run elsewhere), topics made and
groups configured on it, and pocketmq's 4.x pull consumer reading back what they sent."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pocketmq import embedded
from pocketmq.client.message import PullStatus
from pocketmq.client.sync import SyncPullConsumer
from pocketmq.common.message import MessageExt
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig

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
