"""LogPointTasks: work the dispatcher must do at a point of the commit log (ReputMessageService.run_at).

Deleting a topic goes through here: its queues must not be destroyed while records put before the deletion are
still to be dispatched (the dispatcher would create them again from those records, with their old queue offsets,
and then skip the new records the producer was told went to offsets 0, 1...), nor after records put since (they
belong to the new queues). So each task waits until dispatch has reached its offset, and dispatch stops there
until the task has run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class LogPointTasks:
    """(offset, fn, future) in offset order; ``add`` from any thread, the rest on the dispatching one."""

    def __init__(self) -> None:
        self._tasks: list[tuple[int, Callable[[], Any], Future]] = []
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._tasks)

    def add(self, offset: int, fn: Callable[[], Any]) -> Future:
        """A Future of ``fn``'s result, run once dispatch reaches ``offset``. Callers pass offsets in increasing
        order (taken under the put lock)."""
        fut: Future = Future()
        with self._lock:
            self._tasks.append((offset, fn, fut))
        return fut

    def run_due(self, reached: int) -> int | None:
        """Run the tasks whose offset dispatch has ``reached``; the offset of the next one, or None."""
        while True:
            with self._lock:
                if not self._tasks:
                    return None
                offset, fn, fut = self._tasks[0]
                if reached < offset:
                    return offset
                self._tasks.pop(0)
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except Exception as e:  # the caller sees it
                    fut.set_exception(e)

    def fail_all(self) -> None:
        with self._lock:
            tasks, self._tasks = self._tasks, []
        for _offset, _fn, fut in tasks:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(RuntimeError("the dispatcher stopped before it got there"))
