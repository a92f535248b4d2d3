"""Tracked background tasks: fire-and-forget work and periodic jobs, all cancelled at shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger("broker")


class TaskTracker:
    """Keeps a reference to every task it starts (so none is garbage-collected mid-flight) and logs failures."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any] | None:
        if self._closed:
            coro.close()
            return None
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    def periodic(
        self,
        name: str,
        interval: float,
        job: Callable[[], Awaitable[object] | object],
        initial_delay: float | None = None,
    ) -> None:
        """Run ``job`` every ``interval`` seconds (first after ``initial_delay``, default one interval).

        A failing run is logged and the schedule goes on, as RocketMQ's scheduled executors do.
        """
        self.spawn(_periodic(name, interval, job, interval if initial_delay is None else initial_delay), name)

    async def close(self) -> None:
        """Cancel everything and wait for it to finish."""
        self._closed = True
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _periodic(
    name: str, interval: float, job: Callable[[], Awaitable[object] | object], initial_delay: float
) -> None:
    await asyncio.sleep(initial_delay)
    while True:
        try:
            result = job()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("periodic job %s failed", name)
        await asyncio.sleep(interval)
