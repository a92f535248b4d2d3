"""RebalancePushImpl: what a push consumer does when a rebalance gives it a queue or takes one away."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingError

from ...consumer.consumer_enums import MessageModel
from ...exceptions import MQBrokerException, MQClientException
from .process_queue import ProcessQueue
from .pull_request import PullRequest
from .rebalance_impl import RebalanceImpl, compute_pull_from_where

if TYPE_CHECKING:
    from .push_consumer_impl import DefaultMQPushConsumerImpl

log = logging.getLogger(__name__)


class RebalancePushImpl(RebalanceImpl):
    def __init__(self, consumer: DefaultMQPushConsumerImpl) -> None:
        super().__init__(
            consumer.group, consumer.config.message_model, consumer.allocate_strategy, consumer.instance
        )
        self.consumer = consumer

    def message_queue_changed(self, topic: str, mq_all: list[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        """Split the per-topic cache limits (when set) over every queue this client holds, of all its topics,
        as RebalancePushImpl divides by processQueueTable's size; holding none changes nothing."""
        cfg = self.consumer.config
        n = len(self.process_queue_table)
        if n == 0:
            return
        if cfg.pull_threshold_for_topic != -1:
            self.consumer.pull_threshold_for_queue = max(1, cfg.pull_threshold_for_topic // n)
        if cfg.pull_threshold_size_for_topic != -1:
            self.consumer.pull_threshold_size_for_queue = max(1, cfg.pull_threshold_size_for_topic // n)

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Persist and forget the queue's offset; orderly (clustering) also gives the broker lock back, but
        only once the batch in flight has finished, so the next owner never overlaps with it."""
        consumer = self.consumer
        orderly_clustering = consumer.consume_orderly and self.message_model is MessageModel.CLUSTERING
        if not orderly_clustering:
            await self._persist_and_forget(mq)
            return True
        if not await pq.try_consume_lock(consumer.config.remove_queue_lock_wait):
            pq.try_unlock_times += 1
            log.warning("%s: %s is still being consumed; removal retried next rebalance", self.consumer_group, mq)
            return False
        try:
            # The batch in flight has committed its offset by now, so the stored offset is exact.
            await self._persist_and_forget(mq)
            await self._unlock_delay(mq, pq)
            return True
        finally:
            pq.consume_lock.release()

    async def _persist_and_forget(self, mq: MessageQueue) -> None:
        store = self.consumer.offset_store
        try:
            await store.persist(mq)
        except (RemotingError, MQClientException, MQBrokerException) as e:
            log.warning("%s: persisting the offset of %s failed: %s", self.consumer_group, mq, e)
        store.remove_offset(mq)

    async def _unlock_delay(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        if pq.has_temp_message():
            # Messages pulled but not consumed: RocketMQ unlocks later so a pull still in flight settles first.
            consumer = self.consumer
            consumer.schedule(consumer.config.unlock_delay, lambda: consumer.spawn(self.unlock(mq, True)))
        else:
            await self.unlock(mq, True)

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.consumer.offset_store.remove_offset(mq)

    def is_pull_expired(self, pq: ProcessQueue) -> bool:
        return pq.is_pull_expired(self.consumer.config.pull_max_idle_time)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The stored offset, else where ConsumeFromWhere says; -1 when it cannot be known this round."""
        cfg = self.consumer.config
        return await compute_pull_from_where(
            self.instance, self.consumer.offset_store, self.consumer_group, mq, cfg.consume_from_where,
            cfg.consume_timestamp_ms,
        )

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        for request in requests:
            self.consumer.execute_pull_request_immediately(request)
