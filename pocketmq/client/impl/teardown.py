"""Teardown: a client's shutdown run as a task of its own, which the caller of ``shutdown()`` cannot cut short.

A shutdown is a sequence of awaits (stop the background work, persist offsets, UNREGISTER_CLIENT, close the client
instance), and the client looks stopped from its first step on. Run in the caller's task, a cancellation of the
caller (``asyncio.wait_for`` around it, a service's stop timeout, a consume worker cancelled by the very shutdown
its listener called) ended it half-way for good: the group still registered and heartbeating, the instance and
its sockets never closed, and every later ``shutdown()`` returning at once. As a task it always runs to its end;
each ``shutdown()`` waits for it through ``asyncio.shield``, so a cancelled caller leaves at once and a second
``shutdown()`` waits for the first one's teardown to finish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Teardown:
    def __init__(self, name: str) -> None:
        self.name = name
        self._task: asyncio.Task[None] | None = None
        # The tasks waiting in wait(): a consume worker whose listener called shutdown() is one, and the consume
        # pool's shutdown must not cancel it (it would cancel the wait for the shutdown, not the shutdown).
        self.waiters: set[asyncio.Task[Any]] = set()

    @property
    def active(self) -> bool:
        return self._task is not None

    def begin(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}-shutdown")
        self._task = task
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        if self._task is task:
            self._task = None
        if not task.cancelled() and task.exception() is not None:
            # (also raised to the callers still waiting; logged for the ones that were cancelled meanwhile)
            log.error("shutdown of %s failed", self.name, exc_info=task.exception())

    async def wait(self) -> None:
        """Wait for the teardown under way, if any, to finish; a cancellation of the caller does not stop it."""
        task = self._task
        if task is None:
            return
        caller = asyncio.current_task()
        if caller is None:
            await asyncio.shield(task)
            return
        self.waiters.add(caller)
        try:
            await asyncio.shield(task)
        finally:
            self.waiters.discard(caller)


async def undo_start(error: BaseException, begin_shutdown: Callable[[], None], teardown: Teardown) -> None:
    """What a start() that failed after registering does before it raises ``error``: its client's teardown begins;
    a failure waits for it (nothing runs once start() raises), a cancellation does not (the caller's
    ``wait_for(start(), t)`` would otherwise return seconds after t, the teardown's UNREGISTER_CLIENT to a broker
    that does not answer included). The teardown then ends in its own task, and a next start() waits for it."""
    begin_shutdown()
    if not isinstance(error, asyncio.CancelledError):
        await teardown.wait()
