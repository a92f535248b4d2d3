"""The web console and /metrics (docs/console.md): RocketMQ Dashboard's pages read through MQAdminExt, the
store drawn byte by byte for teaching, and RocketMQ 5.1's broker metrics in Prometheus' format.

Needs the `console` extra (aiohttp, prometheus_client)."""

from .server import ConsoleServer

__all__ = ["ConsoleServer"]
