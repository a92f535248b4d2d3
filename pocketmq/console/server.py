"""ConsoleServer: the console's pages, its JSON API and /metrics on one aiohttp server.

    console = ConsoleServer("127.0.0.1:9876", port=8080)
    await console.start()
    print(console.url)
    ...
    await console.stop()

It runs on the caller's event loop. The page assets are files of this package (static/): nothing is fetched
from elsewhere, so the console works offline.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from pocketmq.client.admin.mq_admin_ext import MQAdminExt

from .api import ConsoleApi, error_response
from .local import LocalBrokers
from .metrics import CONTENT_TYPE_LATEST, MetricsCollector

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
Handler = Callable[[web.Request], Awaitable[Any]]


class ConsoleServer:
    def __init__(
        self,
        namesrv_addr: str,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        admin: bool = False,
        local_brokers: Iterable[Any] = (),
        store_roots: dict[str, str] | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        timeout: float = 3.0,
        protocol: str = "msgpack",
    ) -> None:
        """``local_brokers``: BrokerControllers of this process (their statistics feed /metrics exactly, their
        stores the storage page); ``store_roots``: broker name -> store folder for a store given by path."""
        self.namesrv_addr = namesrv_addr
        self.host, self.port = host, port
        self.local = LocalBrokers(local_brokers)
        roots = dict(self.local.store_roots())
        roots.update(store_roots or {})
        slots, num = 5_000_000, 20_000_000
        if self.local.controllers:  # the store's own geometry, not a guess
            cfg = self.local.controllers[0].broker_config
            slots, num = cfg.max_hash_slot_num, cfg.max_index_num
        self.admin = MQAdminExt(namesrv_addr, timeout=timeout, protocol=protocol, access_key=access_key,
                                secret_key=secret_key)
        self.api = ConsoleApi(self.admin, namesrv_addr, admin, roots, access_key, secret_key, slots, num)
        if self.local.controllers:
            self.api.timer_precision_ms = self.local.controllers[0].broker_config.timer_precision_ms
        self.metrics = MetricsCollector(self.admin, self.local)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_json_errors])
        app.router.add_get("/", self._index)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_static("/static/", STATIC, show_index=False)
        for method, path, handler in self.api.routes():
            app.router.add_route(method, path, _jsonify(handler))
        return app

    async def start(self) -> None:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        if self.port == 0:  # the port the OS chose
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.api.close()
        await self.admin.close()

    async def __aenter__(self) -> ConsoleServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def _metrics(self, request: web.Request) -> web.Response:
        body = await self.metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _jsonify(handler: Handler) -> Handler:
    async def wrapped(request: web.Request) -> web.Response:
        data = await handler(request)
        return web.json_response(data, dumps=_dumps)

    return wrapped


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An API call that fails answers JSON {error, code} with a status that says whose fault it was; the
    console keeps serving."""
    origin = request.headers.get("Origin")
    if request.method not in ("GET", "HEAD") and origin is not None and urlsplit(origin).netloc != request.host:
        return web.json_response({"error": f"cross-origin request from {origin} refused", "code": None}, status=403)
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except web.HTTPException:
        raise
    except Exception as e:
        status, body = error_response(e)
        if status >= 500:
            log.warning("console: %s %s failed", request.method, request.path, exc_info=True)
        return web.json_response(body, status=status, dumps=_dumps)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=str)
