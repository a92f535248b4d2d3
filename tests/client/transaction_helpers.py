"""What test_client_transaction.py and test_client_transaction_check.py share: the broker's check timings, a
recording listener, a transaction producer, and reads of what was delivered and stored."""

from __future__ import annotations

import itertools
import time
from typing import Any

from pull_helpers import pull_queues

from pocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    PullConsumer,
    TransactionProducer,
)
from pocketmq.common.codec import decode_all
from pocketmq.remoting.body import TopicConfig

_names = itertools.count()
COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)

# A half message may be asked about 100 ms after it was born, and the broker looks every 20 ms.
FAST_CHECK: dict[str, Any] = {"transaction_timeout": 0.1, "transaction_check_interval": 0.02}
# For the tests of a producer's own answer: a loaded machine may take longer than 100 ms to deliver it, and a
# check would then race it (as in RocketMQ).
LATE_CHECK: dict[str, Any] = {"transaction_timeout": 1.0, "transaction_check_interval": 0.02}


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


class Listener:
    """Answers execute with ``execute`` and every check with ``check``; records what it was given."""

    def __init__(self, execute: LocalTransactionState, check: LocalTransactionState = UNKNOW) -> None:
        self.execute = execute
        self.check = check
        self.executed: list[tuple[Message, Any]] = []
        self.checked: list[MessageExt] = []
        self.checked_at: list[int] = []  # ms, when each check came

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        self.executed.append((msg, arg))
        return self.execute

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:  # (a coroutine works too)
        self.checked.append(msg)
        self.checked_at.append(time.time_ns() // 1_000_000)
        return self.check


async def make_topic(cluster: Any, queues: int = 2) -> str:
    topic = unique("TxnTopic")
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await cluster.broker.register_broker_all()
    return topic


def txn_producer(cluster: Any, group: str, listener: Listener, protocol: str = "msgpack") -> TransactionProducer:
    return TransactionProducer(group, cluster.namesrv_addr, listener, instance_name=unique("p"), protocol=protocol,
                               heartbeat_broker_interval=0.1)


async def pull_all(cluster: Any, topic: str, protocol: str = "msgpack") -> list[MessageExt]:
    await cluster.wait_dispatched()
    async with PullConsumer(unique("CG"), cluster.namesrv_addr, instance_name=unique("c"), protocol=protocol) as c:
        return await pull_queues(c, topic)


def stored(cluster: Any, topic: str, queue_id: int = 0) -> list[Any]:
    """Every record of a queue, read from the store (system topics have no route for a consumer)."""
    result = cluster.store.get_message("test", topic, queue_id, 0, 1000)
    return decode_all(result.body)
