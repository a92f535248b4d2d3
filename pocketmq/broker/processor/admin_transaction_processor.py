"""RESUME_CHECK_HALF_MESSAGE (323), as RocketMQ 4.9.7's AdminBrokerProcessor.resumeCheckHalfMessage answers it: the
message an offsetMsgId names is written again to the half queue with its check count at 0, so that the
transaction check asks its producer about it again (a half message the check gave up on after
transactionCheckMax questions, kept in TRANS_CHECK_MAX_TIME_TOPIC, or its last copy in the half queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
_HEX = "0123456789ABCDEF"
_MAX_PORT = 0xFFFF


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


def commit_log_offset_of(msg_id: str | None) -> int | None:
    """The commit-log offset an offsetMsgId names, read as MessageDecoder.decodeMessageId reads one (the broker
    it names is not looked at): 32 characters hold an IPv4 address, any other length an IPv6 one, the text after
    the offset is ignored, and a character that is no hex digit reads as UtilAll.string2bytes reads it. None
    where RocketMQ's reading throws: no id, too short, or a port out of range."""
    if not msg_id:
        return None
    raw = _java_hex_bytes(msg_id)
    ip_len = 4 if len(msg_id) == 32 else 16
    if len(raw) < ip_len + 12:
        return None
    port = int.from_bytes(raw[ip_len:ip_len + 4], "big", signed=True)
    if not 0 <= port <= _MAX_PORT:
        return None
    return int.from_bytes(raw[ip_len + 4:ip_len + 12], "big", signed=True)


def _java_hex_bytes(text: str) -> bytes:
    """UtilAll.string2bytes: two characters a byte (an odd last one dropped), upper-cased first; a character that
    is no hex digit counts as -1, which its shift and or spread into the byte."""
    upper = text.upper()
    digits = [_HEX.find(ch) for ch in upper[:len(upper) // 2 * 2]]
    return bytes(((hi << 4) | lo) & 0xFF for hi, lo in zip(digits[::2], digits[1::2], strict=True))
