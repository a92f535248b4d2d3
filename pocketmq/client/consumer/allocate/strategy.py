"""AllocateMessageQueueStrategy: how a consumer group splits a topic's queues among its clients.

RebalanceImpl sorts ``mq_all`` (topic, broker name, queue id) and ``cid_all`` (string order) before it calls a
strategy, so every client of the group computes the same split without talking to the others.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

from pocketmq.remoting.client_body import MessageQueue

log = logging.getLogger(__name__)


@runtime_checkable
class AllocateMessageQueueStrategy(Protocol):
    name: str

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]: ...


def check_allocate_args(consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]) -> bool:
    """RocketMQ's AbstractAllocateMessageQueueStrategy.check: empty arguments are caller bugs (ValueError, as
    Java's IllegalArgumentException); a client missing from ``cid_all`` (the broker has not seen its heartbeat
    yet) gets nothing this round."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cid_all:
        log.warning(
            "[BUG] ConsumerGroup: %s The consumerId: %s not in cidAll: %s", consumer_group, current_cid, cid_all
        )
        return False
    return True
