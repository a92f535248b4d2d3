"""ChangeInvisibleDurationActivity: a nack or an extension, as CHANGE_MESSAGE_INVISIBLETIME; the answer carries
the new receipt handle, which the SDKs use from then on. An auto-renewed message is renewed no more."""

from __future__ import annotations

from typing import Any

from .ack_message_activity import current_handle
from .config import ProxyConfig
from .consumer_processor import ConsumerProcessor
from .grpc_channel_manager import GrpcChannelManager
from .grpc_validator import validate_consumer_group, validate_topic
from .proto_time import duration_millis
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import ok
from .receipt_handle import decode
from .receipt_handle_manager import ReceiptHandleManager
from .receive_message_activity import validate_invisible_time

pb = load()


class ChangeInvisibleDurationActivity:
    def __init__(self, config: ProxyConfig, consumer: ConsumerProcessor, channels: GrpcChannelManager,
                 handles: ReceiptHandleManager) -> None:
        self.config = config
        self.consumer = consumer
        self.channels = channels
        self.handles = handles

    async def change_invisible_duration(self, ctx: ProxyContext, request: Any) -> Any:
        group, topic = request.group.name, request.topic.name
        validate_topic(topic)
        validate_consumer_group(group)
        invisible_time = duration_millis(request.invisible_duration)
        validate_invisible_time(self.config, invisible_time)
        decode(request.receipt_handle)  # (a malformed handle is refused before anything else)
        handle = await current_handle(ctx, self.channels, self.handles, group, request.message_id,
                                      request.receipt_handle)
        new = await self.consumer.change_invisible_time(decode(handle), group, topic, invisible_time)
        return pb.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=new)
