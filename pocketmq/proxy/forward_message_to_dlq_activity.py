"""ForwardMessageToDLQActivity: a message the client gives up on (a FIFO push consumer past its attempts) goes
to the group's dead-letter queue: CONSUMER_SEND_MSG_BACK with delay level -1, then the ack of the original."""

from __future__ import annotations

from typing import Any

from .ack_message_activity import current_handle
from .consumer_processor import ConsumerProcessor
from .grpc_channel_manager import GrpcChannelManager
from .grpc_validator import validate_consumer_group, validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import build_code, status
from .receipt_handle import decode
from .receipt_handle_manager import ReceiptHandleManager

pb = load()


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

