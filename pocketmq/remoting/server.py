"""RemotingServer: accept connections and serve requests with registered processors."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Collection

from .codec import DEFAULT_MAX_FRAME_SIZE
from .codes import ResponseCode
from .command import RemotingCommand
from .errors import RemotingConnectError
from .local_channel import LocalChannel
from .transport import DEFAULT_MAX_INFLIGHT, Channel, ConnectionLimits, Endpoint, _Protocol

log = logging.getLogger(__name__)


class RemotingServer(Endpoint):
    """Listens on ``host:port`` (port 0 = any free port; read ``port``/``address`` after ``start()``).

    Handlers see the requesting ``Channel`` and may invoke requests on it (server-initiated requests, e.g.
    NOTIFY_CONSUMER_IDS_CHANGED to a consumer). Each connection is held to ``limits`` (ConnectionLimits: write
    water marks, the timeout of an incomplete frame, the idle timeout).

    ``vip_port``: a second port served as the first (RocketMQ's VIP channel, the fast remoting server its broker runs
    on listenPort - 2 for clients with vipChannelEnabled; 0 = any free port): the same processors, channels, limits,
    validator and idle scan, except that requests whose code is in ``vip_refused`` are answered there
    REQUEST_CODE_NOT_SUPPORTED, as Apache's default processor answers what its fast server has no processor for. A
    VIP port that cannot be bound is logged and left out (``vip_error`` says why, ``vip_address`` is None); the main
    port serves on. Only the VIP connections' dispatch checks the refused codes: the main port's requests reach
    their processors as registered, a pull's path untouched by the second port.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        busy_poll: float = 0.0,
        limits: ConnectionLimits | None = None,
        vip_port: int | None = None,
        vip_refused: Collection[int] = (),
    ) -> None:
        super().__init__(max_frame_size, max_inflight, busy_poll, limits=limits or ConnectionLimits())
        self.detects_protocol = True  # msgpack and RocketMQ's native frames on the same port
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scan_handle: asyncio.TimerHandle | None = None
        self.vip_port = vip_port
        self.vip_error: str | None = None
        self._vip_server: asyncio.Server | None = None
        self._vip_bound: int | None = None
        self._vip_refused = frozenset(int(code) for code in vip_refused)

    @property
    def address(self) -> str:
        """``"host:port"`` as bound (valid after ``start()``)."""
        return f"{self.host}:{self.port}"

    @property
    def vip_address(self) -> str | None:
        """``"host:port"`` of the VIP port as bound; None when none was asked for or it could not be bound."""
        return None if self._vip_bound is None else f"{self.host}:{self._vip_bound}"

    def _vip_dispatch(self, channel: Channel, request: RemotingCommand) -> None:
        """A VIP connection's requests: the refused codes answered here (after the validator, as on the main
        port), the rest dispatched as the main port's. The check is on the VIP connections' path only."""
        if request.code not in self._vip_refused:
            self._dispatch(channel, request)
            return
        if self.request_validator is not None and self._refused(channel, request):
            return
        if not request.is_oneway:
            channel.send_response(_not_supported(request))

    @property
    def started(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("server already started")
        loop = self._loop = asyncio.get_running_loop()
        # Kept before it listens: a start cancelled at the last step (asyncio's create_server yields once its
        # socket listens) must leave stop() a server to close, not a port nobody owns.
        self._server = await loop.create_server(self._protocol_factory, self.host, self.port, start_serving=False)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.vip_port is not None:
            await self._bind_vip(loop, self.vip_port)  # (also kept before it listens)
        await self._server.start_serving()
        if self._vip_server is not None:
            await self._vip_server.start_serving()
        log.info("remoting server listening on %s%s", self.address,
                 "" if self.vip_address is None else f" (VIP channel {self.vip_address})")
        self._schedule_scan()

    async def _bind_vip(self, loop: asyncio.AbstractEventLoop, port: int) -> None:
        self.vip_error = None
        try:
            self._vip_server = await loop.create_server(
                lambda: _VipProtocol(self), self.host, port, start_serving=False)
        except OSError as e:
            # Apache's broker fails to start instead; here two brokers of one host on ports two apart (10911 and
            # 10913) both run, the second without a VIP channel.
            self.vip_error = os.strerror(e.errno) if e.errno else str(e)  # (asyncio's strerror names the address)
            log.warning("VIP channel port %s:%d not bound (%s): clients with vipChannelEnabled cannot reach this "
                        "server; serving on %s only", self.host, port, self.vip_error, self.address)
            return
        self._vip_bound = self._vip_server.sockets[0].getsockname()[1]

    def _scan_interval(self) -> float | None:
        assert self.limits is not None
        timeouts = [t for t in (self.limits.frame_read_timeout, self.limits.max_idle_time) if t > 0]
        # A quarter of the shortest: a connection is closed between its timeout and 1.25 times it.
        return max(min(timeouts) / 4, 0.001) if timeouts else None

    def _schedule_scan(self) -> None:
        interval = self._scan_interval()
        if interval is not None and self._server is not None:
            self._scan_handle = asyncio.get_running_loop().call_later(interval, self._scan_connections)

    def _scan_connections(self) -> None:
        """Close the connections idle for ``max_idle_time`` (Netty's IdleStateHandler, as RocketMQ installs it) and
        those holding a frame that began more than ``frame_read_timeout`` ago (not counting while this end itself
        does not read the connection). Both are aborted: a peer that stopped reading would keep a graceful close
        waiting for its unwritten responses."""
        limits = self.limits
        assert limits is not None
        now = asyncio.get_running_loop().time()
        idle, frame_timeout = limits.max_idle_time, limits.frame_read_timeout
        for ch in list(self._channels):
            idle_for = ch.idle_for(now)
            if idle and idle_for >= idle:
                # (A channel closed gracefully is still here while its peer does not take the unwritten output:
                # it goes the same way, or the peer would hold its socket, buffer and waiting tasks for ever.)
                # (An idle peer is routine, e.g. an admin tool or the console between its requests: INFO. One
                # that stopped taking what was written is not.)
                log.log(logging.WARNING if ch.closed else logging.INFO,
                        "%s %r: idle for %.3gs (serverChannelMaxIdleTimeSeconds %gs)",
                        "dropping the output of" if ch.closed else "closing", ch, idle_for, idle)
                ch.abort()
                continue
            if ch.closed:
                continue
            age = ch.partial_frame_age(now)
            if age is not None and frame_timeout and age >= frame_timeout:
                log.warning("closing %r: a frame that began %.3gs ago is still incomplete (frame read timeout %gs)",
                            ch, age, frame_timeout)
                ch.abort()
        self._schedule_scan()

    async def accept_local(self, client: Endpoint, client_address: str) -> LocalChannel:
        """An in-process connection from ``client`` (local_channel.LocalAcceptor): its end, on the caller's loop,
        while the server's end, which this server's processors see with ``client_address`` as its remote address,
        lives on the server's loop."""
        server_loop = self._loop
        if self._server is None or server_loop is None or server_loop.is_closed():
            raise RemotingConnectError(f"{self.address} is not serving")
        client_loop = asyncio.get_running_loop()

        async def open_server_end() -> LocalChannel:
            return LocalChannel(self, self.address, client_address)

        if server_loop is client_loop:
            server_end = await open_server_end()
        else:
            server_end = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(open_server_end(), server_loop))
        client_end = LocalChannel(client, client_address, self.address)
        LocalChannel.pair(client_end, client_loop, server_end, server_loop)
        return client_end

    async def stop(self) -> None:
        """Stop listening, close every connection (their pending invokes fail) and cancel running handlers."""
        server, self._server = self._server, None
        vip, self._vip_server, self._vip_bound = self._vip_server, None, None
        if server is None:
            return
        if self._scan_handle is not None:
            self._scan_handle.cancel()
            self._scan_handle = None
        server.close()
        if vip is not None:
            vip.close()
        await self._close_all()
        await server.wait_closed()
        if vip is not None:
            await vip.wait_closed()

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class _VipProtocol(_Protocol):
    """A connection to the VIP port: served by the same server, its requests dispatched through the refusals."""

    __slots__ = ()

    def __init__(self, server: RemotingServer) -> None:
        super().__init__(server)
        self._dispatch = server._vip_dispatch


def _not_supported(request: RemotingCommand) -> RemotingCommand:
    # (Apache's AdminBrokerProcessor.getUnknownCmdResponse, the fast remoting server's default processor)
    return RemotingCommand.response_to(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                       remark=f" request type {request.code} not supported")
