"""AllocateMessageQueueAveragelyByCircle (AVG_BY_CIRCLE): round-robin striping, client ``i`` takes queues
``i, i + n, i + 2n, ...`` for ``n`` clients."""

from __future__ import annotations

from pocketmq.remoting.client_body import MessageQueue

from .strategy import check_allocate_args


class AllocateMessageQueueAveragelyByCircle:
    name = "AVG_BY_CIRCLE"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        return list(mq_all[index :: len(cid_all)])
