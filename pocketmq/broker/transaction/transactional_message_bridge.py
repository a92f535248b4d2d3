"""TransactionalMessageBridge: the store and offset operations the transactional-message service needs.

Reads run on the broker's pull threads (they may touch the disk), writes go through the store's non-blocking put,
as the send path's do. The check's progress through the half and op queues is kept as the consumer offsets of
the group CID_RMQ_SYS_TRANS, so it survives a restart with consumerOffset.json.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pocketmq.common.codec import decode_all
from pocketmq.common.message import MessageExt, MessageExtBrokerInner
from pocketmq.common.mix_all import CID_SYS_RMQ_TRANS
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from pocketmq.remoting.codes import PermName
from pocketmq.storage.results import GetMessageStatus, PutMessageResult

from .transactional_message_util import op_message

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

_RW = PermName.PERM_READ | PermName.PERM_WRITE


class TransactionalMessageBridge:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    # --- topics and offsets ---

    def ensure_topic(self, topic: str) -> int:
        """The read queues of a system topic, created (one queue) when missing, as selectTopicConfig does."""
        tcm = self.controller.topic_config_manager
        tc = tcm.select_topic_config(topic) or tcm.create_topic_in_send_message_back_method(topic, 1, _RW, 0)
        return tc.read_queue_nums

    def half_queue_ids(self) -> list[int]:
        """fetchMessageQueues(RMQ_SYS_TRANS_HALF_TOPIC): none until the first half message made the topic."""
        tc = self.controller.topic_config_manager.select_topic_config(RMQ_SYS_TRANS_HALF_TOPIC)
        return list(range(tc.read_queue_nums)) if tc is not None else []

    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        offset = self.controller.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, topic, queue_id)
        if offset == -1:
            # (RocketMQ's store creates a missing queue here and answers its minimum, 0)
            offset = max(self.controller.store.get_min_offset_in_queue(topic, queue_id), 0)
        return offset

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        c = self.controller
        c.consumer_offset_manager.commit_offset(c.address, CID_SYS_RMQ_TRANS, topic, queue_id, offset)

    # --- reads ---

    async def get_messages(
        self, topic: str, queue_id: int, offset: int, nums: int
    ) -> tuple[GetMessageStatus, int, list[MessageExt]]:
        """(status, next begin offset, decoded messages) of up to ``nums`` messages from ``offset``."""
        c = self.controller
        result = await c.run_in_pull_executor(
            c.store.get_message, CID_SYS_RMQ_TRANS, topic, queue_id, offset, nums, None
        )
        msgs = decode_all(result.body) if result.status is GetMessageStatus.FOUND else []
        return result.status, result.next_begin_offset, msgs

    async def get_half_message(self, queue_id: int, offset: int) -> tuple[GetMessageStatus, int, MessageExt | None]:
        status, next_begin, msgs = await self.get_messages(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, 1)
        return status, next_begin, msgs[0] if msgs else None

    async def get_op_messages(
        self, queue_id: int, offset: int, nums: int
    ) -> tuple[GetMessageStatus, int, list[MessageExt]]:
        return await self.get_messages(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, offset, nums)

    async def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        c = self.controller
        return await c.run_in_pull_executor(c.store.look_message_by_offset, commit_log_offset)

    # --- writes ---

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        put = self.controller.store.put_message_nowait(msg)
        return put if isinstance(put, PutMessageResult) else await asyncio.wrap_future(put)

    async def put_op_message(self, half: MessageExt) -> bool:
        """The "d" op for a half message (committed or rolled back), in the op queue of the half's queue id."""
        self.ensure_topic(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        result = await self.put_message(op_message(half.queue_id, half.queue_offset, self.controller.store_host))
        if not result.is_ok:
            log.error("writing the op of half message %s (queue offset %d) failed: %s %s",
                      half.msg_id, half.queue_offset, result.status.value, result.remark)
        return result.is_ok
