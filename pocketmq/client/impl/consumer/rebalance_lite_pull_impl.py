"""RebalanceLitePullImpl: what a lite pull consumer does when a rebalance gives it a queue or takes one away.

The split itself is RebalanceImpl's. A queue taken away has its polled position committed (when auto commit
is on, which RocketMQ skips: the next owner would consume again what this one had already handed out) and
persisted before it is forgotten; the new assignment goes to the consumer, which starts and stops its pull
tasks to match.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingError

from ...consumer.store.offset_store import ReadOffsetType
from ...exceptions import MQBrokerException, MQClientException
from .process_queue import ProcessQueue
from .pull_request import PullRequest
from .rebalance_impl import RebalanceImpl, compute_pull_from_where

if TYPE_CHECKING:
    from ...consumer.lite_pull_consumer import LitePullConsumer

log = logging.getLogger(__name__)


class RebalanceLitePullImpl(RebalanceImpl):
    def __init__(self, consumer: LitePullConsumer) -> None:
        super().__init__(consumer.group, consumer.message_model, consumer.allocate_strategy, consumer.instance)
        self.consumer = consumer
        # First pull offsets the round computed for the queues it took (handed to the pull tasks).
        self.start_offsets: dict[MessageQueue, int] = {}

    def message_queue_changed(self, topic: str, mq_all: list[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        self.consumer.message_queue_changed(topic, mq_all, mq_divided)

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        # What earlier commits stored is persisted, not the queue's consume offset: the batch the last poll returned
        # may still be in the application's hands (a poll commits the batches before it), and committing it here
        # would lose it to a crash of this member, the next owner starting past it. It is read again instead.
        store = self.consumer.offset_store
        try:
            await store.persist(mq)
        except (RemotingError, MQClientException, MQBrokerException, OSError) as e:
            log.warning("%s: persisting the offset of %s failed: %s", self.consumer_group, mq, e)
        store.remove_offset(mq)
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.consumer.offset_store.remove_offset(mq)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        c = self.consumer
        return await compute_pull_from_where(
            self.instance, c.offset_store, self.consumer_group, mq, c.consume_from_where, c.consume_timestamp_ms,
            ReadOffsetType.MEMORY_FIRST_THEN_STORE,
        )

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        for request in requests:
            self.start_offsets[request.message_queue] = request.next_offset
