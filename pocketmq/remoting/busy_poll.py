"""Busy polling of the event loop for a short window after network activity.

On a VM, a thread blocked in epoll_wait sleeps on a halted virtual CPU, and waking it costs tens of
microseconds, several times a loopback round trip between two processes that poll (bench/README.md). Linux's
``net.core.busy_poll`` and Aeron's
idle strategies answer the same cost: keep polling a little while after the last activity, then sleep.

Here a callback that re-schedules itself keeps the loop's ready queue non-empty, so each loop iteration
polls with a zero timeout, until ``window`` seconds pass without activity; then the loop blocks as usual.
Idle, it costs nothing; busy, at most ``window`` of one core after each request or response.

Only when one event loop of the process polls: two spinning loops in one process (a broker on a thread of a
test, say) would pass the GIL back and forth at every iteration and slow each other down.

And only while spinning pays (spin_policy.py): data must keep arriving during spins, and neither the machine
(its runnable-task count) nor this loop's thread (its run delay) may show tasks waiting for a CPU, or the
spin takes the core the other side needs to answer.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from time import monotonic

from .spin_policy import SpinPolicy, parse_running

_LOADAVG = "/proc/loadavg"
_SCHEDSTAT = "/proc/thread-self/schedstat"  # cpu time, run delay, timeslices (ns, ns, count)
# POCKETMQ_BUSY_POLL=never|always|adaptive (default): a switch for measuring what the policy buys (bench/README.md),
# read once per event loop.
_MODE_ENV = "POCKETMQ_BUSY_POLL"


def parse_schedstat(text: str) -> tuple[float, float, int] | None:
    """(seconds on a CPU, seconds runnable but waiting for one, turns on a CPU) from a schedstat file's text."""
    try:
        ran, waited, runs = text.split()[:3]
        return int(ran) / 1e9, int(waited) / 1e9, int(runs)
    except ValueError:
        return None


def read_schedstat() -> tuple[float, float, int] | None:
    """The calling thread's schedstat (Linux), else None. The readable reference of ``ProcFile`` reads."""
    try:
        with open(_SCHEDSTAT) as f:
            return parse_schedstat(f.read())
    except OSError:
        return None


def read_running() -> int | None:
    """The machine's runnable tasks now (Linux), else None."""
    try:
        with open(_LOADAVG) as f:
            return parse_running(f.read())
    except OSError:
        return None


class ProcFile:
    """A /proc file kept open and read again from offset 0 at each sample.

    The kernel generates a /proc file's text afresh at every read from offset 0, so one descriptor serves every
    sample; ``os.pread`` on it costs a small fraction of an open, read and close, which a busy loop pays a hundred
    times a second. ``/proc/thread-self`` resolves when opened: the file stays the opening thread's.
    """

    __slots__ = ("_fd", "__weakref__")

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self._fd)

    @classmethod
    def open(cls, path: str) -> ProcFile | None:
        try:
            return cls(path)
        except OSError:
            return None

    def read(self) -> str | None:
        try:
            return os.pread(self._fd, 256, 0).decode("ascii", "replace")
        except OSError:
            return None


class BusyPoller:
    __slots__ = ("_loop", "window", "_deadline", "spinning", "policy", "_hit", "_next_sample", "_loadavg_file",
                 "_schedstat_file", "_schedstat", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, window: float, policy: SpinPolicy | None = None) -> None:
        # Weakly: _pollers holds this poller for as long as the loop lives, and a poller holding its loop would keep
        # both (and its two /proc descriptors) for the rest of the process, one pair per loop that ever ran.
        self._loop = weakref.ref(loop)
        self.window = window
        self._deadline = 0.0
        self.spinning = False
        self.policy = policy if policy is not None else SpinPolicy(os.cpu_count() or 1)
        self._hit = False  # data arrived during the current spin
        self._next_sample = 0.0
        # Made on the loop's thread (busy_poller runs there), so the schedstat file is that thread's.
        self._loadavg_file = ProcFile.open(_LOADAVG)
        self._schedstat_file = ProcFile.open(_SCHEDSTAT)
        self._schedstat = self._read_schedstat()  # at the last sample (None: not available here)

    def poke(self, arrived: bool = True) -> None:
        """Activity now (``arrived``: data came in; else we sent some): keep the loop polling for ``window``
        seconds from here, if the policy says spinning pays."""
        now = monotonic()
        if now >= self._next_sample:
            self._sample(now)
        if self.spinning:
            self._hit = self._hit or arrived
            self._deadline = now + self.window
        elif self.policy.should_spin() and (loop := self._loop()) is not None and _alone(loop):
            self._deadline = now + self.window
            self._hit = False
            self.spinning = True
            loop.call_soon(self._spin)

    def _read_schedstat(self) -> tuple[float, float, int] | None:
        text = self._schedstat_file.read() if self._schedstat_file is not None else None
        return parse_schedstat(text) if text is not None else None

    def _sample(self, now: float) -> None:
        self._next_sample = now + self.policy.sample_interval
        if self._schedstat is not None:
            stat = self._read_schedstat()
            if stat is not None:
                last = self._schedstat
                self.policy.record_run_delay(stat[1] - last[1], stat[0] - last[0], stat[2] - last[2])
                self._schedstat = stat
        if self._loadavg_file is not None:
            text = self._loadavg_file.read()
            running = parse_running(text) if text is not None else None
            if running is not None:
                self.policy.record_runnable(running)

    def _spin(self) -> None:
        loop = self._loop()
        if monotonic() < self._deadline and loop is not None and not loop.is_closed():
            loop.call_soon(self._spin)
        else:
            self.spinning = False
            self.policy.record_spin(self._hit)


_pollers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoller] = weakref.WeakKeyDictionary()


def _alone(loop: asyncio.AbstractEventLoop) -> bool:
    return all(other is loop or not other.is_running() for other in list(_pollers))


def busy_poller(window: float) -> BusyPoller | None:
    """The running loop's poller (one per loop, shared by its endpoints: the widest window wins); None for 0."""
    mode = os.environ.get(_MODE_ENV, "adaptive")
    if window <= 0 or mode == "never":
        return None
    loop = asyncio.get_running_loop()
    poller = _pollers.get(loop)
    if poller is None:
        policy = SpinPolicy(os.cpu_count() or 1, always=mode == "always")
        poller = _pollers[loop] = BusyPoller(loop, window, policy)
    elif window > poller.window:
        poller.window = window
    return poller
