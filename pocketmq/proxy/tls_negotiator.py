"""TLS and plaintext gRPC on one port (RocketMQ's ProxyAndTlsProtocolNegotiator in permissive mode).

grpcio cannot tell the two apart on one listener, so a small asyncio front owns the public port: it reads a
connection's first byte (0x16 opens a TLS handshake record; a plaintext HTTP/2 connection opens with the preface
``PRI * HTTP/2.0``) and splices the connection to one of two gRPC listeners on abstract Unix sockets, one with
TLS, one without. The splice copies bytes with transports and protocols (no per-chunk task), pausing the reading
side when the writing side's buffer fills, so a peer that stops reading holds at most one high-water mark of
data per direction.

Each spliced connection reaches gRPC from an abstract Unix address of its own, so that the endpoint can tell
the client's own address (``PermissiveFront.client_address``), which gRPC alone would show as the Unix socket.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
from typing import cast

log = logging.getLogger(__name__)

TLS_HANDSHAKE = 0x16
# A connection that sends nothing is closed after this long (no first byte, nothing to route).
FIRST_BYTE_TIMEOUT = 30.0


class _Half(asyncio.Protocol):
    """One side of a splice: what it reads goes to ``peer``; its pause tells the peer to stop reading."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.pending: list[bytes] = []
        self.eof = False  # this side read its end (and passed it on to the peer)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's transports do not subclass asyncio's)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)
        else:
            self.pending.append(data)

    def eof_received(self) -> bool:
        """Half-close: the end goes on to the peer, and this side stays open for what still flows the other way.
        Once both ways have ended, both sockets close: a transport that read its end and wrote its own is never
        closed by asyncio, and each such connection kept two descriptors for good."""
        self.eof = True
        peer = self.peer
        if peer is None or peer.transport is None:
            return False
        if peer.eof:
            peer.transport.close()  # (after what it still has to write)
            return False
        if peer.transport.can_write_eof():
            peer.transport.write_eof()
            return True
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()
        self.transport = None

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


class _Client(_Half):
    """The accepted connection: routed on its first byte."""

    def __init__(self, front: PermissiveFront) -> None:
        super().__init__()
        self.front = front
        self.routed = False
        self.timer: asyncio.TimerHandle | None = None
        self.name: str | None = None  # the abstract address it reaches gRPC from

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.front.live.add(self)
        self.timer = asyncio.get_running_loop().call_later(self.front.first_byte_timeout, transport.close)

    def data_received(self, data: bytes) -> None:
        if self.routed:
            super().data_received(data)
            return
        self.routed = True
        if self.timer is not None:
            self.timer.cancel()
        self.pending.append(data)
        assert self.transport is not None
        self.transport.pause_reading()
        tls = data[0] == TLS_HANDSHAKE
        self.front.routed[tls] += 1
        path = self.front.tls_path if tls else self.front.plain_path
        task = asyncio.get_running_loop().create_task(self._connect(path))
        self.front.connecting.add(task)
        task.add_done_callback(self.front.connecting.discard)

    async def _connect(self, path: str) -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            self.name = self.front.name_of(self)
            sock.bind("\0" + self.name)
            # (connected here: uvloop's create_unix_connection takes no abstract-namespace path)
            await loop.sock_connect(sock, path)
            _, backend = await loop.create_unix_connection(_Half, sock=sock)
        except OSError as e:
            sock.close()
            log.warning("gRPC listener %r unreachable: %s", path, e)
            if self.transport is not None:
                self.transport.close()
            return
        except asyncio.CancelledError:  # (the front stopping)
            sock.close()
            raise
        if self.transport is None or self.transport.is_closing():
            assert backend.transport is not None
            backend.transport.close()
            return
        backend.peer, self.peer = self, backend
        assert backend.transport is not None
        for chunk in self.pending:
            backend.transport.write(chunk)
        self.pending.clear()
        self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.name is not None:
            self.front.clients.pop(self.name, None)
        self.front.live.discard(self)
        super().connection_lost(exc)


class PermissiveFront:
    """The public listener: ``start()`` binds ``host:port`` (0 picks a port; ``port`` tells which)."""

    def __init__(self, host: str, port: int, tls_path: str, plain_path: str,
                 first_byte_timeout: float = FIRST_BYTE_TIMEOUT) -> None:
        self.host = host
        self.port = port
        self.tls_path = tls_path
        self.plain_path = plain_path
        self.first_byte_timeout = first_byte_timeout
        self.connecting: set[asyncio.Task[None]] = set()
        self.live: set[_Client] = set()  # accepted connections not yet lost
        self.routed = {True: 0, False: 0}  # connections routed so far, by "opened with a TLS handshake"
        self._server: asyncio.Server | None = None
        # The spliced connections' abstract addresses, and the address of the client behind each.
        self.clients: dict[str, str] = {}
        self._prefix = f"{plain_path.lstrip(chr(0))}-client-"
        self._numbers = itertools.count()

    def name_of(self, client: _Client) -> str:
        """An abstract address for ``client``'s connection to gRPC, remembered with the client's address."""
        name = f"{self._prefix}{next(self._numbers)}"
        peer = None if client.transport is None else client.transport.get_extra_info("peername")
        host, port = (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else ("", 0)
        self.clients[name] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return name

    def client_address(self, abstract_name: str) -> str | None:
        """``host:port`` of the client whose connection reaches gRPC from ``abstract_name``."""
        return self.clients.get(abstract_name)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Client(self), self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop accepting; the connections already spliced go on (close_connections ends them)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self.connecting):
            task.cancel()

    async def close_connections(self) -> None:
        """Abort every connection still spliced, both its sides, once gRPC has stopped: gRPC closes its ends of
        the Unix sockets only, and a transport left open on a loop about to close is a leaked descriptor (an
        "unclosed transport" warning whenever it is collected, in the test of whoever runs then)."""
        for client in list(self.live):
            for half in (client, client.peer):
                if half is not None and half.transport is not None:
                    half.transport.abort()
        # (connection_lost runs in the loop's next turns, before the caller closes it)
        for _ in range(3):
            await asyncio.sleep(0)
