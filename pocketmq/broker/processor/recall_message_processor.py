"""RecallMessageProcessor: RECALL_MESSAGE (370), RocketMQ 5's cancel of a timer message before it is due.

The handle a timer message's send answered with (common/recall_message_handle.py) names the message's topic,
broker, wheel slot and id. A recall stores a delete marker for it: a small message of the same topic due at the
handle's time, with TIMER_DEL_UNIQKEY = ``<topic>+<id>``, which the timer store routes into the same wheel slot;
when the slot comes the message is dropped (storage/timer/timer_message_store.py). The checks and their answers
are RocketMQ 5.5.0's; a recall of a message that is not a timer message, or is gone already, cannot be told from
one that is waiting, and is answered SUCCESS as RocketMQ does.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import (
    PROPERTY_BORN_TIMESTAMP,
    PROPERTY_MSG_REGION,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TRACE_CONTEXT,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from pocketmq.common.java_numbers import LONG_MAX, LONG_MIN
from pocketmq.common.message import MessageExtBrokerInner
from pocketmq.common.recall_message_handle import HandleV1, RecallHandleError, decode_handle
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.recall_header import RecallMessageRequestHeader, RecallMessageResponseHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import PutMessageResult, PutMessageStatus
from pocketmq.storage.timer.timer_message_store import build_delete_key

from .abstract_send_message_processor import AbstractSendMessageProcessor
from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
NOT_AVAILABLE = "recall failed, broker service not available"
_STORED = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
           PutMessageStatus.SLAVE_NOT_AVAILABLE)
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def to_long(text: str, default: int = -1) -> int:
    """commons-lang's NumberUtils.toLong: the number, or ``default`` for text that is not a Java long."""
    if not _JAVA_LONG.fullmatch(text):
        return default
    n = int(text)
    return n if LONG_MIN <= n <= LONG_MAX else default


class RecallMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.RECALL_MESSAGE] = self.recall_message

    async def recall_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        answer = self._recall(channel, request)
        if not isinstance(answer, RemotingCommand):
            answer = await answer
        answer.ext_fields[PROPERTY_MSG_REGION] = self.controller.broker_config.region_id
        return answer

    def _recall(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | asyncio.Future[RemotingCommand]:
        header = request.decode_header(RecallMessageRequestHeader)
        c = self.controller
        bc = c.broker_config
        if not bc.recall_message_enable:
            return response(request, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if bc.broker_role == "SLAVE":
            return response(request, ResponseCode.SLAVE_NOT_AVAILABLE, NOT_AVAILABLE)
        if not PermName.is_writeable(bc.broker_permission) and not bc.allow_recall_when_broker_not_writeable:
            return response(request, ResponseCode.SERVICE_NOT_AVAILABLE, NOT_AVAILABLE)
        if c.topic_config_manager.select_topic_config(header.topic) is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST,
                            f"recall failed, the topic[{header.topic}] not exist")
        try:
            handle = decode_handle(header.recall_handle)
        except RecallHandleError as e:
            return response(request, ResponseCode.ILLEGAL_OPERATION, str(e))
        if header.topic != handle.topic:
            return response(request, ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if bc.broker_name != handle.broker_name:
            return response(request, ResponseCode.ILLEGAL_OPERATION, NOT_AVAILABLE)
        time_left = to_long(handle.timestamp_str) - int(time.time() * 1000)
        if time_left <= 0 or time_left >= bc.timer_max_delay_sec * 1000:
            return response(request, ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        msg = self.build_message(channel, header, handle)
        put = c.store.put_message_nowait(msg)
        if isinstance(put, PutMessageResult):
            return self.handle_put_message_result(put, request, msg)
        return asyncio.ensure_future(self._answer_later(put, request, msg))

    async def _answer_later(self, put: object, request: RemotingCommand, msg: MessageExtBrokerInner) -> RemotingCommand:
        return self.handle_put_message_result(await asyncio.wrap_future(put), request, msg)  # type: ignore[arg-type]

    def build_message(self, channel: Channel, header: RecallMessageRequestHeader,
                      handle: HandleV1) -> MessageExtBrokerInner:
        """The delete marker: due at the handle's time, so the store puts it in the message's wheel slot."""
        now = int(time.time() * 1000)
        props = {
            PROPERTY_TAGS: RECALL_MESSAGE_TAG,
            PROPERTY_TIMER_DEL_UNIQKEY: build_delete_key(handle.topic, handle.message_id),
            PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: handle.message_id,
            PROPERTY_TIMER_DELIVER_MS: handle.timestamp_str,
            PROPERTY_BORN_TIMESTAMP: str(now),
            PROPERTY_TRACE_CONTEXT: "",
        }
        if header.producer_group is not None:
            props[PROPERTY_PRODUCER_GROUP] = header.producer_group
        return MessageExtBrokerInner(topic=handle.topic, body=b"0", properties=props, queue_id=0, born_timestamp=now,
                                     born_host=AbstractSendMessageProcessor.host_bytes(channel.remote_address),
                                     store_host=self.controller.store_host)

    def handle_put_message_result(self, result: PutMessageResult, request: RemotingCommand,
                                  msg: MessageExtBrokerInner) -> RemotingCommand:
        if result.status not in _STORED:
            return response(request, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        ar = result.append_result
        if result.status is PutMessageStatus.PUT_OK and ar is not None:
            self.controller.broker_stats_manager.inc_put(msg.topic, ar.msg_num, ar.wrote_bytes)  # (the timer topic)
        header = RecallMessageResponseHeader(msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX])
        return response(request, ext_fields=header)
