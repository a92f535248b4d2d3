"""SendMessageActivity: SendMessage as the broker's SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE), the topic name as
the producer group (so a broker's transaction checks find the proxy's producers of that topic)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

from pocketmq.client.batch import encode_messages
from pocketmq.client.message import SendStatus
from pocketmq.common.codec import decode_message_id
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE, TRANSACTION_TYPE_MASK
from pocketmq.common.message import properties_to_string
from pocketmq.common.record_layout import BATCH_FIXED_LENGTH
from pocketmq.common.topic_attributes import TopicMessageType, message_type_of
from pocketmq.common.topic_validator import AUTO_CREATE_TOPIC_KEY_TOPIC
from pocketmq.remoting.header import SendMessageRequestHeader

from .cluster_service import ClusterService
from .config import ProxyConfig
from .grpc_validator import validate_topic
from .message_converter import BrokerMessage, build_message
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import GrpcProxyException, ok, status
from .queue_selector import QueueSelector
from .transaction_data_manager import TransactionDataManager

pb = load()

_FAILED_STATUS = {
    SendStatus.FLUSH_DISK_TIMEOUT: pb.Code.MASTER_PERSISTENCE_TIMEOUT,
    SendStatus.FLUSH_SLAVE_TIMEOUT: pb.Code.SLAVE_PERSISTENCE_TIMEOUT,
    SendStatus.SLAVE_NOT_AVAILABLE: pb.Code.HA_NOT_AVAILABLE,
}


@dataclass(slots=True)
class _Batched:
    """One message of a SEND_BATCH_MESSAGE body, as ``encode_messages`` takes it."""

    body: bytes
    properties: dict[str, str]
    flag: int = 0


def check_message_type(topic: str, topic_type: str | None, message_type: TopicMessageType) -> None:
    """DefaultTopicMessageTypeValidator, for typed topics only (an untyped topic takes any type here). The
    message's type is the broker's rule (``__STARTDELIVERTIME`` a delay too), so what the broker would refuse as
    MESSAGE_ILLEGAL is refused here with the SDK's code for it."""
    if topic_type is None and message_type is TopicMessageType.LITE:
        # (no topic here is a lite topic: an untyped one taking a lite message would hand it to its consumers as
        # any other, its lite topic ignored; Apache's reads an untyped topic as NORMAL and refuses it alike)
        topic_type = TopicMessageType.NORMAL.value
    if topic_type is None or topic_type == "MIXED":
        return
    actual = message_type.value
    if actual != topic_type:
        raise GrpcProxyException(  # (the text of the ProxyException RocketMQ's proxy throws, class name and all)
            pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "org.apache.rocketmq.proxy.common.ProxyException: "
            f"TopicMessageType validate failed, the expected type is {topic_type}, but actual type is {actual}")


def least_batched_size(message: BrokerMessage) -> int:
    """The fewest bytes ``message`` takes in a batch body: the fixed fields, the body and its properties
    (counted in characters: a non-ASCII one takes more)."""
    return BATCH_FIXED_LENGTH + len(message.body) + sum(len(k) + len(v) + 2 for k, v in message.properties.items())


class SendMessageActivity:
    def __init__(self, config: ProxyConfig, cluster: ClusterService, transactions: TransactionDataManager) -> None:
        self.config = config
        self.cluster = cluster
        self.transactions = transactions
        self.selector = QueueSelector()

    async def send_message(self, ctx: ProxyContext, request: Any) -> Any:
        if not request.messages:
            raise GrpcProxyException(pb.Code.MESSAGE_CORRUPTED, "no message to send")
        first = request.messages[0]
        topic = first.topic.name
        validate_topic(topic)
        now_ms = int(time.time() * 1000)
        messages: list[BrokerMessage] = []
        batch_size = 0
        for m in request.messages:
            if m.topic != first.topic:
                raise GrpcProxyException(pb.Code.MESSAGE_CORRUPTED, "topic in message is not same")
            message = build_message(self.config, m, topic, ctx.remote_address, now_ms)
            messages.append(message)
            if len(request.messages) > 1:
                batch_size += least_batched_size(message)
                self._check_batch_size(batch_size, len(messages))
        route = await self.cluster.route(topic)
        if self.config.enable_topic_message_type_check:
            topic_type = await self.cluster.topic_message_type(topic, route)
            check_message_type(topic, topic_type, message_type_of(messages[0].properties))
        group = first.system_properties.message_group if len(request.messages) == 1 else None
        target = self.selector.select(route, group)
        addr = None if target is None else self.cluster.master_addr(route, target[0])
        if target is None or addr is None:
            raise GrpcProxyException(pb.Code.FORBIDDEN, "no writable queue")
        broker_name, queue_id = target
        head = messages[0]
        header = SendMessageRequestHeader(
            producer_group=topic, topic=topic, default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC, default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=head.sys_flag, born_timestamp=head.born_timestamp, flag=0,
            properties=properties_to_string(head.properties), reconsume_times=0, batch=len(messages) > 1)
        # A batch's body is the messages in MessageDecoder.encodeMessages' layout (what the batch encoder reads
        # from each: flag, body and properties).
        body = encode_messages(cast(Any, [_Batched(m.body, m.properties) for m in messages])) if len(messages) > 1 \
            else head.body
        uniq_ids = ",".join(m.system_properties.message_id for m in request.messages)
        result = await self.cluster.send_message(addr, broker_name, header, body, uniq_ids)
        return self._response(request, result, addr, topic, header.sys_flag)

    def _check_batch_size(self, size: int, count: int) -> None:
        """A batch is refused as soon as it passes the size the broker would refuse it at (as a 4.x client's
        batch is): the rest of its messages are never built, a request of many small messages costing far
        more as messages than as protobuf."""
        limit = self.config.max_message_size
        if 0 < limit < size:
            raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, f"the batch body size exceeds the maximum "
                                     f"allowed {limit} bytes (maxMessageSize) at its message {count}")

    def _response(self, request: Any, result: Any, addr: str, topic: str, sys_flag: int) -> Any:
        failed = _FAILED_STATUS.get(result.send_status)
        # The messages' own ids, one entry each: the broker's answer joins a batch's ids with commas, which an id
        # may contain itself (splitting it made two entries of one message, and the SDK sent it again).
        ids = [m.system_properties.message_id for m in request.messages]
        if failed is not None:
            entry_status = status(failed, f"send message failed, sendStatus={result.send_status.value}")
            entries = [pb.SendResultEntry(status=entry_status) for _ in ids]
            return pb.SendMessageResponse(status=status(failed, pb.Code.Name(failed)), entries=entries)
        # A 5.x broker answers every send with a transaction id, the message's UNIQ_KEY; 4.9.8's answers with none,
        # and its clients use the message id: the proxy gives the message id too.
        transaction_id = result.transaction_id or ids[0]
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE:
            _, commit_log_offset = decode_message_id(result.offset_msg_id.split(",")[0])
            self.transactions.add(topic, addr, topic, result.queue_offset, commit_log_offset, transaction_id)
        # A timer message's recall handle (the broker gives one to a single message only).
        recall = result.recall_handle or ""
        entries = [pb.SendResultEntry(status=ok(), message_id=msg_id, transaction_id=result.transaction_id or msg_id,
                                      offset=result.queue_offset + i, recall_handle=recall)
                   for i, msg_id in enumerate(ids)]
        return pb.SendMessageResponse(status=ok(), entries=entries)
