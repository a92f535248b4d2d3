"""The brokers running in the console's own process (`pocketmq dev`, tests): their statistics and store paths
are read directly; every other broker only through MQAdminExt."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class LocalBrokers:
    def __init__(self, controllers: Iterable[Any] = ()) -> None:
        self.controllers = list(controllers)  # BrokerController

    def by_address(self, addr: str) -> Any | None:
        return next((c for c in self.controllers if c.address == addr), None)

    def by_name(self, name: str) -> Any | None:
        return next((c for c in self.controllers if c.broker_config.broker_name == name), None)

    def store_roots(self) -> dict[str, str]:
        """broker name -> its store's root folder."""
        return {c.broker_config.broker_name: c.broker_config.store_root for c in self.controllers}
