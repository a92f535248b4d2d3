"""AllocateMessageQueueStrategy: how a consumer group splits a topic's queues among its clients.

RebalanceImpl sorts ``mq_all`` (topic, broker name, queue id) and ``cid_all`` (string order) before it calls a
strategy, so every client of the group computes the same split without talking to the others.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pocketmq.common.queue_allocation import check_allocate_args
from pocketmq.remoting.client_body import MessageQueue

__all__ = ["AllocateMessageQueueStrategy", "check_allocate_args"]


@runtime_checkable
class AllocateMessageQueueStrategy(Protocol):
    name: str

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]: ...
