"""mqadmin's commands as `pocketmq <command>`, one small module per command group."""

from __future__ import annotations

from typing import Any

from . import cluster, group, message, topic


def add_admin_commands(sub: Any) -> None:
    for module in (topic, cluster, group, message):
        module.add(sub)
