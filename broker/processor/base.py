"""What every processor shares: code dispatch and turning bad client input into an error response."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import BodyError, HeaderError
from remoting.server import RemotingServer
from remoting.transport import Channel

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger("broker")

Handler = Callable[[Channel, RemotingCommand], Awaitable[RemotingCommand | None]]


def response(
    request: RemotingCommand, code: int = ResponseCode.SUCCESS, remark: str | None = None, **kwargs: object
) -> RemotingCommand:
    return RemotingCommand.response_to(request, code, remark, **kwargs)  # type: ignore[arg-type]


class BrokerProcessor:
    """Subclasses fill ``handlers`` (request code -> coroutine) in their constructor."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers: dict[int, Handler] = {}

    def register_to(self, server: RemotingServer) -> None:
        for code in self.handlers:
            server.register_processor(code, self.process_request)

    async def process_request(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        handler = self.handlers[request.code]
        try:
            return await handler(channel, request)
        except (HeaderError, BodyError) as e:
            # Client input, not a broker fault: answer (two-way requests) and keep the connection.
            log.info("bad request code %s from %s: %s", request.code, channel.remote_address, e)
            return response(request, ResponseCode.SYSTEM_ERROR, f"bad request (code {request.code}): {e}")
