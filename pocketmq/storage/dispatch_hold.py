"""A writer that left the dispatcher too far behind waits for it (DefaultMessageStore's dispatch hold): blocking
in put_message, or through a Future a nowait put hands back (_dispatch_hold_target says why)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from .reput_service import ReputMessageService
from .results import PutMessageResult

_dispatch_waiter_pool: ThreadPoolExecutor | None = None
_dispatch_waiter_lock = threading.Lock()


def _dispatch_waiters() -> ThreadPoolExecutor:
    """The threads that wait for a dispatcher on behalf of writers that must not block (put_message_nowait):
    one pool for the process, made on first use, idle between holds."""
    global _dispatch_waiter_pool
    with _dispatch_waiter_lock:
        if _dispatch_waiter_pool is None:
            _dispatch_waiter_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dispatch-hold")
        return _dispatch_waiter_pool


class DispatchHold:
    """The dispatch hold of DefaultMessageStore's puts (a mixin: the state is the store's)."""

    reput_service: ReputMessageService
    dispatch_hold_timeout: float
    _max_dispatch_lag: int
    _pending_hold: Future | None

    def _hold_for_dispatch(self, result: PutMessageResult) -> None:
        """Block until the dispatcher is back within reach of this put, if it fell behind (_dispatch_hold_target),
        for at most dispatch_hold_timeout. The synchronous put's way; put_message_nowait hands the caller a
        Future instead."""
        target = self._dispatch_hold_target(result)
        if target is not None:
            self.reput_service.wait_caught_up(target, self.dispatch_hold_timeout)

    def _dispatch_hold_target(self, result: PutMessageResult) -> int | None:
        """The offset the dispatcher must reach before this put's writer goes on: None when it is within
        max_dispatch_lag_bytes of the put's end, else half that limit behind the end.

        The dispatcher is a thread of this process: a writer that never waits keeps the GIL, and the
        dispatcher gets it back only at switch intervals (5 ms), or later when other threads take their
        turn first, so under sustained puts its lag grows although it dispatches faster than the writer
        appends. A writer that waits (blocked in put_message, or an event loop with nothing else to do
        while its sender awaits the hold) hands it the GIL at once; it then drains in about a millisecond.
        """
        limit = self._max_dispatch_lag
        if limit <= 0:
            return None
        ar = result.append_result
        end = ar.wrote_offset + ar.wrote_bytes  # type: ignore[union-attr]  # an ok result has its append result
        reput = self.reput_service
        if end - reput.reput_from_offset > limit and reput.running:
            return end - limit // 2
        return None

    def _dispatch_hold(self, target: int) -> Future | None:
        """_hold_for_dispatch without blocking: a Future done once the dispatcher reached ``target`` (or after
        dispatch_hold_timeout). Writers held at the same time share one Future."""
        held = self._pending_hold
        if held is not None and not held.done():
            return held
        reput = self.reput_service
        reput.hurry()  # dispatching starts now, not when a waiter thread gets the GIL
        try:
            held = _dispatch_waiters().submit(reput.wait_caught_up, target, self.dispatch_hold_timeout)
        except RuntimeError:  # the interpreter is shutting down: no new threads
            return None
        self._pending_hold = held
        return held
