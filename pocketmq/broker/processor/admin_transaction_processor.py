"""RESUME_CHECK_HALF_MESSAGE (323), as RocketMQ 4.9.7's AdminBrokerProcessor.resumeCheckHalfMessage answers it: the
message an offsetMsgId names is written again to the half queue with its check count at 0, so that the
transaction check asks its producer about it again (a half message the check gave up on after
transactionCheckMax questions, kept in TRANS_CHECK_MAX_TIME_TOPIC, or its last copy in the half queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.codec import commit_log_offset_of
from pocketmq.common.constants import PROPERTY_REAL_TOPIC
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transaction_header import ResumeCheckHalfMessageRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import PutMessageStatus

from ..transaction.transactional_message_util import resumed_half_message
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

# RocketMQ's remarks: an id it cannot read, or no message at the offset it names (its lookup then throws), and a
# put of the copy that did not answer PUT_OK.
NOT_FOUND = f"Exception was thrown when putting message back to {RMQ_SYS_TRANS_HALF_TOPIC}."
PUT_FAILED = f"Put message back to {RMQ_SYS_TRANS_HALF_TOPIC} failed."


class AdminTransactionProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.RESUME_CHECK_HALF_MESSAGE] = self.resume_check_half_message

    async def resume_check_half_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(ResumeCheckHalfMessageRequestHeader)
        offset = commit_log_offset_of(header.msg_id)
        bridge = self.controller.transactional_message_service.bridge
        msg = await bridge.look_message_by_offset(offset) if offset is not None else None
        if msg is None:
            log.warning("resume check of %r from %s: no message there", header.msg_id, channel.remote_address)
            return response(request, ResponseCode.SYSTEM_ERROR, NOT_FOUND)
        # (RocketMQ's check makes the half topic at its first pass; here it is made with the first half message,
        # and the check walks only the queues of a topic it has)
        bridge.ensure_topic(RMQ_SYS_TRANS_HALF_TOPIC)
        result = await bridge.put_message(resumed_half_message(msg))
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("resume check of %s: the copy was not written (%s %s)", header.msg_id, result.status.value,
                      result.remark)
            return response(request, ResponseCode.SYSTEM_ERROR, PUT_FAILED)
        log.info("half message %s of topic %s put back to %s for checks", header.msg_id,
                 msg.properties.get(PROPERTY_REAL_TOPIC), RMQ_SYS_TRANS_HALF_TOPIC)
        return response(request)
