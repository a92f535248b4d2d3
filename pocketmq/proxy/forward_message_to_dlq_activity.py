"""ForwardMessageToDLQActivity: a message the client gives up on (a FIFO push consumer past its attempts) goes
to the group's dead-letter queue: CONSUMER_SEND_MSG_BACK with delay level -1, then the ack of the original.
And RecallMessage, which pocketmq answers as RocketMQ's proxy does when its broker cannot recall."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .ack_message_activity import current_handle
from .cluster_service import ClusterService
from .config import ProxyConfig
from .consumer_processor import ConsumerProcessor
from .grpc_channel_manager import GrpcChannelManager
from .grpc_validator import validate_consumer_group, validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import PROXY_EXCEPTION, GrpcProxyException, build_code, status
from .receipt_handle import decode
from .receipt_handle_manager import ReceiptHandleManager
from .send_message_activity import check_message_type

pb = load()

RECALL_MESSAGE = 370  # RequestCode.RECALL_MESSAGE: what pocketmq's brokers do not serve


class ForwardMessageToDLQActivity:
    def __init__(self, consumer: ConsumerProcessor, channels: GrpcChannelManager,
                 handles: ReceiptHandleManager) -> None:
        self.consumer = consumer
        self.channels = channels
        self.handles = handles

    async def forward_message_to_dead_letter_queue(self, ctx: ProxyContext, request: Any) -> Any:
        group, topic = request.group.name, request.topic.name
        validate_topic(topic)
        validate_consumer_group(group)
        handle = await current_handle(ctx, self.channels, self.handles, group, request.message_id,
                                      request.receipt_handle)
        code, remark = await self.consumer.forward_to_dead_letter_queue(decode(handle), request.message_id, group,
                                                                        topic)
        # (ResponseBuilder.buildStatus(remotingCode, remark): a remark-less success reads "0")
        return pb.ForwardMessageToDeadLetterQueueResponse(status=status(build_code(code),
                                                                        remark if remark is not None else str(code)))


class RecallMessageActivity:
    def __init__(self, config: ProxyConfig, cluster: ClusterService) -> None:
        self.config = config
        self.cluster = cluster

    async def recall_message(self, ctx: ProxyContext, request: Any) -> Any:
        """pocketmq's timer store cannot take a delay message back, and its SendMessage gives no recall handle:
        after RocketMQ's checks (a DELAY topic, a handle that decodes) the answer is its proxy's to a broker that
        does not serve RECALL_MESSAGE."""
        topic = request.topic.name
        validate_topic(topic)
        if self.config.enable_topic_message_type_check:
            route = await self.cluster.route(topic)
            check_message_type(topic, await self.cluster.topic_message_type(topic, route), pb.MessageType.DELAY)
        return check_recall_handle(request.recall_handle)


def check_recall_handle(text: str) -> Any:
    try:
        items = base64.urlsafe_b64decode(text.encode() + b"=" * (-len(text) % 4)).decode().split(" ") if text else []
    except (binascii.Error, UnicodeDecodeError, ValueError):
        items = []
    if len(items) < 5 or items[0] != "v1":
        raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, PROXY_EXCEPTION + "recall handle is invalid")
    raise GrpcProxyException(pb.Code.NOT_IMPLEMENTED, f" request type {RECALL_MESSAGE} not supported")
