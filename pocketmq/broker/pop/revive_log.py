"""ReviveLog: checkpoints and acks appended to ``rmq_sys_REVIVE_LOG_<cluster>`` (tags ``ck``, ``ack``, ``bAck``).

RocketMQ writes them as timer messages that reach the revive queue when the checkpoint is due. pocketmq appends
them at once and the revive service holds each checkpoint until its revive time (PopReviveService), so POP needs
no timer wheel; the records are RocketMQ's JSON all the same. A checkpoint and the acks of its messages go to the
same revive queue (the receipt handle names it), the ack always after the checkpoint.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import PROPERTY_TAGS
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
        self._counter = 0

    def next_revive_qid(self) -> int:
        """Checkpoints go round the revive queues (RocketMQ: ckMessageNumber % reviveQueueNum)."""
        self._counter += 1
        return self._counter % self.queue_num

    async def append_check_point(self, ck: PopCheckPoint, revive_qid: int) -> PutMessageResult:
        return await self._put(ck.encode(), revive_qid, CK_TAG)

    async def append_ack(self, ack: AckMsg, revive_qid: int) -> PutMessageResult:
        return await self._put(ack.encode(), revive_qid, BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG)

    async def _put(self, body: bytes, revive_qid: int, tag: str) -> PutMessageResult:
        # No UNIQ_KEY (RocketMQ sets one for its timer's de-duplication): it would cost an index entry per pop.
        c = self.controller
        msg = MessageExtBrokerInner(
            topic=self.revive_topic,
            body=body,
            properties={PROPERTY_TAGS: tag},
            queue_id=revive_qid,
            born_timestamp=time.time_ns() // 1_000_000,
            born_host=c.store_host,
            store_host=c.store_host,
        )
        put = c.store.put_message_nowait(msg)
        return put if isinstance(put, PutMessageResult) else await asyncio.wrap_future(put)
