"""PullMessageService: one queue of PullRequests per client instance, served in arrival order.

RebalanceImpl puts a PullRequest here for every queue a consumer takes; each pull's answer puts it back
(at once, or later under flow control or after an error). The service only hands each request to its
consumer, which sends the pull and returns at once, so one slow broker or a long-polling pull never holds up
the other queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from .pull_request import PullRequest

log = logging.getLogger(__name__)


class PullMessageService:
    def __init__(self, dispatch: Callable[[PullRequest], None], name: str = "PullMessageService") -> None:
        """``dispatch(request)`` starts the pull of ``request`` for its consumer group (and must not block)."""
        self._dispatch = dispatch
        self._name = name
        self._queue: asyncio.Queue[PullRequest] = asyncio.Queue()
        self._timers: set[asyncio.TimerHandle] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def shutdown(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        self._queue.put_nowait(request)

    def execute_pull_request_later(self, request: PullRequest, delay: float) -> None:
        if self._task is None:
            return  # shut down: the request dies with the service
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.discard(timer)
            self.execute_pull_request_immediately(request)

        timer = loop.call_later(delay, fire)
        self._timers.add(timer)

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def _run(self) -> None:
        while True:
            request = await self._queue.get()
            try:
                self._dispatch(request)
            except Exception:
                log.exception("pull of %s for %s failed to start", request.message_queue, request.consumer_group)
