"""ConsumeMessageService (what the pull side hands pulled messages to) and ConsumeExecutor, its bounded pool.

RocketMQ runs consume requests on a fixed pool of ``consumeThreadMax`` threads fed by an unbounded queue.
ConsumeExecutor is the same shape on asyncio: ``size`` worker tasks take jobs from an unbounded queue, so at
most ``size`` listener calls run at once. Async listeners run on the workers themselves; plain functions run
on as many threads (``run_sync``, ``ListenerThreads``), so a blocking listener never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Protocol, TypeVar

from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue

from .listener_threads import ListenerThreads
from .process_queue import ProcessQueue

log = logging.getLogger(__name__)
T = TypeVar("T")


def cancelled_here() -> bool:
    """Whether the running task itself is being cancelled (``Task.cancel()`` was called on it).

    A listener can raise ``asyncio.CancelledError`` without anyone cancelling the consumer: it awaited a
    future or task that something else cancelled. RocketMQ's consume threads catch Throwable, so that is a
    failed listener call like any other; only a cancellation of the worker (shutdown) must propagate.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class ConsumeMessageService(Protocol):
    def start(self) -> None: ...

    async def shutdown(self, await_termination: float, spare: Collection[asyncio.Task[Any]] = ()) -> None: ...

    def submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None: ...


class ConsumeExecutor:
    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: collections.deque[tuple[Callable[..., Awaitable[None]], tuple[Any, ...]]] = collections.deque()
        self._idle: list[asyncio.Future[None]] = []  # a parked worker's wake-up, one per idle worker
        self._waking = False  # a worker was woken and has not taken a job yet
        self._workers: list[asyncio.Task[None]] = []
        self._busy = 0
        self._threads: ListenerThreads | None = None
        self._closed = False

    def start(self) -> None:
        self._closed = False
        loop = asyncio.get_running_loop()
        self._workers = [loop.create_task(self._work(), name=f"{self.name}-{i}") for i in range(self.size)]

    def submit(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Queue ``await fn(*args)``. One idle worker is woken, not one per job: a pull hands over 32 jobs at
        once, and waking 20 workers for jobs the first one finishes without suspending is wasted work.
        A worker that takes a job while more wait wakes the next one (in ``_work``), so a listener that does
        suspend still has the pool's other workers running the jobs behind it."""
        self.submit_all([(fn, args)])

    def submit_all(self, jobs: list[tuple[Callable[..., Awaitable[None]], tuple[Any, ...]]]) -> None:
        """submit() for each ``(fn, args)`` of a pull's jobs, in one call."""
        self._jobs.extend(jobs)
        if jobs and not self._waking:
            self._wake_one()

    def _wake_one(self) -> None:
        while self._idle:
            waiter = self._idle.pop()
            if not waiter.done():
                waiter.set_result(None)
                self._waking = True
                return

    @property
    def queued(self) -> int:
        return len(self._jobs)

    @property
    def active(self) -> int:
        return self._busy

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking listener on the pool's threads (started as needed)."""
        result: T = await self.call_sync(fn, *args)
        return result

    def call_sync(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """run_sync's future itself: done when the thread has returned (or the call was dropped unstarted at
        shutdown), which is what a caller that must outlive its own cancellation waits on."""
        if self._threads is None:
            self._threads = ListenerThreads(self.size, self.name)
        return self._threads.call(fn, args)

    async def _work(self) -> None:
        jobs = self._jobs
        loop = asyncio.get_running_loop()
        while True:
            if not jobs:
                if self._closed:
                    return  # a worker shutdown spared (its listener called shutdown) ends with its job
                waiter = loop.create_future()
                self._idle.append(waiter)
                try:
                    await waiter
                finally:
                    self._waking = False  # (a cancelled worker's waiter is done too: _wake_one skips it)
                continue
            fn, args = jobs.popleft()
            if jobs and not self._waking:
                self._wake_one()
            self._busy += 1
            try:
                await fn(*args)
            except Exception:
                log.exception("%s: consume request failed", self.name)
            except asyncio.CancelledError:
                if cancelled_here():
                    raise
                # Not this worker's cancellation: letting it end the task would shrink the pool for good.
                log.exception("%s: consume request failed", self.name)
            finally:
                self._busy -= 1

    async def shutdown(self, await_termination: float, spare: Collection[asyncio.Task[Any]] = ()) -> None:
        """Let queued and running jobs finish for up to ``await_termination`` seconds, then cancel the rest.

        Workers in ``spare`` are not waited for nor cancelled: a listener that called the consumer's shutdown()
        runs on one, and waits for this to return. It finishes its job and ends (nothing is queued any more).
        """
        workers, self._workers = self._workers, []
        spared = [w for w in workers if w in spare]
        if await_termination > 0:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + await_termination
            def unfinished() -> bool:  # (the spared ones' jobs, and what only they could run, never finish)
                return self._busy > len(spared) or bool(self._jobs and len(spared) < len(workers))

            while unfinished() and loop.time() < deadline:
                await asyncio.sleep(0.01)
        self._closed = True
        self._jobs.clear()
        workers = [w for w in workers if w not in spared]
        for w in workers:
            w.cancel()
        if workers:
            # (wait, not await each: a cancellation of this caller meanwhile must reach it, not pass for a worker's)
            await asyncio.wait(workers)
            for w in workers:
                if not w.cancelled() and w.exception() is not None:
                    log.warning("consume worker %s failed", w.get_name(), exc_info=w.exception())
        self._idle.clear()
        if self._threads is not None:
            # Threads still inside a listener finish on their own; nobody waits for them.
            self._threads.shutdown()
            self._threads = None
