"""The push consumer's answers to the admin's requests (MQClientInstance's resetOffset and
getConsumerRunningInfo): a reset of its offsets, and its running info."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from pocketmq.remoting import fastjson
from pocketmq.remoting.admin_body import ConsumerRunningInfo
from pocketmq.remoting.client_body import MessageQueue

from ...consumer.consumer_enums import ConsumeType
from ...consumer.store.offset_store import OffsetStore, clone_offset_table
from .push_consumer_state import PushConsumerState
from .rebalance_history import REBALANCE_HISTORY_PROPERTY

log = logging.getLogger("pocketmq.client.impl.consumer.push_consumer_impl")


class PushConsumerAdmin(PushConsumerState):
    """DefaultMQPushConsumerImpl's admin side (a mixin: the state is the consumer's)."""

    if TYPE_CHECKING:
        @property
        def offset_store(self) -> OffsetStore: ...

        async def persist_offset(self, mq: MessageQueue) -> None: ...

    running: bool
    pause: bool
    consume_orderly: bool
    start_timestamp: int
    _offset_store: OffsetStore | None

    async def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        """MQClientInstance.resetOffset: suspend, drop the topic's queues named in ``offset_table``, let what is
        in flight settle, then take the new offsets (persisted to the broker as the queues are let go) and
        resume; the next rebalance pulls from there."""
        if not self.running:
            return
        rebalance = self.rebalance_impl
        self.pause = True
        try:
            for mq, pq in list(rebalance.process_queue_table.items()):
                if mq.topic == topic and mq in offset_table:
                    pq.dropped = True
            await asyncio.sleep(self.config.reset_offset_settle_time)
            for mq, pq in list(rebalance.process_queue_table.items()):
                offset = offset_table.get(mq)
                if mq.topic == topic and offset is not None:
                    self.offset_store.update_offset(mq, offset)
                    await rebalance.remove_unnecessary_message_queue(mq, pq)
                    if rebalance.process_queue_table.get(mq) is pq:
                        del rebalance.process_queue_table[mq]
            # Queues this consumer does not hold get the offset too: it may be given them next.
            for mq, offset in offset_table.items():
                if mq.topic == topic and mq not in rebalance.process_queue_table:
                    self.offset_store.update_offset(mq, offset)
                    await self.persist_offset(mq)
        finally:
            self.pause = False
        self.instance.rebalance_immediately()
        log.info("%s: offsets of %s reset to %s", self.group, topic, {mq.queue_id: o for mq, o in offset_table.items()})

    def running_info(self) -> dict[str, object]:
        """ConsumerRunningInfo's content: settings, subscriptions, held queues and their cached messages."""
        r = self.rebalance_impl
        props = {
            "consumerGroup": self.group,
            "messageModel": self.config.message_model.value,
            "consumeFromWhere": self.config.consume_from_where.value,
            "consumeOrderly": str(self.consume_orderly).lower(),
            "consumeType": ConsumeType.CONSUME_PASSIVELY.value,
            "PROP_CONSUME_TYPE": ConsumeType.CONSUME_PASSIVELY.value,
            "PROP_CONSUMEORDERLY": str(self.consume_orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.config.consume_thread_max),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.start_timestamp),
            "pullBatchSize": str(self.config.pull_batch_size),
            # RocketMQ writes the strategy object here; its name (AVG, AVG_BY_CIRCLE, ...) says as much.
            "allocateMessageQueueStrategy": str(getattr(r.allocate_message_queue_strategy, "name", "?")),
            REBALANCE_HISTORY_PROPERTY: r.history.to_json(),  # pocketmq's own key (rebalance_history.py)
        }
        mq_table: dict[str, dict[str, object]] = {}
        now_ms = int(time.time() * 1000)
        for mq, pq in r.process_queue_table.items():
            cached = pq.messages()
            mq_table[fastjson.dumps(mq)] = {
                "commitOffset": self.offset_store_offset(mq),
                "cachedMsgCount": len(cached),
                "cachedMsgMinOffset": cached[0].queue_offset if cached else 0,
                "cachedMsgMaxOffset": cached[-1].queue_offset if cached else 0,
                "droped": pq.dropped,  # sic, RocketMQ's spelling
                "lastPullTimestamp": now_ms - int((time.monotonic() - pq.last_pull_timestamp) * 1000),
            }
        return ConsumerRunningInfo(props, list(r.subscription_inner.values()), mq_table).to_dict()

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        """MQClientInstance.getConsumerStatus of a push consumer: its offset store's offsets of ``topic``."""
        store = self._offset_store
        return clone_offset_table(store, topic) if store is not None else {}

    def offset_store_offset(self, mq: MessageQueue) -> int:
        store = self._offset_store
        table = getattr(store, "offset_table", None)
        if isinstance(table, dict):
            return int(table.get(mq, -1))
        return -1
