"""ChangeInvisibleTimeProcessor: CHANGE_MESSAGE_INVISIBLETIME (200053).

For a normal pop, a new checkpoint of the one message with the new invisible time from now, then an ack of the
old one (RocketMQ's appendCheckPointThenAckOrigin); the answer's pop time, invisible time and revive queue make the
message's new receipt handle. For an orderly pop, the message's next visible time in ConsumerOrderInfoManager: the
queue stays blocked until then, and the count of the next delivery goes up in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.extra_info_util import ExtraInfoError
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_header import ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader
from pocketmq.remoting.tasks import run_whole
from pocketmq.remoting.transport import Channel
from pocketmq.storage.pop import AckMsg, PopCheckPoint

from .ack_message_processor import parse_handle
from .base import UNSET_REMARK, BrokerProcessor, response
from .pop_answers import with_blank_header
from .pop_message_processor import now_ms

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

MAX_INVISIBLE_TIME = 12 * 3600 * 1000  # what RocketMQ's proxy accepts at most
_BLANK = ChangeInvisibleTimeResponseHeader(0, 0, 0)


class ChangeInvisibleTimeProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.CHANGE_MESSAGE_INVISIBLETIME] = self.change_invisible_time

    async def change_invisible_time(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return with_blank_header(await self._change(channel, request), _BLANK)

    async def _change(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        c = self.controller
        header = request.decode_header(ChangeInvisibleTimeRequestHeader)
        if not 0 <= header.invisible_time <= MAX_INVISIBLE_TIME:
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"invisibleTime {header.invisible_time} is not 0..{MAX_INVISIBLE_TIME}")
        group = header.consumer_group
        extra, topic = parse_handle(header.extra_info, header.topic, group)
        acks = c.ack_message_processor
        error = acks.check_queue(request, channel, topic, header.queue_id)
        if error is not None:
            return error
        low, high = acks.offset_range(topic, header.queue_id)
        # (below the max offset, where an ack may name it: a checkpoint there would revive the next message stored
        # there, popped and acked or not)
        if not low <= header.offset < high:
            return response(request, ResponseCode.NO_MESSAGE, UNSET_REMARK)
        if isinstance(extra, ExtraInfoError):  # (after the checks above, as an ack's: parse_handle)
            return response(request, ResponseCode.INVALID_PARAMETER, str(extra))
        error = acks.check_revive_qid(request, extra.revive_qid)
        if error is not None:
            return error
        if extra.is_order:
            return self._change_orderly(request, header, topic, extra.pop_time, extra.revive_qid)
        pop = c.pop_message_processor
        # Later than the checkpoint it replaces, even within its millisecond: the two would share a merge key
        # (topic, group, queue, offset, pop time, broker), the new one take the old one's place, and the old one's
        # ack mark it done: the message never came back.
        now = now_ms()
        pop_time = extra.pop_time + 1 if now <= extra.pop_time <= now + 1000 else now
        revive_qid = pop.revive_log.next_revive_qid()
        ck = PopCheckPoint(header.offset, pop_time, header.invisible_time, 1, header.queue_id, topic, group,
                           c.broker_config.broker_name, queue_offset_diff=[0])
        ack = AckMsg(header.offset, extra.ck_queue_offset, group, topic, header.queue_id, extra.pop_time,
                     extra.broker_name)
        answer = await run_whole(self._renew(request, ck, revive_qid, ack, extra.revive_qid,
                                             extra.pop_time + extra.invisible_time))
        if answer.code != ResponseCode.SUCCESS:
            return answer
        return taken(request, ChangeInvisibleTimeResponseHeader(pop_time, header.invisible_time, revive_qid))

    async def _renew(self, request: RemotingCommand, ck: PopCheckPoint, revive_qid: int, ack: AckMsg,
                     ack_revive_qid: int, ack_revive_time: int) -> RemotingCommand:
        """The new checkpoint, then the ack of the old one; run whole (a handler cancelled between the two, as the
        server's stop does, would leave both checkpoints to revive the message).

        The new checkpoint is stored, never kept in the pop buffer, as RocketMQ's appendCheckPointThenAckOrigin
        does: the old one's ack may be on disk at once, and a crash would then lose the message with the buffer."""
        c = self.controller
        pop = c.pop_message_processor
        put = await pop.revive_log.append_check_point(ck, revive_qid)
        if not put.is_ok:
            return response(request, ResponseCode.SYSTEM_ERROR, f"checkpoint not written: {put.status.value}")
        return await c.ack_message_processor.append_ack(request, response(request), ack, ack_revive_qid,
                                                        ack_revive_time)

    def _change_orderly(self, request: RemotingCommand, header: ChangeInvisibleTimeRequestHeader, topic: str,
                        pop_time: int, revive_qid: int) -> RemotingCommand:
        c = self.controller
        group = header.consumer_group
        if header.offset < c.consumer_offset_manager.query_offset(group, topic, header.queue_id):
            # Acked already: nothing changes, and 5.5.0 answers the header as built, every field 0.
            return taken(request, ChangeInvisibleTimeResponseHeader(0, 0, 0))
        answer = ChangeInvisibleTimeResponseHeader(pop_time, header.invisible_time, revive_qid)
        next_visible = now_ms() + header.invisible_time
        c.consumer_order_info_manager.update_next_visible_time(topic, group, header.queue_id, header.offset,
                                                               pop_time, next_visible)
        answer.invisible_time = next_visible - pop_time
        # A parked pop or notification of the queue re-checks when the batch frees up now (it parks again if not).
        c.pop_message_processor.notify_queue_free(topic, header.queue_id, group)
        return taken(request, answer)


def taken(request: RemotingCommand, answer: ChangeInvisibleTimeResponseHeader) -> RemotingCommand:
    """SUCCESS with 5.5.0's remark: its processor sets the code alone, so the remark the response was created
    with stays (clients read the header, never this remark)."""
    return response(request, remark=UNSET_REMARK, ext_fields=answer)
