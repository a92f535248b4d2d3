"""Event-loop choice: uvloop where it is installed (the design card's runtime), asyncio's loop otherwise.

It lives in remoting, the lowest asyncio layer, so that a client-only process (a Spark worker, an
application) can make the same choice as the servers without importing the composition package.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """A callable making a new event loop, for ``asyncio.Runner(loop_factory=...)``."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop
