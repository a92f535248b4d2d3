"""ConsumerProcessor: the proxy's consumption, each operation once, as the broker's own POP requests (RocketMQ's
ConsumerProcessor and ProducerProcessor.forwardMessageToDeadLetterQueue).

ReceiveMessage is POP_MESSAGE, AckMessage ACK_MESSAGE, ChangeInvisibleDuration (and every renewal of an
auto-renewed message) CHANGE_MESSAGE_INVISIBLETIME, ForwardMessageToDeadLetterQueue CONSUMER_SEND_MSG_BACK with
delay level -1, all sent with the client layer's MQClientAPIImpl: a 5.x SDK consumes through the very requests
pocketmq's own SimpleConsumer sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pocketmq.client.consumer.pop_result import PopResult, PopStatus
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.client.filter_api import EXPRESSION_TYPE_SQL92
from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader
from pocketmq.remoting.pop_header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
)

from .cluster_service import ClusterService
from .protocol import load
from .proxy_exception import PROXY_EXCEPTION, GrpcProxyException
from .receipt_handle import ReceiptHandle, create_handle, decode

pb = load()
log = logging.getLogger(__name__)

MAX_MSG_NUMS_FOR_POP_REQUEST = 32
CONSUME_INIT_MODE_MAX = 1
EXPIRED = PROXY_EXCEPTION + "receipt handle is expired"

# What becomes of a popped message before it is handed over (PopMessageResultFilter).
MATCH, NO_MATCH, TO_DLQ = "match", "no match", "to dlq"
PopFilter = Callable[[MessageExt], str]


def tag_matched(subscription: SubscriptionData, tags: str | None) -> bool:
    """FilterUtils.isTagMatched: "*" (an empty tag set) takes every message."""
    if subscription.expression_type == EXPRESSION_TYPE_SQL92 or not subscription.tags_set:
        return True
    return tags is not None and tags in subscription.tags_set


def pop_filter(subscription: SubscriptionData, max_attempts: int) -> PopFilter:
    """PopMessageResultFilterImpl: a tag the group does not want is acked away, a message past its attempts goes to
    the dead-letter queue."""

    def check(msg: MessageExt) -> str:
        if not tag_matched(subscription, msg.tags):
            return NO_MATCH
        if msg.reconsume_times >= max_attempts:
            return TO_DLQ
        return MATCH

    return check


class ConsumerProcessor:
    def __init__(self, cluster: ClusterService) -> None:
        self.cluster = cluster

    async def broker_addr(self, broker_name: str) -> str:
        """The master of the broker a receipt handle names, by the route of the topic each broker names after
        itself, whatever topic the request names (resolveBrokerAddrInReceiptHandle)."""
        try:
            addr = self.cluster.master_addr(await self.cluster.route(broker_name), broker_name)
        except Exception:
            addr = None
        if addr is None:
            raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE,
                                     f"{PROXY_EXCEPTION}cannot find broker {broker_name}")
        return addr

    async def pop_message(self, addr: str, broker_name: str, group: str, topic: str, max_msg_nums: int,
                          invisible_time: int, poll_time: int, subscription: SubscriptionData, fifo: bool,
                          check: PopFilter | None, attempt_id: str | None, timeout: float) -> PopResult:
        """POP_MESSAGE of every queue of ``broker_name`` (queue -1); each message found carries the proxy's receipt
        handle in POP_CK. Messages the filter does not pass are acked or forwarded here and left out."""
        max_msg_nums = min(max_msg_nums, MAX_MSG_NUMS_FOR_POP_REQUEST)
        header = PopMessageRequestHeader(
            consumer_group=group, topic=topic, queue_id=-1, max_msg_nums=max_msg_nums, invisible_time=invisible_time,
            poll_time=poll_time, born_time=0, init_mode=CONSUME_INIT_MODE_MAX,
            exp_type=subscription.expression_type, exp=subscription.sub_string, order=fifo, attempt_id=attempt_id)
        # (bodies as stored: each is inflated as the stream writes it, see receive_message_activity._write)
        result = await self.cluster.api.pop_message(addr, broker_name, header, timeout, decompress=False)
        if result.pop_status is not PopStatus.FOUND or not result.msg_found_list:
            return result
        kept = []
        for msg in result.msg_found_list:
            pop_ck = msg.properties.get(PROPERTY_POP_CK)
            if pop_ck is None:
                log.error("[BUG] a popped message without a handle: %s", msg.msg_id)
                kept.append(msg)
                continue
            msg.put_property(PROPERTY_POP_CK, create_handle(pop_ck, msg.commit_log_offset))
            verdict = MATCH if check is None else check(msg)
            if verdict == MATCH:
                kept.append(msg)
                continue
            handle = decode(msg.properties[PROPERTY_POP_CK])
            try:
                if verdict == NO_MATCH:
                    await self.ack_message(handle, group, topic)
                else:
                    await self.forward_to_dead_letter_queue(handle, message_id(msg), group, topic)
            except Exception as e:
                log.warning("%s of %s in %s failed: %s", verdict, msg.msg_id, group, e)
        result.msg_found_list = kept
        return result

    async def ack_message(self, handle: ReceiptHandle, group: str, topic: str) -> None:
        if handle.is_expired():
            raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE, EXPIRED)
        addr = await self.broker_addr(handle.broker_name)
        header = AckMessageRequestHeader(group, handle.real_topic(topic, group), handle.queue_id, handle.extra_info,
                                         handle.offset)
        try:
            await self.cluster.api.ack_message(addr, header, self.cluster.config.request_timeout)
        except MQBrokerException as e:
            raise _abnormal("ack", e) from None

    async def change_invisible_time(self, handle: ReceiptHandle, group: str, topic: str, invisible_time: int) -> str:
        """The message invisible for ``invisible_time`` ms from now; returns its new receipt handle."""
        if handle.is_expired():
            raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE, EXPIRED)
        addr = await self.broker_addr(handle.broker_name)
        real_topic = handle.real_topic(topic, group)
        header = ChangeInvisibleTimeRequestHeader(group, real_topic, handle.queue_id, handle.extra_info,
                                                  handle.offset, invisible_time)
        try:
            h = await self.cluster.api.change_invisible_time(addr, header, self.cluster.config.request_timeout)
        except MQBrokerException as e:
            raise _abnormal("changeInvisibleDuration", e) from None
        pop_ck = build_extra_info(handle.offset, h.pop_time, h.invisible_time, h.revive_qid, real_topic,
                                  handle.broker_name, handle.queue_id, handle.offset)
        return create_handle(pop_ck, handle.commit_log_offset)

    async def forward_to_dead_letter_queue(self, handle: ReceiptHandle, msg_id: str, group: str,
                                           topic: str) -> tuple[int, str | None]:
        """CONSUMER_SEND_MSG_BACK with delay level -1 (straight to %DLQ%group), then, when the broker took it, the
        ack of the original; the broker's (code, remark)."""
        if handle.commit_log_offset < 0:
            raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE, PROXY_EXCEPTION + "commit log offset is empty")
        addr = await self.broker_addr(handle.broker_name)
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset, group=group, delay_level=-1, origin_msg_id=msg_id,
            origin_topic=handle.real_topic(topic, group), max_reconsume_times=0)
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
        response = await self.cluster.api.remoting_client.invoke(addr, request, self.cluster.config.request_timeout)
        if response.code == ResponseCode.SUCCESS:
            try:
                await self.ack_message(handle, group, topic)
            except Exception as e:
                log.warning("ack after forwarding %s to the DLQ of %s failed: %s", msg_id, group, e)
        return response.code, response.remark


def _abnormal(what: str, error: MQBrokerException) -> GrpcProxyException:
    """RocketMQ's client reads any answer but SUCCESS to an ack or a change of invisible time as the status
    NO_EXIST (the broker's code and remark dropped), which its proxy answers as an internal error."""
    log.debug("%s refused by the broker: %s %s", what, error.code, error.remark)
    return GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, f"{what} failed: status is abnormal")


def message_id(msg: MessageExt) -> str:
    """The id a 5.x SDK knows the message by: its UNIQ_KEY, else the offset message id (fillUniqIDIfNeed)."""
    return msg.uniq_key or msg.offset_msg_id
