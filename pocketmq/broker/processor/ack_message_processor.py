"""AckMessageProcessor: ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151).

An ack of a normal pop writes an ack record to the revive queue its receipt handle names, a timer message due at
the handle's revive time (pop time + invisible time); the revive service pairs it with the checkpoint. An ack of
an orderly pop (revive queue 999) marks the offset in ConsumerOrderInfoManager, moves the group's offset to the
first offset of the batch not acked yet and, once the batch is done, wakes the pops waiting for that queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.extra_info_util import ExtraInfo, ExtraInfoError, parse_extra_info, real_topic
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.pop_ack_constants import POP_ORDER_REVIVE_QUEUE
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_body import BatchAck, BatchAckMessageRequestBody
from pocketmq.remoting.pop_header import AckMessageRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.pop import AckMsg, BatchAckMsg

from .base import BrokerProcessor, response
from .pop_answers import topic_not_exist

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


def parse_handle(text: str, topic: str, group: str) -> tuple[ExtraInfo | ExtraInfoError, str]:
    """A receipt handle, or why it does not parse, and the topic it acks: the header's when that names a retry
    topic (clients may name it themselves) or the handle does not parse, else the one the handle came from. An ack
    or a change of invisible time refuses a handle that does not parse only after the topic, queue and offset
    checks, where 5.5.0 first reads it (and fails: SYSTEM_ERROR), so that those checks answer as 5.5.0's do."""
    try:
        extra = parse_extra_info(text)
    except ExtraInfoError as e:
        return e, topic
    return extra, topic if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else extra.real_topic(topic, group)


class AckMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.ACK_MESSAGE] = self.ack_message
        self.handlers[RequestCode.BATCH_ACK_MESSAGE] = self.batch_ack_message

    async def ack_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(AckMessageRequestHeader)
        group = header.consumer_group
        extra, topic = parse_handle(header.extra_info, header.topic, group)
        error = self.check_queue(request, channel, topic, header.queue_id)
        if error is not None:
            return error
        low, high = self.offset_range(topic, header.queue_id)
        if not low <= header.offset <= high:  # (the max offset too, as RocketMQ's: the ack then matches nothing)
            return response(request, ResponseCode.NO_MESSAGE,
                            f"offset is illegal, key:{topic}@{header.queue_id}, commit:{header.offset}, "
                            f"store:{low}~{high}")
        if isinstance(extra, ExtraInfoError):
            return response(request, ResponseCode.INVALID_PARAMETER, str(extra))
        error = self.check_revive_qid(request, extra.revive_qid)
        if error is not None:
            return error
        resp = response(request)
        if extra.is_order:
            self.ack_orderly(channel, topic, group, header.queue_id, header.offset, extra.pop_time, resp)
            return resp
        ack = AckMsg(header.offset, extra.ck_queue_offset, group, topic, header.queue_id, extra.pop_time,
                     extra.broker_name)
        return await self.append_ack(request, resp, ack, extra.revive_qid, extra.pop_time + extra.invisible_time)

    async def batch_ack_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        # No body (an empty one is none on the wire) and no acks are one answer, without a remark, as 5.5.0's.
        body = request.decode_body(BatchAckMessageRequestBody) if request.body else None
        if body is None or not body.acks:
            return response(request, ResponseCode.NO_MESSAGE)
        resp = response(request)
        for b in body.acks:
            error = await self._batch_ack(channel, request, resp, b, body.broker_name)
            if error is not None:
                return error
        return resp

    async def _batch_ack(self, channel: Channel, request: RemotingCommand, resp: RemotingCommand, b: BatchAck,
                         broker_name: str) -> RemotingCommand | None:
        store = self.controller.store
        topic = real_topic(b.topic, b.consumer_group, b.retry)
        bad = self.check_revive_qid(request, b.revive_queue_id)
        if bad is not None:
            return bad
        low, high = store.get_min_offset_in_queue(topic, b.queue_id), store.get_max_offset_in_queue(topic, b.queue_id)
        offsets = [b.start_offset + i for i in b.offsets if low <= b.start_offset + i <= high]
        if b.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
            for offset in offsets:
                self.ack_orderly(channel, topic, b.consumer_group, b.queue_id, offset, b.pop_time, resp)
            return None
        if not offsets:
            return None
        ack = BatchAckMsg(-1, b.start_offset, b.consumer_group, topic, b.queue_id, b.pop_time, broker_name,
                          ack_offset_list=offsets)
        answer = await self.append_ack(request, resp, ack, b.revive_queue_id, b.pop_time + b.invisible_time)
        return None if answer.code == ResponseCode.SUCCESS else answer

    def check_queue(self, request: RemotingCommand, channel: Channel, topic: str, queue_id: int
                    ) -> RemotingCommand | None:
        """The checks an ack and a change of invisible time share (RocketMQ's AckMessageProcessor): the topic and
        the queue id."""
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return topic_not_exist(request, topic)
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return response(request, ResponseCode.MESSAGE_ILLEGAL,
                            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                            f"[{tc.read_queue_nums}] consumer:[/{channel.remote_address}]")
        return None

    def offset_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        """The queue's offsets, 0 to 0 for a queue nothing was written to (the store's -1 is "no queue"): 5.5.0's
        store makes the queue as it is asked, so an ack or a change of offset -1 there is NO_MESSAGE on both."""
        store = self.controller.store
        return max(0, store.get_min_offset_in_queue(topic, queue_id)), store.get_max_offset_in_queue(topic, queue_id)

    def check_revive_qid(self, request: RemotingCommand, revive_qid: int) -> RemotingCommand | None:
        n = self.controller.pop_message_processor.revive_log.queue_num
        if revive_qid == POP_ORDER_REVIVE_QUEUE or 0 <= revive_qid < n:
            return None
        return response(request, ResponseCode.INVALID_PARAMETER, f"reviveQid {revive_qid} is not 0..{n - 1} or 999")

    async def append_ack(self, request: RemotingCommand, resp: RemotingCommand, ack: AckMsg, revive_qid: int,
                         revive_time: int) -> RemotingCommand:
        """``revive_time``: the receipt handle's pop time + invisible time, when the record is due (RocketMQ's
        deliver time of an ack: the revive service reads it with its checkpoint)."""
        pop = self.controller.pop_message_processor
        if pop.buffer_merge.enabled and pop.buffer_merge.add_ack(ack):
            return resp  # met its checkpoint in memory
        put = await pop.revive_log.append_ack(ack, revive_qid, revive_time)
        if not put.is_ok:
            return response(request, ResponseCode.SYSTEM_ERROR, f"ack not written: {put.status.value} {put.remark}")
        return resp

    def ack_orderly(self, channel: Channel, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                    resp: RemotingCommand) -> None:
        c = self.controller
        old = c.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < old:
            return  # acked before (or the offset was reset past it)
        next_offset = c.consumer_order_info_manager.commit_and_next(topic, group, queue_id, offset, pop_time)
        if next_offset > -1:
            com = c.consumer_offset_manager
            # Backwards too, as RocketMQ 5: what the batch has not acked comes again even when another commit moved
            # past it; an admin's reset of the queue held until the group's next pop stays.
            if not (com.reset_offset_table and com.has_offset_reset(topic, group, queue_id)):
                com.commit_offset(channel.remote_address, group, topic, queue_id, next_offset)
            if not c.consumer_order_info_manager.check_block(None, topic, group, queue_id):
                c.pop_message_processor.notify_queue_free(topic, queue_id, group)
        elif next_offset == -1:
            resp.code = ResponseCode.MESSAGE_ILLEGAL
            resp.remark = f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, commit:{offset}"
