"""Running the servers' main coroutine on the chosen event loop (see ``pocketmq.remoting.event_loop``)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from pocketmq.remoting.event_loop import loop_factory

__all__ = ["loop_factory", "run"]


def run(main: Coroutine[Any, Any, Any]) -> Any:
    """asyncio.run on uvloop when available."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
