"""RequestFutureHolder: the requests of one client instance waiting for their replies, by correlation id, and
the handler of the replies brokers push (ClientRemotingProcessor.receiveReplyMessage).

A request (Producer.request) puts a future here before it sends; the broker that takes the reply pushes it
with PUSH_REPLY_MESSAGE_TO_CLIENT over this client's connection, and the reply's CORRELATION_ID finds the
future. The requester removes its entry when it stops waiting, reply or not, so nothing outlives a timeout
(RocketMQ sweeps expired entries every second instead).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Protocol

from pocketmq.common.compression import InflateError, inflate_body
from pocketmq.common.constants import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    PROPERTY_CORRELATION_ID,
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
)
from pocketmq.common.message import MessageExt, properties_to_string
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.reply_header import ReplyMessageRequestHeader
from pocketmq.remoting.transport import Channel

log = logging.getLogger(__name__)



class RequestCallback(Protocol):
    """What ``Producer.request_async`` calls with the reply, or with the failure (RocketMQ's RequestCallback);
    either method may be an ``async def``, run as a task of its own (as SendCallback's)."""

    def on_success(self, message: MessageExt) -> None | Awaitable[None]: ...

    def on_exception(self, exc: BaseException) -> None | Awaitable[None]: ...


class RequestFutureHolder:
    def __init__(self) -> None:
        self.request_future_table: dict[str, asyncio.Future[MessageExt]] = {}

    def add(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self.request_future_table[correlation_id] = future
        return future

    def remove(self, correlation_id: str) -> None:
        self.request_future_table.pop(correlation_id, None)

    def put_response_message(self, correlation_id: str | None, reply: MessageExt) -> bool:
        """Hand ``reply`` to the request waiting for it; False when none is (it timed out, or never was)."""
        future = self.request_future_table.pop(correlation_id, None) if correlation_id else None
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True

    def register(self, remoting_client: RemotingClient) -> None:
        remoting_client.register_processor(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self.receive_reply_message)

    async def receive_reply_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        receive_time = time.time_ns() // 1_000_000
        try:
            reply = decode_reply_message(request)
        except (HeaderError, ValueError) as e:
            log.warning("bad reply message from %s: %s", channel.remote_address, e)
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, "process reply message fail")
        reply.put_property(PROPERTY_REPLY_MESSAGE_ARRIVE_TIME, str(receive_time))
        correlation_id = reply.properties.get(PROPERTY_CORRELATION_ID)
        if not self.put_response_message(correlation_id, reply):
            log.warning("receive reply message, but not matched any request, CorrelationId: %s , reply from host: %s",
                        correlation_id, reply.born_host)
        return RemotingCommand.response_to(request)


def decode_reply_message(request: RemotingCommand) -> MessageExt:
    """The reply a PUSH_REPLY_MESSAGE_TO_CLIENT carries, as a MessageExt (body decompressed)."""
    h = request.decode_header(ReplyMessageRequestHeader)
    body = request.body or b""
    sys_flag = h.sys_flag & ~(COMPRESSED_FLAG | COMPRESSION_TYPE_MASK)  # (Java's receiveReplyMessage sets none)
    inflate_error = None
    if h.sys_flag & COMPRESSED_FLAG:
        try:
            body = inflate_body(body, h.sys_flag)
        except InflateError as e:
            # (LZ4 or ZSTD, which a 5.x replier may choose, or a damaged stream: the requester gets the bytes as
            # sent and marked, as a pull hands over such a body, rather than a timeout)
            sys_flag, inflate_error = h.sys_flag, str(e)
    reply = MessageExt(
        store_size=0, body_crc=0, queue_id=h.queue_id, flag=h.flag, queue_offset=0, commit_log_offset=0,
        sys_flag=sys_flag,
        born_timestamp=h.born_timestamp, born_host=h.born_host.lstrip("/"),
        store_timestamp=h.store_timestamp, store_host=h.store_host.lstrip("/"),
        reconsume_times=h.reconsume_times or 0, prepared_transaction_offset=0, body=body, topic=h.topic,
        properties_string=h.properties or properties_to_string({}),
    )
    reply.body_inflate_error = inflate_error
    return reply
