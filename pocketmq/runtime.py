"""Event-loop choice: uvloop where it is installed (the design card's runtime), asyncio's loop otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def loop_factory():
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, Any]) -> Any:
    """asyncio.run on uvloop when available."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
