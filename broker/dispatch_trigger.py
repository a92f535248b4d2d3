"""LoopDispatchTrigger: the store dispatches the broker's appends on the event loop, once per loop turn.

By default every append wakes the store's dispatcher thread. The broker appends on its event loop, so each
send would then cost a thread wakeup and two GIL handoffs, more than the dispatch itself (~20 µs), and on a
small machine the cross-CPU wakeups add latency too. Here the first append of a loop turn schedules one
dispatch round with ``call_soon``: it runs after the responses of that turn are written, in the thread that
already holds the GIL. Appends from other threads still wake the dispatcher thread, which also keeps polling
every 10 ms.

Dispatch writes mapped queue and index pages, as the appends do; a page fault there would hold the GIL (and so
the loop) on the dispatcher thread just the same.
"""

from __future__ import annotations

import asyncio
import threading

from storage.message_store import DefaultMessageStore


class LoopDispatchTrigger:
    def __init__(self, store: DefaultMessageStore, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._loop = loop
        self._thread = threading.get_ident()
        self._scheduled = False
        self._closed = False

    def __call__(self) -> None:
        if threading.get_ident() != self._thread:
            self._store.reput_service.wakeup()  # not the loop's append: the dispatcher thread's job
            return
        if not self._scheduled:
            try:
                self._loop.call_soon(self._dispatch)
            except RuntimeError:  # the loop is closed: never fail the append that got us here
                self._store.reput_service.wakeup()
                return
            self._scheduled = True

    def close(self) -> None:
        self._closed = True

    def _dispatch(self) -> None:
        self._scheduled = False
        if not self._closed:
            self._store.dispatch_now()
