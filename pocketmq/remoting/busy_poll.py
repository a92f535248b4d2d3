"""Busy polling of the event loop for a short window after network activity.

On a VM, a thread blocked in epoll_wait sleeps on a halted virtual CPU, and waking it costs tens of
microseconds: a loopback round trip between two Python processes took ~80 us here when both sleep between
messages, ~25 us when one of them polls and ~10 us when both do. Linux's ``net.core.busy_poll`` and Aeron's
idle strategies answer the same cost: keep polling a little while after the last activity, then sleep.

Here a callback that re-schedules itself keeps the loop's ready queue non-empty, so each loop iteration
polls with a zero timeout, until ``window`` seconds pass without activity; then the loop blocks as usual.
Idle, it costs nothing; busy, at most ``window`` of one core after each request or response.

Only when one event loop of the process polls: two spinning loops in one process (a broker on a thread of a
test, say) would pass the GIL back and forth at every iteration and slow each other down.
"""

from __future__ import annotations

import asyncio
import weakref
from time import monotonic


class BusyPoller:
    __slots__ = ("_loop", "window", "_deadline", "spinning", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, window: float) -> None:
        self._loop = loop
        self.window = window
        self._deadline = 0.0
        self.spinning = False

    def poke(self) -> None:
        """Activity now: keep the loop polling for ``window`` seconds from here."""
        self._deadline = monotonic() + self.window
        if not self.spinning and _alone(self._loop):
            self.spinning = True
            self._loop.call_soon(self._spin)

    def _spin(self) -> None:
        if monotonic() < self._deadline and not self._loop.is_closed():
            self._loop.call_soon(self._spin)
        else:
            self.spinning = False


_pollers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoller] = weakref.WeakKeyDictionary()


def _alone(loop: asyncio.AbstractEventLoop) -> bool:
    return all(other is loop or not other.is_running() for other in list(_pollers))


def busy_poller(window: float) -> BusyPoller | None:
    """The running loop's poller (one per loop, shared by its endpoints: the widest window wins); None for 0."""
    if window <= 0:
        return None
    loop = asyncio.get_running_loop()
    poller = _pollers.get(loop)
    if poller is None:
        poller = _pollers[loop] = BusyPoller(loop, window)
    elif window > poller.window:
        poller.window = window
    return poller
