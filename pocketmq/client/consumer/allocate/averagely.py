"""AllocateMessageQueueAveragely (AVG, the default): contiguous blocks, the first ``len(mq) % len(cid)`` clients
take one queue more, clients beyond the queue count take none."""

from __future__ import annotations

from pocketmq.remoting.client_body import MessageQueue

from .strategy import check_allocate_args


class AllocateMessageQueueAveragely:
    name = "AVG"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        n_mq, n_cid = len(mq_all), len(cid_all)
        mod = n_mq % n_cid
        if n_mq <= n_cid:
            average = 1
        elif mod > 0 and index < mod:
            average = n_mq // n_cid + 1
        else:
            average = n_mq // n_cid
        start = index * average if mod > 0 and index < mod else index * average + mod
        count = min(average, n_mq - start)
        return [mq_all[(start + i) % n_mq] for i in range(count)]
