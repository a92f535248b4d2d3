"""ListenerThreads: the threads a push consumer runs plain-function listeners on (RocketMQ's consumeExecutor).

At most ``size`` threads, started as the work needs them, take listener calls from one queue; each call's
answer reaches the event loop as an asyncio future. Two things keep a call's round trip cheap where a
``ThreadPoolExecutor`` behind ``run_in_executor`` is not (each of its calls has its own concurrent future,
asyncio wrapper and wake-up of the loop, and a sleeping thread woken per call):

- A thread that finishes a call takes the next queued one without sleeping, and a sleeping thread is woken
  only when no other is on its way to the queue: one wake-up for a run of calls a single thread keeps up with.
  A thread that takes a call while more wait wakes (or starts) the next one, so a listener that blocks still
  has the pool's other threads running the calls behind it, up to ``size`` at once.
- Answers are handed to the loop together: a thread schedules one drain of them unless one is already due.

The threads are daemon threads: a process that exits without shutting its consumer down does not wait for a
listener still running (its messages were not acknowledged, so the broker delivers them again).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable
from typing import Any

_Job = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]


class ListenerThreads:
    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._cond = threading.Condition(threading.Lock())
        self._jobs: collections.deque[_Job] = collections.deque()
        self._threads = 0  # started and not yet ended
        self._started = 0  # (for the threads' names)
        self._sleeping = 0
        self._waking = False  # a thread was woken or started and has not taken a call yet
        self._returning = 0  # threads whose call has returned, on their way back to the queue
        self._stopped = False
        self._answers_lock = threading.Lock()
        self._answers: collections.deque[tuple[asyncio.Future[Any], bool, Any]] = collections.deque()
        self._drain_due = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> asyncio.Future[Any]:
        """``fn(*args)`` on one of the threads; the future has its result or exception. Cancelling the future
        does not stop a call under way (as with an executor): its answer is then dropped."""
        loop = self._loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._cond:
            if self._stopped:
                raise RuntimeError(f"{self.name}: the listener threads are shut down")
            self._jobs.append((fn, args, fut))
            if not self._waking and not self._returning:
                self._wake_or_start()
        return fut

    def _wake_or_start(self) -> None:
        # (under the lock) One more thread towards the queue: a sleeping one, else a new one up to the size.
        if self._sleeping:
            self._waking = True
            self._cond.notify()
        elif self._threads < self.size:
            self._waking = True
            self._threads += 1
            self._started += 1
            threading.Thread(target=self._run, name=f"{self.name}_{self._started}", daemon=True).start()

    def _run(self) -> None:
        cond, jobs = self._cond, self._jobs
        returning = False
        while True:
            with cond:
                if returning:
                    self._returning -= 1
                while not jobs and not self._stopped:
                    self._sleeping += 1
                    cond.wait()
                    self._sleeping -= 1
                self._waking = False
                if not jobs:  # (stopped)
                    self._threads -= 1
                    return
                fn, args, fut = jobs.popleft()
                if jobs and not self._returning:
                    self._wake_or_start()
            try:
                answer, ok = fn(*args), True
            except BaseException as e:  # (an executor hands back whatever the call raised, too)
                answer, ok = e, False
            with cond:  # (before the answer: the call it prompts finds this thread on its way)
                self._returning += 1
            returning = True
            self._answer(fut, ok, answer)

    def _answer(self, fut: asyncio.Future[Any], ok: bool, answer: Any) -> None:
        with self._answers_lock:
            self._answers.append((fut, ok, answer))
            if self._drain_due:
                return
            self._drain_due = True
        loop = self._loop
        try:
            if loop is not None:
                loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: nobody awaits the answer any more
            pass

    def _drain(self) -> None:
        with self._answers_lock:
            answers = list(self._answers)
            self._answers.clear()
            self._drain_due = False
        for fut, ok, answer in answers:
            if fut.done():
                continue  # (its awaiter was cancelled)
            if ok:
                fut.set_result(answer)
            elif isinstance(answer, StopIteration):  # (a future refuses it: it would end the awaiting coroutine)
                fut.set_exception(RuntimeError(f"the listener raised {answer!r}"))
            else:
                fut.set_exception(answer)

    def shutdown(self) -> None:
        """Cancel the calls not yet taken and let the threads end; a call under way finishes on its own."""
        with self._cond:
            self._stopped = True
            pending = list(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
        for _, _, fut in pending:
            fut.cancel()
