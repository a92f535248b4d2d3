"""mqadmin's commands as `pocketmq <command>`, one small module per command group."""

from __future__ import annotations

from typing import Any

from . import cluster, group, message, topic, trace


def add_admin_commands(sub: Any) -> None:
    for module in (topic, cluster, group, message, trace):
        module.add(sub)
