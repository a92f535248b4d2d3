"""ReviveLog: checkpoints and acks put to ``rmq_sys_REVIVE_LOG_<cluster>`` (tags ``ck``, ``ack``, ``bAck``) as timer
messages, as RocketMQ 5 puts them.

Each record carries ``TIMER_DELIVER_MS``, so the store's timer wheel keeps it on disk and puts it in its revive
queue only when it is due: a checkpoint ``popAckTimeInterval`` (1 s, RocketMQ's ackTimeInterval) before its
revive time (pop time + invisible time), an ack at the revive time of the checkpoint it acks. The revive service
thus reads a checkpoint shortly before it falls due and holds only those, however many pops are out and however
long their invisible time; one due already when it is written is an ordinary message, in its queue at once. A
checkpoint and the acks of its messages go to the same revive queue (the receipt handle names it), the ack always
after the checkpoint. The records are RocketMQ's JSON.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import PROPERTY_TAGS, PROPERTY_TIMER_DELIVER_MS
from pocketmq.common.message import MessageExtBrokerInner
from pocketmq.common.pop_ack_constants import ACK_TAG, BATCH_ACK_TAG, CK_TAG, build_cluster_revive_topic
from pocketmq.storage.pop import AckMsg, BatchAckMsg, PopCheckPoint
from pocketmq.storage.results import PutMessageResult

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


class ReviveLog:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        bc = controller.broker_config
        self.revive_topic = build_cluster_revive_topic(bc.broker_cluster_name)
        self.queue_num = max(1, bc.revive_queue_num)
        self.ack_time_interval_ms = round(bc.pop_ack_time_interval * 1000)
        self._counter = 0

    def next_revive_qid(self) -> int:
        """Checkpoints go round the revive queues (RocketMQ: ckMessageNumber % reviveQueueNum)."""
        self._counter += 1
        return self._counter % self.queue_num

    async def append_check_point(self, ck: PopCheckPoint, revive_qid: int) -> PutMessageResult:
        # Ahead of the revive time, so that the acks due at it find the checkpoint read already.
        return await self._put(ck.encode(), revive_qid, CK_TAG, ck.revive_time - self.ack_time_interval_ms)

    async def append_ack(self, ack: AckMsg, revive_qid: int, revive_time: int) -> PutMessageResult:
        """``revive_time``: the acked checkpoint's (pop time + invisible time of the receipt handle)."""
        tag = BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG
        return await self._put(ack.encode(), revive_qid, tag, revive_time)

    async def _put(self, body: bytes, revive_qid: int, tag: str, deliver_ms: int) -> PutMessageResult:
        # No UNIQ_KEY (RocketMQ sets one for its timer's de-duplication): it would cost an index entry per pop.
        c = self.controller
        msg = MessageExtBrokerInner(
            topic=self.revive_topic,
            body=body,
            properties={PROPERTY_TAGS: tag, PROPERTY_TIMER_DELIVER_MS: str(deliver_ms)},
            queue_id=revive_qid,
            born_timestamp=time.time_ns() // 1_000_000,
            born_host=c.store_host,
            store_host=c.store_host,
        )
        put = c.store.put_message_nowait(msg)
        return put if isinstance(put, PutMessageResult) else await asyncio.wrap_future(put)
