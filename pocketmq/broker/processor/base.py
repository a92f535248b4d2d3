"""What every processor shares: code dispatch and turning bad client input into an error response."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError, HeaderError
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

Handler = Callable[[Channel, RemotingCommand], Awaitable[RemotingCommand | None]]
InlineHandler = Callable[[Channel, RemotingCommand], RemotingCommand | Awaitable[RemotingCommand | None] | None]


response = RemotingCommand.response_to  # response(request, code, remark, ext_fields=..., body=...)

# RemotingCommand.createResponseCommand's remark: RocketMQ leaves it on the answers whose processor sets a code but
# no remark (5.5.0's every change of invisible time taken or past the queue's end, every notification and polling
# info answered; 4.9.7's every rollback of a transaction taken).
UNSET_REMARK = "not set any response code"


class BrokerProcessor:
    """Subclasses fill, in their constructor, ``handlers`` (request code -> coroutine function; each request
    runs in a task) or ``inline_handlers`` (request code -> plain function, for the requests the transport
    answers as it reads them, see ``RemotingServer.register_inline_processor``). An inline handler returns the
    response when it has it at once, and an awaitable of it (run in a task) only when it has to wait."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers: dict[int, Handler] = {}
        self.inline_handlers: dict[int, InlineHandler] = {}

    def register_to(self, server: RemotingServer) -> None:
        for code in self.handlers:
            server.register_processor(code, self.process_request)
        for code in self.inline_handlers:
            server.register_inline_processor(code, self.process_inline)

    def process_inline(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        try:
            result = self.inline_handlers[request.code](channel, request)
        except (HeaderError, BodyError) as e:
            return self._bad_request(channel, request, e)
        if result is None or isinstance(result, RemotingCommand):
            return result
        return self._guard(channel, request, result)

    async def _guard(
        self, channel: Channel, request: RemotingCommand, result: Awaitable[RemotingCommand | None]
    ) -> RemotingCommand | None:
        try:
            return await result
        except (HeaderError, BodyError) as e:
            return self._bad_request(channel, request, e)

    @staticmethod
    def _bad_request(channel: Channel, request: RemotingCommand, e: Exception) -> RemotingCommand:
        # Client input, not a broker fault: answer (two-way requests) and keep the connection.
        log.info("bad request code %s from %s: %s", request.code, channel.remote_address, e)
        return response(request, ResponseCode.SYSTEM_ERROR, f"bad request (code {request.code}): {e}")

    async def process_request(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        handler = self.handlers[request.code]
        try:
            return await handler(channel, request)
        except (HeaderError, BodyError) as e:
            return self._bad_request(channel, request, e)
