"""ReplyMessageProcessor: SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325).

A consumer answering a request (Producer.request) sends its reply here. The broker pushes the reply to the
requesting client, named by the reply's REPLY_TO_CLIENT property, over that client's own connection
(PUSH_REPLY_MESSAGE_TO_CLIENT, in the codec the client speaks) and, with storeReplyMessageEnable, also stores
it in the reply topic. The answer is SUCCESS when the push was taken, SYSTEM_ERROR when the requester is not
connected or refused it, whatever the store said (RocketMQ 4.9.8's rule).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import (
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MSG_REGION,
    PROPERTY_PUSH_REPLY_TIME,
    PROPERTY_TRACE_SWITCH,
)
from pocketmq.common.message import MessageExtBrokerInner, properties_to_string, string_to_properties, unpack_host
from pocketmq.common.topic_attributes import metrics_message_type
from pocketmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import (
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    parse_send_message_request_header,
)
from pocketmq.remoting.reply_header import ReplyMessageRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import PutMessageStatus

from .abstract_send_message_processor import AbstractSendMessageProcessor
from .base import response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

_STORED_OK = frozenset({
    PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
})


class ReplyMessageProcessor(AbstractSendMessageProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.SEND_REPLY_MESSAGE] = self.send_reply
        self.handlers[RequestCode.SEND_REPLY_MESSAGE_V2] = self.send_reply

    async def send_reply(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = parse_send_message_request_header(request.code, request.ext_fields)
        error, tc, queue_id = self.check_and_choose_queue(channel, request, header)
        if error is not None:
            return error
        body = request.body or b""
        pushed, remark = await self._push_reply(channel, header, body)
        msg_id, queue_offset = "0", 0  # what a reply that was not stored answers (RocketMQ: avoids a decode error)
        if self.controller.broker_config.store_reply_message_enable:
            msg = MessageExtBrokerInner(
                topic=header.topic,
                body=body,
                properties=string_to_properties(header.properties or ""),
                queue_id=queue_id,
                flag=header.flag,
                sys_flag=header.sys_flag,
                born_timestamp=header.born_timestamp,
                born_host=self.born_host(channel),
                store_host=self.controller.store_host,
                reconsume_times=header.reconsume_times or 0,
                properties_string=header.properties or "",
            )
            result = await self.put_message(msg)
            ar = result.append_result
            if result.status in _STORED_OK and ar is not None:
                stats = self.controller.broker_stats_manager
                stats.inc_put(header.topic, ar.msg_num, ar.wrote_bytes)
                stats.metrics.sent(header.topic, metrics_message_type(msg.properties), ar.msg_num, ar.wrote_bytes)
                msg_id, queue_offset = ar.msg_id, ar.logics_offset
            else:
                log.warning("reply to %s not stored: %s %s", header.topic, result.status.value, result.remark)
        if not pushed:
            return response(request, ResponseCode.SYSTEM_ERROR, remark)
        answer = response(request, ext_fields=SendMessageResponseHeader(msg_id, queue_id, queue_offset))
        if request.serialize_type is not SerializeType.MSGPACK:
            answer.ext_fields[PROPERTY_MSG_REGION], answer.ext_fields[PROPERTY_TRACE_SWITCH] = self.region_stamp()
        return answer

    async def _push_reply(self, channel: Channel, header: SendMessageRequestHeader, body: bytes) -> tuple[bool, str]:
        """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester: (taken, why not)."""
        props = string_to_properties(header.properties or "")
        sender_id = props.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender_id is None:
            log.warning("%s is null, can not reply message", PROPERTY_MESSAGE_REPLY_TO_CLIENT)
            return False, f"reply message properties[{PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        target = self.controller.producer_manager.find_channel(sender_id)
        if target is None:
            remark = f"push reply message fail, channel of <{sender_id}> not found."
            log.warning(remark)
            return False, remark
        props[PROPERTY_PUSH_REPLY_TIME] = str(time.time_ns() // 1_000_000)
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            born_host=channel.remote_address,
            store_host=unpack_host(self.controller.store_host),
            store_timestamp=time.time_ns() // 1_000_000,
            properties=properties_to_string(props),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
        )
        push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header, body=body)
        try:
            answer = await target.invoke(push, self.controller.broker_config.call_client_timeout)
        except RemotingError as e:
            log.warning("push reply message to <%s> fail: %s", sender_id, e)
            return False, f"push reply message to {sender_id} fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> return fail, response remark: %s", sender_id, answer.remark)
            return False, f"push reply message to {sender_id} fail."
        return True, ""
