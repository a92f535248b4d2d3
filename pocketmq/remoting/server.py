"""RemotingServer: accept connections and serve requests with registered processors."""

from __future__ import annotations

import asyncio
import logging

from .codec import DEFAULT_MAX_FRAME_SIZE
from .transport import DEFAULT_MAX_INFLIGHT, Endpoint

log = logging.getLogger(__name__)


class RemotingServer(Endpoint):
    """Listens on ``host:port`` (port 0 = any free port; read ``port``/``address`` after ``start()``).

    Handlers see the requesting ``Channel`` and may invoke requests on it (server-initiated requests, e.g.
    NOTIFY_CONSUMER_IDS_CHANGED to a consumer).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        busy_poll: float = 0.0,
    ) -> None:
        super().__init__(max_frame_size, max_inflight, busy_poll)
        self.detects_protocol = True  # msgpack and RocketMQ's native frames on the same port
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        """``"host:port"`` as bound (valid after ``start()``)."""
        return f"{self.host}:{self.port}"

    @property
    def started(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("server already started")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol_factory, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("remoting server listening on %s", self.address)

    async def stop(self) -> None:
        """Stop listening, close every connection (their pending invokes fail) and cancel running handlers."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await self._close_all()
        await server.wait_closed()

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
