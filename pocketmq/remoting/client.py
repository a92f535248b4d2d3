"""RemotingClient: pooled connections per address, request/response and one-way calls."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .codec import DEFAULT_MAX_FRAME_SIZE
from .codes import BodyDialect
from .command import RemotingCommand
from .errors import RemotingConnectError, RemotingTimeoutError
from .local_channel import LocalAcceptor
from .transport import DEFAULT_MAX_INFLIGHT, Channel, Endpoint, _Protocol, parse_address
from .wire_protocol import WireProtocol

# A one-way request's default bound on its wait for a connection and for room to write (RocketMQ's callers give
# 1 to 5 s; 3 s is its client's default request timeout).
ONEWAY_TIMEOUT = 3.0

log = logging.getLogger(__name__)


class RemotingClient(Endpoint):
    """One connection per ``"host:port"``, opened on first use and reopened on the next use after a loss.

    Processors registered here serve requests the server sends on those connections. Every connection speaks
    ``wire_protocol``: pocketmq's msgpack frames, or RocketMQ's native ones (JSON headers, as a Java client's),
    whose requests carry their bodies in fastjson's JSON (``RemotingCommand.body_dialect`` of a response, or
    ``body_dialect`` here before a request).
    """

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = 3.0,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        busy_poll: float = 0.0,
        wire_protocol: WireProtocol = WireProtocol.MSGPACK,
    ) -> None:
        super().__init__(max_frame_size, max_inflight, busy_poll, wire_protocol)
        self.connect_timeout = connect_timeout
        self._by_addr: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Task[Channel]] = {}
        self._closed = False
        # Called on every request before it goes out, e.g. acl.AclClientRPCHook signing it (RocketMQ's RPCHook
        # doBeforeRequest); None costs one check.
        self.rpc_hook: Callable[[RemotingCommand], None] | None = None
        # Awaited once per new connection, before the calls waiting on it go out; its own calls to the same
        # address use the new connection at once. Errors are logged, never raised to those calls.
        self.on_connected: Callable[[str], Awaitable[None]] | None = None
        # Servers of this process, by address, reached without a socket (add_local_server).
        self._local_servers: dict[str, tuple[LocalAcceptor, str]] = {}

    def add_local_server(self, addr: str, server: LocalAcceptor, client_address: str) -> None:
        """Reach ``addr`` in-process from now on (the next connection to it): ``server`` is the server listening
        there, in this process, whose processors see ``client_address`` as this client's address. Every other
        address is still reached over a socket."""
        self._local_servers[addr] = (server, client_address)

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._closed

    @property
    def body_dialect(self) -> BodyDialect:
        """The dialect of the bodies of the requests this client sends (Java's fastjson on native connections)."""
        return BodyDialect.MSGPACK if self.wire_protocol is WireProtocol.MSGPACK else BodyDialect.FASTJSON

    async def get_channel(self, addr: str, connect_timeout: float | None = None) -> Channel:
        """The open channel to ``addr``, connecting if needed; concurrent callers share one attempt."""
        if self._closed:
            raise RemotingConnectError("client is closed")
        channel = self._by_addr.get(addr)
        if channel is not None and not channel.closed:
            return channel
        task = self._connecting.get(addr)
        if task is None:
            timeout = self.connect_timeout if connect_timeout is None else connect_timeout
            task = asyncio.get_running_loop().create_task(self._connect(addr, timeout))
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connect_done(addr, t))
        # Shielded: one caller giving up must not abort the attempt the others wait on.
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and self._closed and not (current and current.cancelling()):
                raise RemotingConnectError("client closed while connecting") from None
            raise

    def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> Coroutine[Any, Any, RemotingCommand]:
        """Request/response to ``addr``; ``timeout`` covers connecting and waiting. (A coroutine to await, like
        an ``async def``'s: when connected, the channel's own, one frame less on every request.)"""
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        channel = self._by_addr.get(addr)
        if channel is not None and not channel.closed and not self._closed:
            return channel.invoke(request, timeout)  # connected: the whole timeout is the wait's
        return self._connect_and_invoke(addr, request, timeout)

    async def _connect_and_invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        channel = await self._channel_within(addr, timeout)
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise RemotingTimeoutError(f"connecting to {addr} used up the {timeout}s timeout")
        return await channel.invoke(request, remaining)

    async def _channel_within(self, addr: str, timeout: float) -> Channel:
        """get_channel, given up after ``timeout`` (the attempt goes on for others): a new connection also waits
        for ``on_connected`` (a client's heartbeat), which a broker that accepts and never answers holds for as
        long as the heartbeat's own timeout."""
        try:
            async with asyncio.timeout(timeout):
                return await self.get_channel(addr, min(self.connect_timeout, timeout))
        except TimeoutError:
            raise RemotingTimeoutError(f"connecting to {addr} took more than the {timeout:.3g}s timeout") from None

    async def invoke_oneway(self, addr: str, request: RemotingCommand, timeout: float = ONEWAY_TIMEOUT) -> None:
        """Write a one-way request. Waiting for the connection and for room in its output is bounded by
        ``timeout``, as RocketMQ's invokeOneway bounds its wait for a permit: a peer that stops reading made the
        caller wait for ever."""
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        try:
            async with asyncio.timeout(timeout):
                channel = await self.get_channel(addr, min(self.connect_timeout, timeout))
                await channel.invoke_oneway(request)
        except TimeoutError:
            raise RemotingTimeoutError(f"one-way request to {addr} not written within {timeout:.3g}s") from None

    def close_channel(self, addr: str) -> None:
        channel = self._by_addr.pop(addr, None)
        if channel is not None:
            channel.close()

    async def close(self) -> None:
        """Close every connection; later calls raise RemotingConnectError."""
        self._closed = True
        for task in list(self._connecting.values()):
            task.cancel()
        self._by_addr.clear()
        await self._close_all()

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _connect(self, addr: str, timeout: float) -> Channel:
        host, port = parse_address(addr)
        loop = asyncio.get_running_loop()
        local = self._local_servers.get(addr)
        try:
            async with asyncio.timeout(timeout):
                if local is not None:
                    channel: Channel = await local[0].accept_local(self, local[1])
                    channel.remote_address = addr  # as dialled, as a socket's peer name would be
                else:
                    protocol = await self._open(loop, host, port)
                    assert isinstance(protocol, _Protocol) and protocol.channel is not None
                    channel = protocol.channel
        except (OSError, TimeoutError) as e:
            raise RemotingConnectError(f"connect to {addr} failed: {e or type(e).__name__}") from e
        if self._closed:
            channel.close()
            raise RemotingConnectError("client is closed")
        self._by_addr[addr] = channel
        log.debug("connected to %s: %r", addr, channel)
        if self.on_connected is not None:
            try:
                await self.on_connected(addr)
            except Exception:
                log.exception("on_connected(%s) failed", addr)
        return channel

    async def _open(self, loop: asyncio.AbstractEventLoop, host: str, port: int) -> asyncio.BaseProtocol:
        """A connection to ``host``, a host name looked up here first, then each of its addresses tried in turn.

        uvloop's create_connection looks a name up in a future it does not cancel with the connect: a connect
        cancelled meanwhile (close(), its timeout) had the lookup's failure land after, unread, and asyncio logged
        "Future exception was never retrieved". loop.getaddrinfo's lookup is cancelled with its caller."""
        try:
            ipaddress.ip_address(host)
            addresses = [(host, 0)]
        except ValueError:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            addresses = [(str(sockaddr[0]), family) for family, _type, _proto, _name, sockaddr in infos]
        error: OSError = OSError(f"getaddrinfo({host!r}) returned no address")
        for address, family in addresses:
            try:
                _transport, protocol = await loop.create_connection(self._protocol_factory, address, port,
                                                                   family=family)
                return protocol
            except OSError as e:
                error = e
        raise error

    def _connect_done(self, addr: str, task: asyncio.Task[Channel]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # mark retrieved: every waiter may have given up already

    def _channel_closed(self, channel: Channel) -> None:
        for addr, ch in list(self._by_addr.items()):
            if ch is channel:
                del self._by_addr[addr]
        super()._channel_closed(channel)
