"""AllocateMessageQueueAveragely (AVG, the default): contiguous blocks, the first ``len(mq) % len(cid)`` clients
take one queue more, clients beyond the queue count take none."""

from __future__ import annotations

from pocketmq.common.queue_allocation import allocate_averagely
from pocketmq.remoting.client_body import MessageQueue


class AllocateMessageQueueAveragely:
    name = "AVG"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        return allocate_averagely(consumer_group, current_cid, mq_all, cid_all)
