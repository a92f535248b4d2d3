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

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from pocketmq.client.admin.mq_admin_ext import MQAdminExt

from .api import ConsoleApi, error_response
from .connections import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, ConnectionGuard
from .local import LocalBrokers
from .metrics import CONTENT_TYPE_LATEST, MetricsCollector

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
Handler = Callable[[web.Request], Awaitable[Any]]
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
ALL_INTERFACES = frozenset({"", "0.0.0.0", "::"})
LOOPBACK_FOR = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}  # the loopback address each wildcard serves


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
        allowed_hosts: Iterable[str] = (),
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """``local_brokers``: BrokerControllers of this process (their statistics feed /metrics exactly, their
        stores the storage page); ``store_roots``: broker name -> store folder for a store given by path;
        ``allowed_hosts``: names besides loopback and ``host`` that a request's Host header may give;
        ``idle_timeout``/``max_connections``: see connections.ConnectionGuard."""
        self.namesrv_addr = namesrv_addr
        self.host, self.port = host, port
        self.allowed_hosts = host_names(host, allowed_hosts)
        self.idle_timeout, self.max_connections = idle_timeout, max_connections
        self._guard: ConnectionGuard | None = None
        self._listener: asyncio.Server | None = None
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
        """The address to open. Bound to every interface, loopback's: the Host check refuses 0.0.0.0 and :: (no
        browser should name them), and asyncio binds :: to IPv6 alone."""
        host = LOOPBACK_FOR.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    @property
    def on_every_interface(self) -> bool:
        return self.host in ALL_INTERFACES

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._track, _host_check(self.allowed_hosts), _json_errors])
        app.router.add_get("/", self._index)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_static("/static/", STATIC, show_index=False)
        for method, path, handler in self.api.routes():
            app.router.add_route(method, path, _jsonify(handler))
        return app

    async def start(self) -> None:
        # handler_cancellation: a request the browser gave up on stops, rather than keep reading the cluster.
        runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await runner.setup()
        assert runner.server is not None
        guard = ConnectionGuard(runner.server, self.idle_timeout, self.max_connections)
        try:
            listener = await asyncio.get_running_loop().create_server(guard.protocol, self.host, self.port)
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self._guard, self._listener = runner, guard, listener
        if self.port == 0 and listener.sockets:  # the port the OS chose
            self.port = listener.sockets[0].getsockname()[1]

    @property
    def connection_count(self) -> int:
        return self._guard.count if self._guard is not None else 0

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            await self._runner.cleanup()  # (closes the open connections)
            self._runner = None
        if self._guard is not None:
            self._guard.close()
            self._guard = None
        if self._listener is not None:
            await self._listener.wait_closed()
            self._listener = None
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

    @web.middleware
    async def _track(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        guard = self._guard
        if guard is None:
            return await handler(request)
        guard.started(request)
        try:
            return await handler(request)
        finally:
            guard.finished(request)


def host_names(bound: str, extra: Iterable[str]) -> frozenset[str]:
    """The names a request's Host header may give: loopback's, the address the console is bound to (unless it is
    every interface's), and ``extra``."""
    names = set(LOOPBACK_NAMES) | {_bare(name) for name in extra}
    if bound not in ALL_INTERFACES:
        names.add(_bare(bound))
    return frozenset(names)


def _bare(name: str) -> str:
    return name.strip().strip("[]").lower()


def _host_name(header: str | None) -> str | None:
    if not header:
        return None
    try:
        return urlsplit("//" + header).hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return None


def _host_check(allowed: frozenset[str]) -> Middleware:
    """DNS rebinding: a page of attacker.example whose name then resolves to 127.0.0.1 is, for the browser, on the
    console's own origin (its Origin and Host headers agree), so only the Host name tells such a request apart. A
    name the console does not answer to is refused for every method, reads included."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get("Host")
        if _host_name(header) not in allowed:
            error = (f"Host {header!r} is not a name of this console (it answers to {', '.join(sorted(allowed))}); "
                     "refused against DNS rebinding: add a name with `pocketmq console --allow-host NAME` "
                     "(`pocketmq dev --console-allow-host NAME`)")
            return web.json_response({"error": error, "code": None}, status=403)
        return await handler(request)

    return check


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
    # allow_nan=False: a NaN or infinity a handler let through fails here (a JSON error the page shows) rather
    # than going out as a bare NaN, which no browser's JSON parser reads.
    return json.dumps(obj, default=str, allow_nan=False)
