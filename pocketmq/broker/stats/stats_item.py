"""StatsItem and StatsItemSet: counters keyed by topic or topic@group, and their figures over the last minute,
hour and day.

As RocketMQ's (common.stats): a counter is a running total of values (messages, bytes) and of the times it
was added to; a timer snapshots every counter every few seconds (RocketMQ: 10 s) and keeps the snapshots of
the last minute, and the minute's figures are the difference between the oldest and the newest snapshot. The
hour's and the day's are the same over sparser snapshots (RocketMQ: every 10 minutes, 7 kept; every hour, 25
kept). The hot path only adds two ints; no clock is read there.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """A window's figures: the values added in it, their rate per second and the mean value per addition."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


# RocketMQ's csListHour and csListDay: how many snapshots each keeps (the newest minus the oldest spans 6 and 24
# intervals).
HOUR_WINDOW = 7
DAY_WINDOW = 25


class StatsItem:
    __slots__ = ("key", "value", "times", "_samples", "_hour", "_day")

    def __init__(self, key: str, window: int) -> None:
        self.key = key
        self.value = 0  # total of the values added (e.g. messages)
        self.times = 0  # number of additions (e.g. requests)
        # (monotonic ms, value, times) of the last `window` samples: a minute of them.
        self._samples: deque[tuple[float, int, int]] = deque(maxlen=window)
        # The hour's and the day's snapshots, flat (ms, value, times) triples: an array of doubles takes a sixth of
        # the memory a deque of tuples would (an item keeps 32 of them, and clients can make hundreds of thousands
        # of items), and is made at the item's first such snapshot, not on the hot path that makes the item.
        self._hour: array[float] | None = None
        self._day: array[float] | None = None

    def add(self, inc: int, times: int = 1) -> None:
        self.value += inc
        self.times += times

    def sample(self, now_ms: float, interval_ms: float) -> None:
        if not self._samples:
            # As RocketMQ's samplingInSeconds: a new item starts from zero one interval ago, so what was added
            # before its first snapshot counts in the minute.
            self._samples.append((now_ms - interval_ms, 0, 0))
        self._samples.append((now_ms, self.value, self.times))

    def sample_in_minutes(self, now_ms: float, interval_ms: float) -> None:
        """RocketMQ's samplingInMinutes: a snapshot of the hour's (every ``interval_ms``, RocketMQ's 10 min)."""
        if self._hour is None:
            self._hour = array("d")
        _append(self._hour, HOUR_WINDOW, now_ms, interval_ms, self.value, self.times)

    def sample_in_hour(self, now_ms: float, interval_ms: float) -> None:
        """RocketMQ's samplingInHour: a snapshot of the day's (every ``interval_ms``, RocketMQ's hour)."""
        if self._day is None:
            self._day = array("d")
        _append(self._day, DAY_WINDOW, now_ms, interval_ms, self.value, self.times)

    def stats_in_hour(self) -> StatsSnapshot:
        return _compute(self._hour)

    def stats_in_day(self) -> StatsSnapshot:
        return _compute(self._day)

    def stats_in_minute(self) -> StatsSnapshot:
        """RocketMQ's computeStatsData over the minute's samples."""
        samples = self._samples
        if len(samples) < 2:
            return StatsSnapshot()
        t0, v0, n0 = samples[0]
        t1, v1, n1 = samples[-1]
        delta, calls = v1 - v0, n1 - n0
        elapsed_ms = t1 - t0
        tps = delta * 1000.0 / elapsed_ms if elapsed_ms > 0 else 0.0
        return StatsSnapshot(delta, tps, delta / calls if calls else 0.0)

    @property
    def last_sample_value(self) -> int:
        """The total at the last snapshot (what a day's morning figure records)."""
        return self._samples[-1][1] if self._samples else 0


class StatsItemSet:
    """The items of one statistic, by key, created on first use."""

    def __init__(self, name: str, window: int = 7, interval_ms: float = 10_000.0) -> None:
        self.name = name
        self.window = window
        self.interval_ms = interval_ms
        self.items: dict[str, StatsItem] = {}

    def add(self, key: str, inc: int, times: int = 1) -> None:
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem(key, self.window)
        item.value += inc
        item.times += times

    def get(self, key: str) -> StatsItem | None:
        return self.items.get(key)

    def stats_in_minute(self, key: str) -> StatsSnapshot:
        item = self.items.get(key)
        return item.stats_in_minute() if item is not None else StatsSnapshot()

    def total(self, key: str) -> int:
        item = self.items.get(key)
        return item.value if item is not None else 0

    def sample_all(self, now_ms: float) -> None:
        for item in list(self.items.values()):
            item.sample(now_ms, self.interval_ms)

    def remove_where(self, predicate: Callable[[str], bool]) -> None:
        for key in [k for k in self.items if predicate(k)]:
            del self.items[key]


def _append(samples: array[float], window: int, now_ms: float, interval_ms: float, value: int, times: int) -> None:
    if not samples:
        samples.extend((now_ms - interval_ms, 0.0, 0.0))  # from zero one interval back, as the minute's
    samples.extend((now_ms, float(value), float(times)))
    excess = len(samples) - 3 * window
    if excess > 0:
        del samples[:excess]


def _compute(samples: array[float] | None) -> StatsSnapshot:
    """computeStatsData over flat (ms, value, times) triples: none yet (an empty list in RocketMQ) reads as 0."""
    if not samples:
        return StatsSnapshot()
    t0, v0, n0 = samples[:3]
    t1, v1, n1 = samples[-3:]
    delta, calls = int(v1 - v0), int(n1 - n0)
    elapsed_ms = t1 - t0
    return StatsSnapshot(delta, delta * 1000.0 / elapsed_ms if elapsed_ms > 0 else 0.0, delta / calls if calls else 0.0)


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0
