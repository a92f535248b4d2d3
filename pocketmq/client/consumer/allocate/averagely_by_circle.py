"""AllocateMessageQueueAveragelyByCircle (AVG_BY_CIRCLE): round-robin striping, client ``i`` takes queues
``i, i + n, i + 2n, ...`` for ``n`` clients."""

from __future__ import annotations

from pocketmq.common.queue_allocation import allocate_averagely_by_circle
from pocketmq.remoting.client_body import MessageQueue


class AllocateMessageQueueAveragelyByCircle:
    name = "AVG_BY_CIRCLE"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        return allocate_averagely_by_circle(consumer_group, current_cid, mq_all, cid_all)
