"""Tracked background work for the servers and the clients: tasks, timers and periodic jobs, all cancelled at
shutdown. It lives beside the transport because both sides (broker, client) need it and neither may import
the other."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def run_whole(step: Awaitable[T]) -> T:
    """Await ``step`` to its end even when the caller is cancelled meanwhile, then let the cancellation through.

    For a step whose half-done state a restart would misread: a write followed by the progress that records it
    (shutdown cancels the background jobs wherever they are, then persists their progress). Cut between the two,
    the next broker on the store writes the same thing again.
    """
    task = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                pass  # cancelled again (a loop shutting down cancels what is left): the step still ends first
        raise


class TaskTracker:
    """Keeps a reference to every task it starts (so none is garbage-collected mid-flight) and logs failures."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._closed = False
        self.log = logger or logging.getLogger(__name__)

    @property
    def closed(self) -> bool:
        return self._closed

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
            self.log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    def schedule(self, delay: float, fn: Callable[[], object]) -> None:
        """Call ``fn`` in ``delay`` seconds unless the tracker is closed by then."""
        if self._closed:
            return

        def fire() -> None:
            self._timers.discard(timer)
            if not self._closed:
                fn()

        timer = asyncio.get_running_loop().call_later(delay, fire)
        self._timers.add(timer)

    def periodic(
        self,
        name: str,
        interval: float,
        job: Callable[[], Awaitable[object] | object],
        initial_delay: float | None = None,
        expected: tuple[type[Exception], ...] = (),
    ) -> None:
        """Run ``job`` every ``interval`` seconds (first after ``initial_delay``, default one interval).

        A failing run is logged and the schedule goes on, as RocketMQ's scheduled executors do; ``expected``
        failures (a peer that is down, say) in one line, others with their traceback.
        """
        delay = interval if initial_delay is None else initial_delay
        self.spawn(self._periodic(name, interval, job, delay, expected), name)

    async def close(self, timeout: float | None = None) -> int:
        """Cancel everything and wait up to ``timeout`` seconds for it to finish; the number still running."""
        self._closed = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if not tasks:
            return 0
        _, stuck = await asyncio.wait(tasks, timeout=timeout)
        return len(stuck)

    async def _periodic(
        self,
        name: str,
        interval: float,
        job: Callable[[], Awaitable[object] | object],
        initial_delay: float,
        expected: tuple[type[Exception], ...],
    ) -> None:
        await asyncio.sleep(initial_delay)
        while True:
            try:
                result = job()
                if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                    await result
            except asyncio.CancelledError:
                raise
            except expected as e:
                self.log.warning("periodic job %s failed: %s", name, e)
            except Exception:
                self.log.exception("periodic job %s failed", name)
            await asyncio.sleep(interval)
