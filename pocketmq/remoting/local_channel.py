"""LocalChannel: a connection between two endpoints of one process, without a socket or a codec (RocketMQ's proxy in
local mode, which hands its RemotingCommands to the broker's processors in-process).

A server offers itself to clients of its own process as a ``LocalAcceptor`` (RemotingServer does);
``RemotingClient.add_local_server(addr, acceptor)`` makes the client's connection to ``addr`` a pair of
LocalChannels instead of a TCP connection. Each end is a Channel of its endpoint, on its endpoint's event loop (the
two may run on different loops in different threads): requests go through the receiving endpoint's dispatch as a
socket's do (request validator, inline processors, tasks, long-polling requests answered later, errors as response
codes, one-way requests, requests the server sends the client), and each command crosses as a copy, so neither
side sees the other's later changes to a command.

What a socket has and this does not: frames (no frame size limit, no encoding errors), write backpressure (an
in-process peer takes every response at once) and the idle and partial-frame timeouts.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from pocketmq.common.util_all import seconds_text

from .channel import Channel
from .codes import FLAG_ONEWAY, FLAG_RESPONSE
from .command import RemotingCommand
from .errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeoutError

if TYPE_CHECKING:
    from .transport import Endpoint

log = logging.getLogger(__name__)


class LocalAcceptor(Protocol):
    """A server that takes in-process connections (RemotingServer)."""

    async def accept_local(self, client: Endpoint, client_address: str) -> LocalChannel:
        """The client's end of a new in-process connection, whose server end (seen by the server's processors
        with ``client_address`` as its remote address) is open on the server's loop."""
        ...


class _NoTransport:
    """What Channel asks of its transport, for a channel with none: nothing is ever written to it."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def write(self, data: bytes) -> None:
        raise RemotingConnectError("a local channel writes no bytes")

    def writelines(self, data: Any) -> None:
        raise RemotingConnectError("a local channel writes no bytes")

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def copy_command(cmd: RemotingCommand) -> RemotingCommand:
    """What the other end would decode from ``cmd``'s frame: a command of its own, its header map a new dict without
    the None values a frame leaves out, its body immutable bytes."""
    body = cmd.body
    if body is not None and type(body) is not bytes:
        body = bytes(body)
    return RemotingCommand(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark,
                           {k: v for k, v in cmd.ext_fields.items() if v is not None}, body, cmd.serialize_type)


class LocalChannel(Channel):
    """One end of an in-process connection; ``pair`` joins two ends made on their own endpoints' loops."""

    __slots__ = ("_owner", "_own_loop", "_peer", "_peer_loop", "_waiting", "_same_loop", "_outbox", "_outbox_handle")

    def __init__(self, endpoint: Endpoint, local_address: str, remote_address: str) -> None:
        super().__init__(endpoint, _NoTransport())  # type: ignore[arg-type]
        self._owner = endpoint
        self._own_loop = asyncio.get_running_loop()
        self._peer: LocalChannel | None = None
        self._peer_loop: asyncio.AbstractEventLoop | None = None
        self._same_loop = False
        self._waiting: dict[int, asyncio.Future[RemotingCommand]] = {}
        # Commands for the peer, handed over together at the end of this loop turn (one wake-up of the peer's loop
        # for a burst, as a socket's writes of one turn share a syscall).
        self._outbox: list[RemotingCommand] = []
        self._outbox_handle: asyncio.Handle | None = None
        self.local_address = local_address
        self.remote_address = remote_address
        endpoint.channel_opened(self)

    def __repr__(self) -> str:
        return f"<LocalChannel {self.local_address} -> {self.remote_address} {'closed' if self.closed else 'open'}>"

    @staticmethod
    def pair(a: LocalChannel, a_loop: asyncio.AbstractEventLoop, b: LocalChannel,
             b_loop: asyncio.AbstractEventLoop) -> None:
        a._peer, a._peer_loop, a._same_loop = b, b_loop, a_loop is b_loop
        b._peer, b._peer_loop, b._same_loop = a, a_loop, a_loop is b_loop

    def _send(self, cmd: RemotingCommand) -> bool:
        """Queue ``cmd`` (a copy already) for the peer; False when the connection is closed."""
        if self.closed or self._peer is None or self._peer_loop is None or self._peer_loop.is_closed():
            return False
        self._outbox.append(cmd)
        if self._outbox_handle is None:
            self._outbox_handle = self._own_loop.call_soon(self._hand_over)
        return True

    def _hand_over(self) -> None:
        if self._outbox_handle is not None:
            self._outbox_handle.cancel()
            self._outbox_handle = None
        batch, self._outbox = self._outbox, []
        if batch and self._peer is not None:
            self._post(self._peer.local_commands_arrived, batch)

    def _post(self, callback: Any, *args: Any) -> bool:
        """Run ``callback(*args)`` on the peer's loop, soon; False when the peer (or its loop) is gone."""
        loop = self._peer_loop
        if loop is None or loop.is_closed():
            return False
        try:
            if self._same_loop:
                loop.call_soon(callback, *args)
            else:
                loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the peer's loop closed meanwhile
            return False
        return True

    @property
    def unwritten_bytes(self) -> int:
        return 0

    def idle_for(self, now: float) -> float:
        return 0.0  # an in-process peer cannot vanish unnoticed: the server's idle scan never closes this one

    # --- sending ---

    def send_response(self, response: RemotingCommand) -> bool:
        if self.closed or self._peer is None:
            return False
        copy = copy_command(response)
        copy.flag |= FLAG_RESPONSE
        return self._send(copy)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        if request.flag & (FLAG_RESPONSE | FLAG_ONEWAY):
            raise ValueError("invoke needs a two-way request; use invoke_oneway / send_response")
        if self.closed or self._peer is None:
            raise RemotingConnectError(f"channel to {self.remote_address} is closed")
        opaque = request.opaque
        if opaque in self._waiting:
            raise ValueError(f"opaque {opaque} is already in flight on {self!r}")
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._waiting[opaque] = fut
        try:
            copy = copy_command(request)
            if len(self._waiting) == 1 and not self._outbox and self._peer is not None:
                # Alone in flight: over at once, a loop turn sooner (as Channel.invoke writes such a request).
                sent = not self.closed and self._post(self._peer.local_commands_arrived, [copy])
            else:
                sent = self._send(copy)
            if not sent:
                raise RemotingConnectError(f"channel to {self.remote_address} is closed")
            try:
                async with asyncio.timeout(timeout):
                    return await fut
            except TimeoutError:
                raise RemotingTimeoutError(f"no response from {self.remote_address} within {seconds_text(timeout)} "
                                           f"(code {request.code}, opaque {opaque})") from None
        finally:
            self._waiting.pop(opaque, None)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        if request.is_response:
            raise ValueError("invoke_oneway needs a request")
        request.flag |= FLAG_ONEWAY
        if not self._send(copy_command(request)):
            raise RemotingConnectError(f"channel to {self.remote_address} is closed")

    def flush(self) -> None:
        """Hand what is queued over now (a parked request's late answer, say), not at the end of the loop turn."""
        self._hand_over()

    def close(self) -> None:
        """Close both ends: pending invokes on either side fail, as when a connection drops."""
        if self.closed:
            return
        self._hand_over()  # what was answered before the close still reaches the peer, as a socket's close flushes
        self._closed_here()
        if self._peer is not None:
            self._post(self._peer.local_closed_by_peer)

    def abort(self) -> None:
        self.close()

    # --- events from the peer, each on this end's loop ---

    def local_commands_arrived(self, batch: list[RemotingCommand]) -> None:
        """Requests go to the endpoint's dispatch, responses to the invokes waiting for them. What the requests'
        inline processors answer goes back together once the batch is handled."""
        for cmd in batch:
            if self.closed:
                return
            if not cmd.flag & FLAG_RESPONSE:
                self._owner.request_received(self, cmd)
                continue
            fut = self._waiting.pop(cmd.opaque, None)
            if fut is None or fut.done():
                log.debug("response without a waiter on %r: %r", self, cmd)
            else:
                fut.set_result(cmd)
        if self._outbox:
            self._hand_over()

    def local_closed_by_peer(self) -> None:
        if not self.closed:
            self._closed_here()

    def _closed_here(self) -> None:
        if self._outbox_handle is not None:
            self._outbox_handle.cancel()
            self._outbox_handle = None
        self._outbox = []
        waiting, self._waiting = self._waiting, {}
        for opaque, fut in waiting.items():
            if not fut.done():
                fut.set_exception(RemotingSendRequestError(
                    f"connection to {self.remote_address} closed before the response (opaque {opaque})"))
        self.connection_lost(None)
        self._owner.channel_closed(self)
