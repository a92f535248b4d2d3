"""ArrivalInbox: the store's dispatcher thread reports new messages here, and the event loop takes them in batches.

Both long-polling services (parked pulls and parked pops) need the same hand-over: the dispatcher appends under a
lock and schedules one drain on the loop for however many arrivals come before it runs (a call_soon_threadsafe per
message would wake the loop once a message); the loop then takes the whole list at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ArrivalInbox(Generic[T]):
    """``put`` from any thread; ``drain(items)`` runs on ``loop`` (set by the service's start, None when stopped:
    arrivals then wait for the next start, as a stopped service answers nobody)."""

    def __init__(self, drain: Callable[[list[T]], None]) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._drain = drain
        self._items: list[T] = []
        self._lock = threading.Lock()
        self._scheduled = False

    def put(self, item: T) -> None:
        with self._lock:
            self._items.append(item)
            if self._scheduled:
                return
            self._scheduled = True
        loop = self.loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._run)
        except RuntimeError:  # the loop is closed: the broker is shutting down
            pass

    def _run(self) -> None:
        with self._lock:
            items, self._items = self._items, []
            self._scheduled = False
        self._drain(items)
