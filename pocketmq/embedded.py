"""A whole cluster (one name server, one broker) in-process, on free ports, in a folder of its own.

    async with EmbeddedCluster(tmp_path) as cluster:
        producer = Producer("group", cluster.namesrv_addr)

With ``grpc=True`` the cluster also serves RocketMQ 5's gRPC endpoint (``cluster.grpc_endpoint``, for the 5.x
SDKs), on a free port, plaintext and TLS alike.

EmbeddedCluster runs on the caller's event loop. ThreadedCluster runs the same cluster on an event loop
of its own in a background thread, so synchronous tests and tests on any other loop can use it too
(clients only ever reach it over sockets); the pytest fixture uses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import Any

from pocketmq.broker.broker_controller import BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.event_loop import LoopCall, loop_factory, serve_forever
from pocketmq.remoting.tasks import run_whole

# Small files: a test cluster starts in milliseconds, and a suite of many tests does not fill the disk (pytest
# keeps the last three runs' temp folders). The commit log and index files reserve their whole size on disk when
# made (a full disk is then a refused put, not a SIGBUS): about 6.5 MiB a store with these, 21 MB with a 16 MiB log
# and the broker's index sizes. A commit-log file still takes the largest message (4 MiB of body, 32 KiB of
# properties); more keys than an index file holds go on into the next one.
TEST_STORE_DEFAULTS: dict[str, Any] = {
    "mapped_file_size_commit_log": 6 * 1024 * 1024,
    "mapped_file_size_consume_queue": 30_000 * 20,
    "max_hash_slot_num": 5_000,
    "max_index_num": 20_000,
}
# How long a ThreadedCluster interrupted in start() or stop() (Ctrl-C, a timeout) waits for the start's undoing or the
# stop to finish, and then for its loop's thread to end: the broker's shutdown persists and closes its store.
_GRACE = 30.0


class EmbeddedCluster:
    """Name server + broker on 127.0.0.1, ports chosen by the OS, store under `root`/store.

    Keyword arguments are BrokerConfig fields (snake_case) and override the test defaults, e.g.
    ``EmbeddedCluster(tmp_path, auto_create_topic_enable=False)``. With ``acl_enable=True`` the name server checks
    the broker's ACL file too, and the broker signs its registrations with ``access_key``/``secret_key``.
    ``namesrv_addr`` joins the brokers to a name server that runs elsewhere (another pocketmq, or Apache
    RocketMQ's with ``namesrv_protocol="rocketmq"``) instead of starting one.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        brokers: int = 1,
        namesrv_addr: str | None = None,
        grpc: bool = False,
        proxy_overrides: dict[str, Any] | None = None,
        **broker_overrides: Any,
    ) -> None:
        self.root = os.fspath(root)
        self.proxy_overrides = dict(proxy_overrides or {})  # ProxyConfig fields (milliseconds intervals in tests)
        self.external_namesrv_addr = namesrv_addr
        self.broker_count = brokers
        self.grpc = grpc
        self.broker_overrides = broker_overrides
        self.namesrv: NamesrvController | None = None
        self.broker: BrokerController | None = None
        self.brokers: list[BrokerController] = []  # broker-a, broker-b, ... (one cluster); broker is the first
        self.proxy: Any = None  # pocketmq.proxy's GrpcProxy, with grpc=True

    @property
    def namesrv_addr(self) -> str:
        if self.external_namesrv_addr is not None:
            return self.external_namesrv_addr
        assert self.namesrv is not None, "the cluster is not started"
        return self.namesrv.address

    @property
    def broker_addr(self) -> str:
        assert self.broker is not None, "the cluster is not started"
        return self.broker.address

    @property
    def grpc_endpoint(self) -> str:
        """``host:port`` of the gRPC endpoint (MessagingService) the 5.x SDKs are given."""
        assert self.proxy is not None, "the cluster serves no gRPC endpoint (EmbeddedCluster(..., grpc=True))"
        return self.proxy.endpoint

    @property
    def store(self):
        assert self.broker is not None, "the cluster is not started"
        return self.broker.store

    def broker_config(self, index: int = 0, namesrv_addr: str | None = None) -> BrokerConfig:
        """The config of the ``index``-th broker: broker-a's store under root/store, the others' under
        root/store-<name>."""
        settings: dict[str, Any] = dict(TEST_STORE_DEFAULTS)
        store = "store" if index == 0 else f"store-broker-{chr(ord('a') + index)}"
        settings.update(listen_port=0, store_path_root_dir=os.path.join(self.root, store))
        if index > 0:
            settings["broker_name"] = f"broker-{chr(ord('a') + index)}"
        settings.update(self.broker_overrides)
        settings["namesrv_addr"] = namesrv_addr or self.namesrv_addr
        return BrokerConfig(**settings)

    async def start(self) -> EmbeddedCluster:
        """Returns once the broker has registered with the name server. Cut short (a failure, or cancelled: a
        timeout around it, Ctrl-C in a test's setup), it stops what it started before the exception goes on."""
        # (checked before anything starts; the address comes later)
        config = self.broker_config(namesrv_addr="127.0.0.1:9876")
        # A cluster started again after stop(): the servers of its last run are gone (brokers[0] was the stopped one).
        self.brokers, self.broker, self.proxy, self.namesrv = [], None, None, None
        acl_file = config.resolved_acl_file if config.acl_enable else None
        try:
            if self.external_namesrv_addr is None:
                self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, acl_file=acl_file))
                await self.namesrv.start()
            for i in range(self.broker_count):
                broker = BrokerController(self.broker_config(i))
                # Listed before its start: one cut short is shut down with the others (a no-op if its start
                # undid itself already).
                self.brokers.append(broker)
                await broker.start()
            self.broker = self.brokers[0]
            if self.grpc:
                await self._start_proxy(config, acl_file)
        except BaseException:
            await run_whole(self.stop())
            raise
        return self

    async def _start_proxy(self, config: BrokerConfig, acl_file: str | None) -> None:
        # Imported here: a cluster without the endpoint never loads grpc.
        from pocketmq.proxy.config import ProxyConfig
        from pocketmq.proxy.proxy_startup import GrpcProxy

        # With ACL on, the endpoint checks its callers against the broker's accounts and signs its own requests with
        # the cluster's key pair, as a RocketMQ proxy beside such a cluster would.
        acl: dict[str, Any] = {}
        if acl_file is not None:
            acl = {"acl_file": acl_file, "access_key": config.access_key, "secret_key": config.secret_key}
        # Its requests to these brokers are handed to them in-process (local mode, unless
        # proxy_overrides={"proxy_mode": "cluster"}).
        local = {b.address: b.remoting_server for b in self.brokers}
        # Kept before its start, as the brokers are (stop() copes with one whose start undid itself).
        self.proxy = GrpcProxy(ProxyConfig(self.namesrv_addr, grpc_server_port=0, **acl, **self.proxy_overrides),
                               local)
        await self.proxy.start()

    async def stop(self) -> None:
        try:
            if self.proxy is not None:
                await self.proxy.stop()
            for b in self.brokers:
                await b.shutdown()
        finally:
            if self.namesrv is not None:
                await self.namesrv.shutdown()

    async def wait_dispatched(self, timeout: float = 10.0) -> bool:
        """Wait until every stored message is in the consume queues (so pulls see it), on every broker."""
        assert self.brokers, "the cluster is not started"
        for b in self.brokers:
            if not await asyncio.to_thread(b.store.wait_dispatched, timeout):
                return False
        return True

    async def wait_routed(self, topic: str, timeout: float = 10.0) -> bool:
        """Wait until the name server has a route for `topic`. A topic a send creates reaches the name server
        with the broker's next registration, a moment after the send is answered (as in RocketMQ); clients
        that look its route up (queries by key, pull consumers) need it there first. (This cluster's own name
        server only.)"""
        assert self.namesrv is not None, "the cluster has no name server of its own"
        table = self.namesrv.route_info_manager.topic_queue_table
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not table.get(topic):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    async def __aenter__(self) -> EmbeddedCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class ThreadedCluster:
    """EmbeddedCluster on its own event loop in a daemon thread; start() and stop() block."""

    def __init__(self, root: str | os.PathLike[str], **broker_overrides: Any) -> None:
        self.cluster = EmbeddedCluster(root, **broker_overrides)  # namesrv_addr= joins an outside name server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_addr(self) -> str:
        return self.cluster.broker_addr

    @property
    def grpc_endpoint(self) -> str:
        return self.cluster.grpc_endpoint

    @property
    def store(self):
        return self.cluster.store

    def _call(self, coro, timeout: float = 30.0, cancel: bool = True):
        """Run ``coro`` on the cluster's loop and wait for it. Interrupted (Ctrl-C, ``timeout``), the coroutine is
        cancelled (``cancel``: its own cleanup then runs) or left to finish, and waited for (up to _GRACE seconds)
        before the interruption goes on: the loop must not stop under it halfway, with the store's threads
        running and its lock held."""
        assert self._loop is not None
        return LoopCall(self._loop, coro).wait(timeout, _GRACE, cancel)

    def start(self, timeout: float = 30.0) -> ThreadedCluster:
        """Start the cluster and wait for it, up to ``timeout`` seconds; past it (or on Ctrl-C) the start is undone
        and TimeoutError (KeyboardInterrupt) raised."""
        loop = self._loop = loop_factory()()
        ready = threading.Event()
        loop.call_soon(ready.set)
        self._thread = threading.Thread(target=serve_forever, args=(loop,), name="pocketmq-cluster", daemon=True)
        self._thread.start()
        ready.wait()
        starting = LoopCall(loop, self.cluster.start())
        try:
            starting.wait(timeout, _GRACE)
        except BaseException:
            if starting.future.done():
                # Undone by itself already, or started after all as the interruption came: stop() again is a no-op
                # or what undoes it.
                with contextlib.suppress(Exception):
                    LoopCall(loop, self.cluster.stop()).wait(_GRACE, _GRACE, cancel=False)
            self._shutdown_loop()
            raise
        return self

    def stop(self) -> None:
        try:
            # Interrupted, the stop still finishes (up to _GRACE seconds): the store is closed, its lock released.
            self._call(self.cluster.stop(), cancel=False)
        finally:
            self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        # The loop's thread cancels what is still pending there, waits for it, and closes the loop (serve_forever).
        with contextlib.suppress(RuntimeError):  # (closed already: its thread ended)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(_GRACE)

    def wait_dispatched(self, timeout: float = 10.0) -> bool:
        """Every broker's stored messages in its consume queues (EmbeddedCluster.wait_dispatched)."""
        return self._call(self.cluster.wait_dispatched(timeout), timeout * len(self.cluster.brokers) + 5)

    def wait_routed(self, topic: str, timeout: float = 10.0) -> bool:
        return self._call(self.cluster.wait_routed(topic, timeout), timeout + 5)

    def __enter__(self) -> ThreadedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
