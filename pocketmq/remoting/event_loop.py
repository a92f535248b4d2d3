"""Event-loop choice: uvloop where it is installed (the design card's runtime), asyncio's loop otherwise; and
running a loop in a thread of its own for others (the in-process clusters, the gRPC endpoint).

It lives in remoting, the lowest asyncio layer, so that a client-only process (a Spark worker, an
application) can make the same choice as the servers without importing the composition package.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """A callable making a new event loop, for ``asyncio.Runner(loop_factory=...)``."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def serve_forever(loop: asyncio.AbstractEventLoop) -> None:
    """The body of a thread that runs ``loop`` for others until ``loop.stop()``; then what ``asyncio.run`` does
    after its main coroutine: the tasks still pending cancelled and run to their end, async generators and the
    default executor shut down, the loop closed. (Stopped and closed at once instead, such tasks are destroyed
    pending, their cleanup never runs, and the callbacks still coming from other threads find a closed loop.)"""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            _cancel_all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    # (asyncio.runners._cancel_all_tasks, which is private)
    pending = asyncio.all_tasks(loop)
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in pending:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {"message": "unhandled exception while its loop shut down", "exception": task.exception(),
                 "task": task})


class LoopCall(Generic[T]):
    """``coro`` run as a task on another thread's event loop (``loop``), its outcome in ``future``.

    Unlike ``asyncio.run_coroutine_threadsafe``, whose future, once cancelled, is done at once while its task only
    begins to unwind (so nobody can wait for that, and a loop stopped right after cuts it off), a caller
    interrupted here (Ctrl-C, its own timeout or cancellation) can cancel the task, or leave it to finish, and
    still wait for its end.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> None:
        self.loop = loop
        self.future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._task: asyncio.Task[T] | None = None
        self._cancel_requested = False
        loop.call_soon_threadsafe(self._create, coro)

    def _create(self, coro: Coroutine[Any, Any, T]) -> None:  # (on the loop's thread, as _cancel_task)
        if self._cancel_requested:
            coro.close()
            self._cancel_future()
            return
        self._task = self.loop.create_task(coro)
        self._task.add_done_callback(self._copy_outcome)

    def _cancel_future(self) -> None:
        self.future.cancel()
        # (what wakes concurrent.futures.wait: cancel() alone does not)
        self.future.set_running_or_notify_cancel()

    def _copy_outcome(self, task: asyncio.Task[T]) -> None:
        if task.cancelled():
            self._cancel_future()
        elif self.future.set_running_or_notify_cancel():
            exc = task.exception()
            if exc is not None:
                self.future.set_exception(exc)
            else:
                self.future.set_result(task.result())

    def cancel(self) -> None:
        """Cancel the task (from any thread); its own except/finally blocks then run on its loop."""
        with contextlib.suppress(RuntimeError):  # (the loop closed: nothing runs there any more)
            self.loop.call_soon_threadsafe(self._cancel_task)

    def _cancel_task(self) -> None:
        self._cancel_requested = True
        if self._task is not None:
            self._task.cancel()

    def wait(self, timeout: float | None, grace: float, cancel: bool = True) -> T:
        """The outcome, for a thread not running an event loop. Interrupted (KeyboardInterrupt, or ``timeout``
        passed), the task is cancelled (``cancel``) or left to finish, and waited for up to ``grace`` seconds more
        before the interruption goes on."""
        try:
            return self.future.result(timeout)
        except BaseException:
            if not self.future.done():
                if cancel:
                    self.cancel()
                concurrent.futures.wait([self.future], grace)
            raise

    async def result(self, grace: float, cancel: bool = True) -> T:
        """The outcome, for a coroutine on another loop; cancelled, as ``wait`` when interrupted."""
        waiter = asyncio.wrap_future(self.future)
        try:
            return await asyncio.shield(waiter)
        except BaseException:
            if not waiter.done():
                if cancel:
                    self.cancel()
                await asyncio.wait([waiter], timeout=grace)
            raise
