"""PopAPIWrapper: pop, ack, batch ack and change invisible time for one consumer group, by broker name (what
PullAPIWrapper is to pulls). The simple consumer and the push consumer's POP mode share it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.remoting.pop_body import BatchAck, BatchAckMessageRequestBody
from pocketmq.remoting.pop_header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
)

from ...consumer.pop_result import PopResult
from ...exceptions import MQClientException
from .pop_api import AckTarget, ack_target, receipt_handle_of

if TYPE_CHECKING:
    from ..mq_client_instance import MQClientInstance

MAX_POP_NUMS = 32


class PopAPIWrapper:
    def __init__(self, instance: MQClientInstance, consumer_group: str) -> None:
        self._instance = instance
        self.consumer_group = consumer_group

    async def broker_address(self, broker_name: str, topic: str) -> str:
        addr = await self._instance.find_master_address(broker_name, topic)
        if addr is None:
            raise MQClientException(f"The broker[{broker_name}] not exist")
        return addr

    async def pop(self, topic: str, broker_name: str, max_nums: int, invisible_ms: int, poll_ms: int,
                  expression: str | None, expression_type: str, order: bool, init_mode: int, timeout: float,
                  queue_id: int = -1) -> PopResult:
        if not 1 <= max_nums <= MAX_POP_NUMS:
            raise MQClientException(f"maxNums {max_nums} is not 1..{MAX_POP_NUMS}")
        if invisible_ms < 0 or poll_ms < 0:
            raise MQClientException("the invisible time and the poll time must be >= 0")
        header = PopMessageRequestHeader(
            self.consumer_group, topic, queue_id, max_nums, invisible_ms, poll_ms, time.time_ns() // 1_000_000,
            init_mode, expression_type, expression or "*", order,
        )
        addr = await self.broker_address(broker_name, topic)
        return await self._instance.mq_client_api.pop_message(addr, broker_name, header, timeout)

    async def ack(self, msg: MessageExt, timeout: float) -> None:
        t = ack_target(msg, self.consumer_group)
        addr = await self.broker_address(t.extra.broker_name, msg.topic)
        header = AckMessageRequestHeader(self.consumer_group, t.topic, t.queue_id, t.handle, t.offset)
        await self._instance.mq_client_api.ack_message(addr, header, timeout)

    async def ack_batch(self, msgs: list[MessageExt], timeout: float) -> None:
        """One BATCH_ACK_MESSAGE per broker: an entry per pop checkpoint (queue, start offset, pop time)."""
        api = self._instance.mq_client_api
        for broker_name, (topic, body) in batch_ack_bodies(msgs, self.consumer_group).items():
            addr = await self.broker_address(broker_name, topic)
            await api.batch_ack_message(addr, body, timeout)

    async def change_invisible_time(self, msg: MessageExt, invisible_ms: int, timeout: float) -> str:
        """Make ``msg`` invisible for ``invisible_ms`` from now; its receipt handle (POP_CK) becomes the new one,
        which is also returned."""
        t: AckTarget = ack_target(msg, self.consumer_group)
        e = t.extra
        addr = await self.broker_address(e.broker_name, msg.topic)
        header = ChangeInvisibleTimeRequestHeader(self.consumer_group, t.topic, t.queue_id, t.handle, t.offset,
                                                  invisible_ms)
        h = await self._instance.mq_client_api.change_invisible_time(addr, header, timeout)
        handle = build_extra_info(t.offset, h.pop_time, h.invisible_time, h.revive_qid, t.topic, e.broker_name,
                                  t.queue_id, t.offset)
        msg.put_property(PROPERTY_POP_CK, handle)
        return handle


def batch_ack_bodies(msgs: list[MessageExt], group: str) -> dict[str, tuple[str, BatchAckMessageRequestBody]]:
    """The BATCH_ACK_MESSAGE bodies that ack ``msgs``, by broker name, each with a topic to find the broker by."""
    per_broker: dict[str, dict[tuple[str, str], BatchAck]] = {}
    topics: dict[str, str] = {}
    for msg in msgs:
        handle = receipt_handle_of(msg)
        # Handles of one pop checkpoint differ only in their last field (the queue offset): parsed once.
        prefix, _, offset = handle.rpartition(" ")
        key = (msg.topic, prefix)
        entry = None
        for acks in per_broker.values():
            entry = acks.get(key)
            if entry is not None:
                break
        if entry is None or not offset.isdigit():
            e = ack_target(msg, group).extra
            acks = per_broker.setdefault(e.broker_name, {})
            topics[e.broker_name] = msg.topic
            entry = acks.get(key)
            if entry is None:
                entry = acks[key] = BatchAck(group, msg.topic, e.retry, e.ck_queue_offset, e.queue_id, e.revive_qid,
                                             e.pop_time, e.invisible_time)
            entry.offsets.append(e.queue_offset - e.ck_queue_offset)
            continue
        entry.offsets.append(int(offset) - entry.start_offset)
    return {name: (topics[name], BatchAckMessageRequestBody(name, list(acks.values())))
            for name, acks in per_broker.items()}
