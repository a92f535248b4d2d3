"""How many storage-page reads run at once. Each holds a worker thread and maps store files, and `pocketmq dev`
serves its broker from the same process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

MAX_STORAGE_REQUESTS = 2


class StorageBusy(Exception):
    """Every storage slot is taken."""


class StorageReads:
    """At most ``limit`` storage reads at once (pocketmq/console/api.py's storage routes run through it)."""

    def __init__(self, limit: int = MAX_STORAGE_REQUESTS) -> None:
        self.limit = limit
        self._running = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One of the reads allowed at once. Over the limit a request is refused rather than queued: a browser
        that gave up must not leave reads waiting behind it."""
        if self._running >= self.limit:
            raise StorageBusy(f"the storage page is already reading the store for {self._running} requests (its "
                              "limit); try again when they have finished")
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1

    async def run(self, read: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        """``read(*args)`` on a worker thread, in a slot held until the thread is done, even when the request is
        cancelled first (the thread cannot be stopped, so it still counts)."""
        async def held() -> dict[str, Any]:
            async with self.slot():
                return await asyncio.to_thread(read, *args)

        task = asyncio.ensure_future(held())
        task.add_done_callback(_retrieve)
        return await asyncio.shield(task)


def _retrieve(task: asyncio.Future[Any]) -> None:
    # A read whose request was cancelled has nobody to take its error: take it here, so it is not logged as lost.
    if not task.cancelled():
        task.exception()
