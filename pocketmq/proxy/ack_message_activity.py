"""AckMessageActivity: AckMessage entry by entry (RocketMQ's AckMessageActivity.ackMessageOneByOne), each an
ACK_MESSAGE with the receipt handle the client holds, or the one its auto renewal made of it."""

from __future__ import annotations

import asyncio
from typing import Any

from .consumer_processor import ConsumerProcessor
from .grpc_channel_manager import GrpcChannelManager
from .grpc_validator import validate_consumer_group, validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import ok, status, status_of
from .receipt_handle import decode
from .receipt_handle_manager import ReceiptHandleManager

pb = load()
ACK_CONCURRENCY = 32  # entries of one AckMessage acked at once (a receive hands out at most 32)


async def current_handle(ctx: ProxyContext, channels: GrpcChannelManager, handles: ReceiptHandleManager, group: str,
                         message_id: str, handle: str) -> str:
    """The handle to use for a message the client names by ``handle``: the renewed one of an auto-renewed message
    (which is renewed no more), else the client's own."""
    if channels.get_channel(ctx.client_id) is not None:
        renewed = await handles.remove(ctx.client_id, group, message_id, handle)
        if renewed is not None:
            return renewed.current
    return handle


def overall_status(codes: set[int]) -> Any:
    """setAckResponseStatus: the entries' code, MULTIPLE_RESULTS when they differ."""
    if len(codes) > 1:
        return status(pb.Code.MULTIPLE_RESULTS)
    if len(codes) == 1:
        return status(next(iter(codes)))
    return status(pb.Code.INTERNAL_SERVER_ERROR, "ack message result is empty")


class AckMessageActivity:
    def __init__(self, consumer: ConsumerProcessor, channels: GrpcChannelManager,
                 handles: ReceiptHandleManager) -> None:
        self.consumer = consumer
        self.channels = channels
        self.handles = handles

    async def ack_message(self, ctx: ProxyContext, request: Any) -> Any:
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        if len(request.entries) == 1:  # what SimpleConsumer.ack sends: no tasks to make for one entry
            entries = [await self._ack(ctx, request, request.entries[0])]
        else:
            # At most ACK_CONCURRENCY at a time: a task for each of a request's entries made 500,000 tasks (1.1 GB)
            # of one 4 MB request, and held the loop from every other client for seconds.
            entries = []
            for start in range(0, len(request.entries), ACK_CONCURRENCY):
                chunk = request.entries[start:start + ACK_CONCURRENCY]
                entries += await asyncio.gather(*(self._ack(ctx, request, e) for e in chunk))
        return pb.AckMessageResponse(status=overall_status({e.status.code for e in entries}), entries=entries)

    async def _ack(self, ctx: ProxyContext, request: Any, entry: Any) -> Any:
        group, topic = request.group.name, request.topic.name
        try:
            handle = await current_handle(ctx, self.channels, self.handles, group, entry.message_id,
                                          entry.receipt_handle)
            await self.consumer.ack_message(decode(handle), group, topic)
            answer = ok()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            answer = status_of(e)
        return pb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle,
                                        status=answer)
