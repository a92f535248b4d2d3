"""MQClientManager: hands out one MQClientInstance per client id and event loop."""

from __future__ import annotations

import asyncio
import threading

from ..client_config import ClientConfig
from .mq_client_instance import MQClientInstance


class MQClientManager:
    """One MQClientInstance per client id, event loop and wire protocol.

    RocketMQ keeps one per client id per process; asyncio connections belong to one loop, so a client used
    from two loops (e.g. a SyncProducer's private loop and the application's) gets one instance in each.
    """

    _singleton: MQClientManager | None = None
    _singleton_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[tuple[str, asyncio.AbstractEventLoop, str], MQClientInstance] = {}

    @classmethod
    def get_instance(cls) -> MQClientManager:
        with cls._singleton_lock:
            if cls._singleton is None:
                cls._singleton = MQClientManager()
            return cls._singleton

    def get_or_create_mq_client_instance(self, config: ClientConfig) -> MQClientInstance:
        """Must be called from the event loop the instance will run on."""
        loop = asyncio.get_running_loop()
        client_id = config.build_mq_client_id()
        key = (client_id, loop, config.protocol)
        with self._lock:
            for k in [k for k in self._table if k[1].is_closed()]:
                del self._table[k]  # left behind by a loop closed without shutting its clients down
            instance = self._table.get(key)
            if instance is None or instance.stopped:
                instance = MQClientInstance(config, client_id, on_shutdown=lambda: self._remove(key, instance))
                self._table[key] = instance
            return instance

    def _remove(self, key: tuple[str, asyncio.AbstractEventLoop, str], instance: MQClientInstance | None) -> None:
        with self._lock:
            if self._table.get(key) is instance:
                del self._table[key]

    def instances(self) -> list[MQClientInstance]:
        with self._lock:
            return list(self._table.values())
