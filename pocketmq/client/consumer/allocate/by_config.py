"""AllocateMessageQueueByConfig (CONFIG): the client consumes a fixed list of queues, whatever the group does."""

from __future__ import annotations

from collections.abc import Iterable

from pocketmq.remoting.client_body import MessageQueue


class AllocateMessageQueueByConfig:
    name = "CONFIG"

    def __init__(self, message_queue_list: Iterable[MessageQueue] = ()) -> None:
        self.message_queue_list = list(message_queue_list)

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        # RocketMQ checks nothing here: the configured list is the answer (a copy, so callers cannot edit ours).
        return list(self.message_queue_list)
