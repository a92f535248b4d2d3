"""The console's HTTP connections: how many may be open and how long one may stay without finishing a request.

The console shares its process, and so its file-descriptor limit, with `pocketmq dev`'s name server and broker:
connections nobody uses must not pile up. aiohttp's own keep-alive timer closes an idle connection only after
about an hour (an AppRunner's default), older releases never one that has not sent a first request, and none one
stuck in half a body, so the console keeps the count and the deadline itself. Nor does anything bound a client
that sends requests and never reads the answers: its handler waits in drain() for ever.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import cast

from aiohttp import web

DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_MAX_CONNECTIONS = 64


@dataclass
class _State:
    """One open connection, as the guard sees it."""

    done: int = 0  # requests answered on the connection
    request: web.BaseRequest | None = None  # the one being handled
    timer: asyncio.TimerHandle | None = None
    resumed: int = 0  # times the transport's buffer drained below its low-water mark
    mark: tuple[int, int, int] = (0, 0, 0)  # (done, resumed, bytes buffered) when the timer was armed


class ConnectionGuard:
    """Accepts at most ``max_connections`` at once and closes a connection that, ``idle_timeout`` seconds after
    it opened or after its last answer, has not finished another request (sent nothing, half a header or half a
    body). A request whose body has arrived is left to finish: its handler's own bounds apply, unless its answer
    waits unsent for a whole ``idle_timeout`` without the client taking any of it."""

    def __init__(self, server: web.Server, idle_timeout: float, max_connections: int) -> None:
        self._server = server
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self._open: dict[asyncio.BaseProtocol, _State] = {}

    @property
    def count(self) -> int:
        return len(self._open)

    def protocol(self) -> asyncio.BaseProtocol:
        """The listener's protocol factory."""
        if len(self._open) >= self.max_connections:
            return _Refused(self.max_connections)
        handler = self._server()
        tracked = _Tracked(self, handler)
        self._open[handler] = _State()
        return tracked

    def started(self, request: web.BaseRequest) -> None:
        state = self._open.get(request.protocol)
        if state is not None:
            state.request = request

    def finished(self, request: web.BaseRequest) -> None:
        state = self._open.get(request.protocol)
        if state is not None:
            state.request = None
            state.done += 1

    def close(self) -> None:
        for state in self._open.values():
            if state.timer is not None:
                state.timer.cancel()
        self._open.clear()

    def _arm(self, handler: asyncio.BaseProtocol) -> None:
        state = self._open.get(handler)
        if state is not None:
            state.mark = (state.done, state.resumed, _buffered(handler))
            state.timer = asyncio.get_running_loop().call_later(self.idle_timeout, self._check, handler)

    def _check(self, handler: asyncio.BaseProtocol) -> None:
        state = self._open.get(handler)
        if state is None:
            return
        done, resumed, buffered = state.mark
        transport = getattr(handler, "transport", None)
        unsent = _buffered(handler)
        # An answer the client takes, however slowly, drains the buffer or lets it fall below its low-water mark.
        taking = unsent < buffered or state.resumed != resumed
        if state.done != done or transport is None or (unsent and (taking or not buffered)):
            self._arm(handler)
        elif unsent:
            # Bytes waiting a whole timeout, none of them taken: the client does not read, and the handler would
            # wait in drain() (or close() to flush) for as long as it does not. abort() drops them.
            transport.abort()
        elif state.request is None or not state.request.content.is_eof():
            transport.close()  # idle, or half a request
        else:
            self._arm(handler)

    def _resumed(self, handler: asyncio.BaseProtocol) -> None:
        state = self._open.get(handler)
        if state is not None:
            state.resumed += 1

    def _forget(self, handler: asyncio.BaseProtocol) -> None:
        state = self._open.pop(handler, None)
        if state is not None and state.timer is not None:
            state.timer.cancel()


def _buffered(handler: asyncio.BaseProtocol) -> int:
    """Bytes written to the connection that its transport has not yet handed to the socket."""
    transport = getattr(handler, "transport", None)
    return transport.get_write_buffer_size() if transport is not None else 0


class _Tracked(asyncio.Protocol):
    """aiohttp's handler for one connection, seen from the listener: the guard learns when it opens and closes."""

    def __init__(self, guard: ConnectionGuard, handler: asyncio.BaseProtocol) -> None:
        self._guard = guard
        self._handler = handler

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._handler.connection_made(transport)
        self._guard._arm(self._handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard._forget(self._handler)
        self._handler.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._handler.data_received(data)  # type: ignore[attr-defined]

    def eof_received(self) -> bool | None:
        return self._handler.eof_received()  # type: ignore[attr-defined]

    def pause_writing(self) -> None:
        self._handler.pause_writing()

    def resume_writing(self) -> None:
        self._guard._resumed(self._handler)
        self._handler.resume_writing()


class _Refused(asyncio.Protocol):
    """A connection over the limit: told why, then closed, so it holds no descriptor."""

    def __init__(self, limit: int) -> None:
        self._limit = limit

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        text = f"the console already has {self._limit} connections open (its limit); try again later\n".encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n").encode()
        # Duck-typed, not an isinstance check: uvloop's TCPTransport (the loop `pocketmq dev` runs on) writes but is
        # no asyncio.WriteTransport.
        cast(asyncio.WriteTransport, transport).write(head + text)
        transport.close()
