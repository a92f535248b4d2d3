"""Running the servers' main coroutine on the chosen event loop (see ``pocketmq.remoting.event_loop``)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any

from pocketmq.remoting.event_loop import loop_factory

__all__ = ["freeze_start_up_objects", "loop_factory", "run"]


def run(main: Coroutine[Any, Any, Any]) -> Any:
    """asyncio.run on uvloop when available."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def freeze_start_up_objects() -> None:
    """Take what a server's start created out of the cyclic collector's walks (gc.freeze), once it serves.

    A full collection walks every tracked object, and right after the start those are nearly all modules,
    classes, functions and configs that live as long as the process: in `pocketmq dev` one held the event loop
    thread for tens of milliseconds, and every send and pull that came meanwhile waited through it
    (bench/README.md, "The Java client's latency tail"). Frozen objects are never collected, and the start's
    garbage is frozen with them rather than collected first: in `pocketmq dev` that is under 200 objects, and
    finding them would be the same walk, before the server is ready. Objects made later are collected as before.
    For the server commands only: in a process that embeds a cluster, the heap is the application's.
    """
    gc.freeze()
