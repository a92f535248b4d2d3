"""NamesrvController: wires the route tables, the request processor, the server and the expiry timer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from pocketmq.remoting.acl.validator import PlainAccessValidator
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

from .config import NamesrvConfig
from .kv_config_manager import KVConfigManager
from .processor import DefaultRequestProcessor
from .route_info_manager import RouteInfoManager

log = logging.getLogger(__name__)


class NamesrvController:
    """A name server. Name servers are independent: brokers register with each, they never talk together."""

    def __init__(
        self, config: NamesrvConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config if config is not None else NamesrvConfig()
        self.route_info_manager = RouteInfoManager(
            self.config.broker_channel_expired_time, clock, self.config.delete_topic_with_broker_registration
        )
        self.kv_config_manager = KVConfigManager(self.config.kv_config_path)
        self.processor = DefaultRequestProcessor(
            self.route_info_manager, self.config.max_frame_size, self.kv_config_manager, self.config
        )
        self.remoting_server = RemotingServer(
            self.config.listen_host, self.config.listen_port, max_frame_size=self.config.max_frame_size,
            max_inflight=self.config.server_max_inflight_requests, limits=self.config.connection_limits,
        )
        self.processor.register_to(self.remoting_server)
        if self.config.acl_file is not None:
            self.remoting_server.request_validator = PlainAccessValidator.for_namesrv(self.config.acl_file)
            log.info("access control on: route changes need an admin account of %s", self.config.acl_file)
        self.remoting_server.on_channel_close(self._on_channel_close)
        self._scan_task: asyncio.Task[None] | None = None

    @property
    def address(self) -> str:
        """``"host:port"`` as bound (valid after ``start()``)."""
        return self.remoting_server.address

    @property
    def port(self) -> int:
        return self.remoting_server.port

    async def start(self) -> None:
        self.kv_config_manager.load()
        await self.remoting_server.start()
        self._scan_task = asyncio.create_task(self._scan_loop(), name=f"namesrv-scan-{self.port}")
        log.info("name server started on %s", self.address)

    async def shutdown(self) -> None:
        task, self._scan_task = self._scan_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.remoting_server.stop()
        log.info("name server on %s stopped", self.address)

    async def __aenter__(self) -> NamesrvController:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def scan_not_active_broker(self) -> list[str]:
        """One expiry pass: drop silent brokers and close their connections; returns their addresses."""
        expired = self.route_info_manager.scan_not_active_broker()
        for live in expired.values():
            if isinstance(live.channel, Channel):
                live.channel.close()
        return list(expired)

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_not_active_broker_interval)  # (UPDATE_NAMESRV_CONFIG may change it)
            try:
                self.scan_not_active_broker()
            except Exception:
                log.exception("scan for inactive brokers failed")

    def _on_channel_close(self, channel: Channel) -> None:
        self.route_info_manager.on_channel_destroy(channel, channel.remote_address)
