"""PopLongPollingService: pops (and notifications) that found nothing, held until a message arrives for them or
their poll time is up (RocketMQ's PopLongPollingService).

Requests are parked per topic, then per (group, queue id); queue id -1 waits for any queue of the topic. An arrival
on a queue wakes, per group, the first request waiting for that queue and the first waiting for any queue; one on a
group's pop retry topic, either of them (``%RETRY%group_topic`` or enableRetryTopicV2's ``%RETRY%group+topic``,
whichever the broker is set to now: the setting changes at run time), wakes that group's requests of the original
topic, as RocketMQ 5's does whatever the setting. Only requests whose connection takes its answers are woken; an
arrival that finds none but paused ones waits for the first of their connections to drain (_wake_first). A woken
request runs again and parks again, with what is left of its poll time, when another consumer took the message
first; a pop that finds more than it can carry wakes the next one itself (``notify_message_arriving``), as
RocketMQ's does.

As in PullRequestHoldService, the store's arrival listener runs on the dispatcher thread: it only looks the topic
up and hops to the event loop once per batch of arrivals. Each request has a loop timer for its deadline, or for
an earlier moment when the caller knows the answer may change then (an orderly queue's block running out).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Coroutine
from typing import Any

from pocketmq.common.clock import now_ms
from pocketmq.common.java_numbers import LONG_MAX, wrap_long
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.pop_ack_constants import build_pop_retry_topic
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.tasks import TaskTracker
from pocketmq.remoting.transport import Channel

from .arrival_inbox import ArrivalInbox
from .pop_request import PopRequest

Wakeup = Callable[[Channel, RemotingCommand, float], Coroutine[Any, Any, None]]
GroupKey = tuple[str, int]  # (group, queue id)


# A parked request's wait when its expiry can never come (below): as long as the loop's timers can count.
FOREVER_MS = LONG_MAX
# RocketMQ's PopRequest counts a request expired 50 ms before its expiry.
EXPIRY_MARGIN_MS = 50


def born_time_of(born_time: int, now: int) -> int:
    """RocketMQ 5's pop and notification processors take a bornTime of 0 for the time the request arrived (the
    proxy sends 0)."""
    return now if born_time == 0 else born_time


def timeout_too_much(born_time: int, poll_time: int, now: int) -> bool:
    """PopMessageRequestHeader.isTimeoutTooMuch: sent more than 500 ms before its poll time ran out, in Java's long
    arithmetic (a bornTime or pollTime near a long's ends wraps, as the clients that send them get it on RocketMQ)."""
    return wrap_long(wrap_long(now - born_time) - poll_time) > 500


def poll_wait_ms(born_time: int, poll_time: int, now: int) -> int | None:
    """How long a pop or notification that found nothing may be parked, or None when it is answered at once.
    RocketMQ parks it until bornTime + pollTime, not pollTime from its arrival: a request that waited in the
    client or on the wire does not wait its whole poll time again. The sum and the margin are Java longs: an
    expiry that wraps below zero is long past, one whose margin wraps never comes (parked until an arrival)."""
    if poll_time <= 0:
        return None
    expired = wrap_long(born_time + poll_time)
    if now > wrap_long(expired - EXPIRY_MARGIN_MS):
        return None
    return expired - now if expired > now else FOREVER_MS


def poll_deadline(loop: asyncio.AbstractEventLoop, born_time: int, poll_time: int) -> float:
    """The loop time until which a pop or notification that found nothing may be parked (now: not parked)."""
    now = now_ms()
    wait = poll_wait_ms(born_time_of(born_time, now), poll_time, now)
    return loop.time() + (wait or 0) / 1000


def all_queues_below_zero(queue_id: int) -> int:
    """RocketMQ 5 reads every queue of the topic for any queue id below 0. One value for all of them, -1, so that a
    parked request of -2 is woken by an arrival as one of -1 is (5.5.0 parks it under -2, which no arrival names:
    it waits out its poll time)."""
    return -1 if queue_id < 0 else queue_id


class PollingResult(enum.Enum):
    POLLING_SUC = "POLLING_SUC"
    POLLING_FULL = "POLLING_FULL"
    NOT_POLLING = "NOT_POLLING"


class PopLongPollingService:
    def __init__(self, wakeup: Wakeup, tasks: TaskTracker, polling_size: int = 1024,
                 on_park: Callable[[], None] | None = None,
                 max_polling_size: int = 100_000) -> None:
        self._wakeup = wakeup
        self._tasks = tasks
        self.polling_size = polling_size
        self.max_polling_size = max_polling_size
        self.parked = 0
        self._on_park = on_park
        # topic -> (group, queue id) -> parked requests. Membership is read from the dispatcher thread.
        self.table: dict[str, dict[GroupKey, list[PopRequest]]] = {}
        self._retry_topics: dict[str, tuple[str, str]] = {}  # pop retry topic -> (topic, group), while parked
        # Arrivals that found only requests of paused connections, as (topic, key), and per paused connection
        # those it holds back: its task notifies them again once it drains (the first to drain takes each).
        self._undelivered: set[tuple[str, GroupKey]] = set()
        self._held_back: dict[Channel, set[tuple[str, GroupKey]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrivals: ArrivalInbox[tuple[str, int]] = ArrivalInbox(self._drain_arrivals)

    def start(self) -> None:
        self._loop = self._arrivals.loop = asyncio.get_running_loop()

    def shutdown(self) -> None:
        for groups in self.table.values():
            for requests in groups.values():
                for r in requests:
                    if r.timer is not None:
                        r.timer.cancel()
        self.table.clear()
        self.parked = 0
        self._retry_topics.clear()
        self._undelivered.clear()
        self._held_back.clear()
        self._loop = self._arrivals.loop = None

    def waiting(self) -> bool:
        return bool(self.table)

    def polling_num(self, topic: str, group: str, queue_id: int) -> int:
        return len(self.table.get(topic, {}).get((group, queue_id), ()))

    # --- parking (event loop) ---

    def polling(self, channel: Channel, request: RemotingCommand, topic: str, group: str, queue_id: int,
                deadline: float, wake_at: float | None = None) -> PollingResult:
        """Park the request until an arrival, ``wake_at`` (loop time) or its ``deadline``."""
        loop = self._loop
        if loop is None or deadline <= loop.time() or channel.closed:
            return PollingResult.NOT_POLLING
        if self.parked >= self.max_polling_size:
            return PollingResult.POLLING_FULL
        groups = self.table.setdefault(topic, {})
        requests = groups.setdefault((group, queue_id), [])
        if len(requests) >= self.polling_size:
            return PollingResult.POLLING_FULL
        request.body = None  # (a pop carries none; a peer's would be held as long as the request waits)
        r = PopRequest(request, channel, topic, group, queue_id, deadline)
        requests.append(r)
        self.parked += 1
        for v2 in (False, True):
            self._retry_topics[build_pop_retry_topic(topic, group, v2)] = (topic, group)
        r.timer = loop.call_at(min(deadline, wake_at) if wake_at is not None else deadline, self._on_timer, r)
        if self._on_park is not None:
            self._on_park()
        return PollingResult.POLLING_SUC

    def on_channel_close(self, channel: Channel) -> None:
        for groups in list(self.table.values()):
            for requests in list(groups.values()):
                for r in [r for r in requests if r.channel is channel]:
                    self._remove(r)

    # --- arrivals ---

    def on_message_arriving(self, topic: str, queue_id: int) -> None:
        """From the store's dispatcher thread, for every message: a dict lookup unless someone waits."""
        if topic not in self.table and topic not in self._retry_topics:
            return
        self._arrivals.put((topic, queue_id))

    def _drain_arrivals(self, arrivals: list[tuple[str, int]]) -> None:
        for topic, queue_id in set(arrivals):
            self.notify_message_arriving(topic, queue_id)

    def notify_message_arriving(self, topic: str, queue_id: int, group: str | None = None) -> None:
        """Wake, per group (or for ``group`` only), the first request waiting for ``queue_id`` and the first
        waiting for any queue; an arrival on a pop retry topic wakes its group's requests of the topic."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and topic in self._retry_topics:
            original, retry_group = self._retry_topics[topic]
            if group is None or group == retry_group:
                for key in list(self.table.get(original, {})):
                    if key[0] == retry_group:
                        self._wake_first(original, key)
            return
        groups = self.table.get(topic)
        if not groups:
            return
        for key in list(groups):
            if (group is None or key[0] == group) and (queue_id < 0 or key[1] in (queue_id, -1)):
                self._wake_first(topic, key)

    # --- internals ---

    def _wake_first(self, topic: str, key: GroupKey) -> None:
        """Wake the first request whose connection takes its answers. One whose writes are paused stays parked:
        woken, it would pop a batch into output its peer does not read, invisible to the group's other consumers
        meanwhile, and a peer that parked many pops and stopped reading could take a queue's whole backlog into
        the broker's memory that way. When every request is of a paused connection, the arrival waits for the
        first of them to drain, which notifies the key again (else a pause of a moment, one answer past the
        high-water mark, left the message to the pop's timer: its whole poll time on a quiet queue)."""
        groups = self.table.get(topic)
        requests = groups.get(key) if groups else None
        if not requests:
            return
        paused: list[Channel] | None = None
        i = 0
        while i < len(requests):  # (by index: no copy of the list on every arrival)
            r = requests[i]
            channel = r.channel
            if channel.closed:
                self._remove(r)
            elif channel.write_paused:
                if paused is None:
                    paused = [channel]
                elif channel is not paused[-1]:
                    paused.append(channel)
                i += 1
            else:
                self._remove(r)
                if self._undelivered:
                    self._undelivered.discard((topic, key))
                self._tasks.spawn(self._wakeup(channel, r.request, r.deadline), name="pop-wakeup")
                return
        if paused is not None:
            self._undelivered.add((topic, key))
            for channel in paused:
                self._notify_when_drained(channel, topic, key)

    def _notify_when_drained(self, channel: Channel, topic: str, key: GroupKey) -> None:
        held = self._held_back.get(channel)
        if held is None:
            held = self._held_back[channel] = set()
            self._tasks.spawn(self._renotify_when_drained(channel, held), name="pop-renotify")
        held.add((topic, key))

    async def _renotify_when_drained(self, channel: Channel, held: set[tuple[str, GroupKey]]) -> None:
        try:
            await channel.drain()  # (returns at once on a closed channel: its requests left, others may wait)
        finally:
            if self._held_back.get(channel) is held:  # (else shutdown took it)
                del self._held_back[channel]
        for topic, key in held:
            if (topic, key) in self._undelivered:  # (else another connection drained first, or a pop took it)
                self._undelivered.discard((topic, key))
                self._wake_first(topic, key)

    def _on_timer(self, r: PopRequest) -> None:
        r.timer = None
        if self._remove(r) and not r.channel.closed:
            self._tasks.spawn(self._wakeup(r.channel, r.request, r.deadline), name="pop-wakeup")

    def _remove(self, r: PopRequest) -> bool:
        if r.timer is not None:
            r.timer.cancel()
            r.timer = None
        groups = self.table.get(r.topic)
        requests = groups.get((r.group, r.queue_id)) if groups else None
        if groups is None or requests is None or r not in requests:
            return False
        requests.remove(r)
        self.parked -= 1
        if not requests:
            del groups[(r.group, r.queue_id)]
            if self._undelivered:  # (an arrival held for a key nobody waits on would wake a later request for nothing)
                self._undelivered.discard((r.topic, (r.group, r.queue_id)))
            if not any(k[0] == r.group for k in groups):
                for v2 in (False, True):
                    self._retry_topics.pop(build_pop_retry_topic(r.topic, r.group, v2), None)
            if not groups:
                del self.table[r.topic]
        return True
