"""BrokerStatsManager: the broker's traffic counters (RocketMQ's names), sampled on a timer.

The processors add to them where RocketMQ's do: a stored send adds its messages and bytes to its topic and to
the broker's total, a pull that found messages adds them to its topic@group and to the broker's total, a
message sent back adds one to SNDBCK_PUT_NUMS, a store read (a pull's, or a pop's or peek's read of a queue)
adds one to the reads that found messages or to those that found none. GET_TOPIC_STATS_INFO,
GET_CONSUME_STATS and GET_BROKER_RUNTIME_INFO read the minute's rates from here, VIEW_BROKER_STATS_DATA (mqadmin's
statsAll) an item's minute, hour and day.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from typing import Protocol

from .broker_metrics import BrokerMetrics
from .stats_item import StatsItem, StatsItemSet, StatsSnapshot, monotonic_ms

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"


# Items snapshotted between two turns of the event loop (a few ms of work): clients can make hundreds of thousands
# of topic@group keys, and snapshotting 200,000 of them at once held the loop for half a second.
SAMPLE_CHUNK = 2000

def group_key(topic: str, group: str) -> str:
    """RocketMQ's buildStatsKey(topic, group)."""
    return f"{topic}@{group}"


class StorePutTotals(Protocol):
    """The store's own count of what it appended (the CommitLog's, as StoreStatsService's)."""

    put_message_times_total: int
    put_message_size_total: int


class _NoStore:
    """A manager's without a store (one on its own, in a test): nothing appended."""

    put_message_times_total = 0
    put_message_size_total = 0


class _FixedRate:
    """When a scheduleAtFixedRate task, first run at the first call, is due again; a late timer runs it once, not
    once for each turn it missed."""

    __slots__ = ("interval_ms", "next_ms")

    def __init__(self, interval_ms: float) -> None:
        self.interval_ms = interval_ms
        self.next_ms: float | None = None

    def due(self, now_ms: float) -> bool:
        start = self.next_ms
        if start is None:
            start = now_ms
        elif now_ms < start:
            return False
        turns = math.floor((now_ms - start) / self.interval_ms) + 1 if self.interval_ms > 0 else 1
        self.next_ms = start + turns * self.interval_ms
        return True


class BrokerStatsManager:
    def __init__(self, cluster_name: str, sample_interval: float = 10.0, store: StorePutTotals | None = None) -> None:
        self.cluster_name = cluster_name
        self._store: StorePutTotals = store if store is not None else _NoStore()
        self.sample_interval = sample_interval
        # RocketMQ snapshots for the hour every 10 minutes and for the day every hour: 60 and 360 times its 10 s,
        # here 60 and 360 times the interval, so that a test's short interval shortens the hour and the day too.
        self._hour_rate = _FixedRate(sample_interval * 60_000.0)
        self._day_rate = _FixedRate(sample_interval * 360_000.0)
        # A minute of samples: RocketMQ samples every 10 s and keeps 7 (the newest minus the oldest = 60 s).
        window = max(2, round(60.0 / sample_interval) + 1) if sample_interval > 0 else 7
        self.sets = {
            name: StatsItemSet(name, window, sample_interval * 1000.0)
            for name in (
                TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS,
                BROKER_PUT_NUMS, BROKER_GET_NUMS,
            )
        }
        self._topic_put_nums = self.sets[TOPIC_PUT_NUMS]
        self._topic_put_size = self.sets[TOPIC_PUT_SIZE]
        self._group_get_nums = self.sets[GROUP_GET_NUMS]
        self._group_get_size = self.sets[GROUP_GET_SIZE]
        self._broker_put_nums = self.sets[BROKER_PUT_NUMS]
        self._broker_get_nums = self.sets[BROKER_GET_NUMS]
        # StoreStatsService's getMessageTimesTotalFound / getMessageTimesTotalMiss: store reads (one a pull, one a
        # pop's or peek's read of a queue) that found messages, and those that found none.
        self._get_times_found = StatsItem("getMessageTimesTotalFound", window)
        self._get_times_miss = StatsItem("getMessageTimesTotalMiss", window)
        # StoreStatsService's putTimesList: snapshots of the store's put total, for putTps.
        self._put_times = StatsItem("putMessageTimesTotal", window)
        # BrokerStats: the store's put total and the broker's get total at the start of today and of yesterday
        # (local time).
        self._day = dt.date.today()
        self.msg_put_total_yesterday_morning = 0
        self.msg_put_total_today_morning = 0
        self.msg_get_total_yesterday_morning = 0
        self.msg_get_total_today_morning = 0
        # /metrics' counters: RocketMQ 5 counts its metrics elsewhere than these statistics.
        self.metrics = BrokerMetrics()

    # --- the hot path: one dict lookup and two additions per call ---

    def inc_put(self, topic: str, msgs: int, size: int) -> None:
        self._topic_put_nums.add(topic, msgs)
        self._topic_put_size.add(topic, size)
        self._broker_put_nums.add(self.cluster_name, msgs)

    def inc_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        key = group_key(topic, group)
        self._group_get_nums.add(key, msgs)
        self._group_get_size.add(key, size)
        self._broker_get_nums.add(self.cluster_name, msgs)

    def inc_get_times(self, found: bool) -> None:
        (self._get_times_found if found else self._get_times_miss).add(1)

    def inc_send_back(self, group: str, topic: str) -> None:
        self.sets[SNDBCK_PUT_NUMS].add(group_key(topic, group), 1)

    # --- the timer ---

    def sample(self, now_ms: float | None = None, today: dt.date | None = None) -> None:
        for _ in self.sample_in_steps(now_ms, today):
            pass

    def sample_in_steps(self, now_ms: float | None = None, today: dt.date | None = None,
                        chunk: int = SAMPLE_CHUNK) -> Iterator[None]:
        """sample(), a step at a time: it stops after every ``chunk`` items, for the event loop to run between
        steps. The loop's inc_* meanwhile are safe: each set's items are copied before they are walked (an item
        made meanwhile may wait for the next round, a removed one is snapshotted once more for nothing)."""
        now_ms = monotonic_ms() if now_ms is None else now_ms
        interval_ms = self.sample_interval * 1000.0
        # (both due at the first call: RocketMQ's StatsItemSet schedules all three samplings with no delay)
        hour_ms = self._hour_rate.interval_ms if self._hour_rate.due(now_ms) else None
        day_ms = self._day_rate.interval_ms if self._day_rate.due(now_ms) else None
        self._get_times_found.sample(now_ms, interval_ms)
        self._get_times_miss.sample(now_ms, interval_ms)
        self._put_times.value = self._store.put_message_times_total
        self._put_times.sample(now_ms, interval_ms)
        done = 0
        for s in self.sets.values():
            for item in list(s.items.values()):
                item.sample(now_ms, interval_ms)
                if hour_ms is not None:
                    item.sample_in_minutes(now_ms, hour_ms)
                if day_ms is not None:
                    item.sample_in_hour(now_ms, day_ms)
                done += 1
                if done == chunk:
                    done = 0
                    yield
        today = dt.date.today() if today is None else today
        if today != self._day:
            self._day = today
            self.msg_put_total_yesterday_morning = self.msg_put_total_today_morning
            self.msg_get_total_yesterday_morning = self.msg_get_total_today_morning
            self.msg_put_total_today_morning = self.put_message_times_total
            self.msg_get_total_today_morning = self.broker_get_total

    # --- readers ---

    @property
    def put_message_times_total(self) -> int:
        """Messages the store appended (msgPutTotalTodayNow, putMessageTimesTotal): the broker's own writes too,
        in every topic ever put to, deleted ones too, as StoreStatsService's, which never forgets a topic."""
        return self._store.put_message_times_total

    @property
    def put_message_size_total(self) -> int:
        """Their bytes (putMessageSizeTotal): a running total, every topic ever put to, deleted ones too."""
        return self._store.put_message_size_total

    @property
    def broker_put_total(self) -> int:
        """Messages the processors stored for clients (BROKER_PUT_NUMS)."""
        return self._broker_put_nums.total(self.cluster_name)

    @property
    def broker_get_total(self) -> int:
        return self._broker_get_nums.total(self.cluster_name)

    def get_stats_item(self, stats_name: str, stats_key: str) -> StatsItem | None:
        """RocketMQ's getStatsItem: None for a name pocketmq does not count, or a key not counted yet."""
        s = self.sets.get(stats_name)
        return s.get(stats_key) if s is not None else None

    def topic_put_in_minute(self, topic: str) -> StatsSnapshot:
        return self._topic_put_nums.stats_in_minute(topic)

    def group_get_in_minute(self, topic: str, group: str) -> StatsSnapshot:
        return self._group_get_nums.stats_in_minute(group_key(topic, group))

    def put_in_minute(self) -> StatsSnapshot:
        """The store's puts (putTps)."""
        return self._put_times.stats_in_minute()

    def broker_get_in_minute(self) -> StatsSnapshot:
        return self._broker_get_nums.stats_in_minute(self.cluster_name)

    def get_found_in_minute(self) -> StatsSnapshot:
        return self._get_times_found.stats_in_minute()

    def get_miss_in_minute(self) -> StatsSnapshot:
        return self._get_times_miss.stats_in_minute()

    def on_topic_deleted(self, topic: str) -> None:
        self._topic_put_nums.remove_where(lambda k: k == topic)
        self._topic_put_size.remove_where(lambda k: k == topic)
        self._group_get_nums.remove_where(lambda k: k.startswith(topic + "@"))
        self._group_get_size.remove_where(lambda k: k.startswith(topic + "@"))
        self.metrics.on_topic_deleted(topic)

    def on_group_deleted(self, group: str) -> None:
        for s in (self._group_get_nums, self._group_get_size, self.sets[SNDBCK_PUT_NUMS]):
            s.remove_where(lambda k: k.endswith("@" + group))
        self.metrics.on_group_deleted(group)
