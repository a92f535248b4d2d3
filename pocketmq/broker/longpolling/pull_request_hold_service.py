"""PullRequestHoldService: park PULL_NOT_FOUND pulls and answer them when a matching message arrives.

RocketMQ's service thread re-checks every parked request every 5 s and is also called by the dispatcher
(ReputMessageService) for each new message. Here:

* the store's arrival listener runs on the dispatcher thread, so it only looks the queue up in the table of
  parked keys; when something waits there it queues the arrival and, at most once per batch of arrivals,
  hops to the event loop with ``call_soon_threadsafe``. A parked pull is answered within milliseconds of
  the message being dispatched.
* every parked request has its own loop timer for its suspend timeout, so timeouts are exact rather than
  rounded up to the next 5 s tick.
* a safety re-check of every parked queue against the store's max offset still runs every
  ``pullRequestHoldCheckInterval`` (5 s), as in RocketMQ.

Woken requests are re-executed by the pull processor without further suspension, exactly as RocketMQ's
``executeRequestWhenWakeup`` does, and their response is written to the channel. The wake-up runs in the
callback that learnt of the arrival, and its answer is written there too: a task, and a write left to the end
of the loop turn, would each add one iteration of the loop, and at each the loop thread may lose the GIL to the
dispatcher or a flush thread, or its core to another process (a Java client runs several threads per message),
before the answer goes out (bench/README.md, "Why the Java client's round trip is slower"). Only a wake-up that
has to wait (a store read on a pull thread) returns a coroutine, which runs as a task.

A pull is answered only while its connection takes its answers. One connection may park any number of pulls on a
queue, and one message would wake them all: answered regardless, N parked pulls held N copies of the message in
the connection's output (3,000 pulls and one 1 MiB message: 3 GB) for a peer that does not read. So a woken pull
(by an arrival, a re-check or its timeout) whose connection's writes are paused is not run: it waits, deferred,
in its connection's queue, without its timer (it is due), and so does one whose store read on a pull thread ends
when they are. Once the connection drains below its low-water mark, the deferred pulls run one by one, each read
then, until the connection pauses again. What a connection that does not read holds is thus the high-water mark
plus one answer, however many pulls it parked; a deferred pull still counts as parked (``maxPullPollingSize``)
and goes with its connection (closed, or by the idle timeout). The answer is the one it would have had: a slow
reader loses nothing, its answers only wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.tasks import TaskTracker
from pocketmq.remoting.transport import Channel

from .arrival_inbox import ArrivalInbox
from .pull_request import PullRequest

log = logging.getLogger(__name__)

Key = tuple[str, int]
Arrival = tuple[int, int, bytes]  # next logic offset, tags code, raw properties
# Answers the request and returns None, or returns the coroutine that will (run here as a task): it returns
# False when it did not, the connection's writes having paused meanwhile.
Wakeup = Callable[[Channel, RemotingCommand], Coroutine[Any, Any, bool] | None]


class PullRequestHoldService:
    def __init__(
        self,
        get_max_offset: Callable[[str, int], int],
        wakeup: Wakeup,
        tasks: TaskTracker,
        check_interval: float = 5.0,
        on_park: Callable[[], None] | None = None,
        max_parked: int = 100_000,
    ) -> None:
        self.max_parked = max_parked
        self.parked = 0
        self._get_max_offset = get_max_offset
        self._on_park = on_park  # the store's dispatcher, told to be prompt while pulls wait
        self._wakeup = wakeup
        self._tasks = tasks
        self.check_interval = check_interval
        # topic@queueId -> parked requests. Read (membership only) from the dispatcher thread.
        self.pull_request_table: dict[Key, list[PullRequest]] = {}
        # Woken pulls of connections whose writes are paused, answered once they drain (one task a connection).
        self.deferred: dict[Channel, deque[RemotingCommand]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrivals: ArrivalInbox[tuple[Key, int, int, bytes]] = ArrivalInbox(self._drain_arrivals)
        self.wakeups = 0  # requests answered because of an arrival or a re-check (not a timeout)

    def start(self) -> None:
        self._loop = self._arrivals.loop = asyncio.get_running_loop()
        self._tasks.periodic("pull-request-hold-check", self.check_interval, self.check_hold_request)

    def shutdown(self) -> None:
        for requests in self.pull_request_table.values():
            for r in requests:
                if r.timer is not None:
                    r.timer.cancel()
        self.pull_request_table.clear()
        self.deferred.clear()
        self.parked = 0
        self._loop = self._arrivals.loop = None

    def waiting(self) -> bool:
        """Whether any pull is parked (read from the dispatcher thread: one dict truth test)."""
        return bool(self.pull_request_table)

    @property
    def parked_count(self) -> int:
        return self.parked

    # --- parking (event loop) ---

    def suspend_pull_request(self, topic: str, queue_id: int, pull_request: PullRequest) -> bool:
        """Park the pull; False (answer it at once) when ``max_parked`` pulls wait already."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("PullRequestHoldService is not started")
        if self.parked >= self.max_parked:
            return False
        pull_request.request.body = None  # (a pull carries none; a peer's would be held as long as it waits)
        key = (topic, queue_id)
        first = not self.pull_request_table
        self.pull_request_table.setdefault(key, []).append(pull_request)
        self.parked += 1
        if first and self._on_park is not None:
            self._on_park()  # after the append: the round it triggers must already see a pull waiting
        pull_request.timer = loop.call_at(
            pull_request.suspend_timestamp + pull_request.timeout_millis / 1000.0, self._on_timeout, key, pull_request
        )
        # A message dispatched between the store read and the line above found no parked key and was not
        # reported. The key is in the table now, so anything dispatched from here on will be; anything
        # dispatched before shows in the queue's max offset.
        max_offset = self._get_max_offset(topic, queue_id)
        if max_offset > pull_request.pull_from_offset:
            self.notify_message_arriving(key, max_offset, None)
        return True

    def on_channel_close(self, channel: Channel) -> None:
        for key, requests in list(self.pull_request_table.items()):
            keep = [r for r in requests if r.channel is not channel]
            if len(keep) != len(requests):
                for r in requests:
                    if r.channel is channel and r.timer is not None:
                        r.timer.cancel()
                self.parked -= len(requests) - len(keep)
                self._set(key, keep)
        deferred = self.deferred.pop(channel, None)
        if deferred:
            self.parked -= len(deferred)
            deferred.clear()

    # --- arrivals ---

    def on_message_arriving(
        self, topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int, properties: bytes
    ) -> None:
        """The store's message_arriving_listener. Runs on the dispatcher thread for every message: keep it cheap."""
        key = (topic, queue_id)
        if key not in self.pull_request_table:
            return
        self._arrivals.put((key, next_offset, tags_code, properties))

    def _drain_arrivals(self, arrivals: list[tuple[Key, int, int, bytes]]) -> None:
        by_key: dict[Key, list[Arrival]] = {}
        for key, next_offset, tags_code, properties in arrivals:
            by_key.setdefault(key, []).append((next_offset, tags_code, properties))
        for key, items in by_key.items():
            self.notify_message_arriving(key, max(a[0] for a in items), items)

    def notify_message_arriving(self, key: Key, max_offset: int, arrivals: list[Arrival] | None) -> None:
        """Wake the requests of ``key`` that a new message satisfies.

        ``arrivals`` are (next logic offset, tags code, raw properties) of the new messages: a filter that needs
        the properties (SQL92) tests them, as RocketMQ's notifyMessageArriving does with isMatchedByCommitLog.
        None means "unknown" (the periodic re-check), in which case any new data wakes the request, as in
        RocketMQ.
        """
        requests = self.pull_request_table.get(key)
        if not requests:
            return
        keep: list[PullRequest] = []
        for r in requests:
            if r.channel.closed:
                if r.timer is not None:
                    r.timer.cancel()
                continue
            newest = max_offset
            if newest <= r.pull_from_offset:
                newest = self._get_max_offset(*key)
            if newest > r.pull_from_offset and (
                arrivals is None or any(_wakes(r, n, code, props) for n, code, props in arrivals)
            ):
                self.wakeups += 1
                self._wake(r)
            else:
                keep.append(r)
        self.parked -= len(requests) - len(keep)
        self._set(key, keep)

    def check_hold_request(self) -> None:
        for key in list(self.pull_request_table):
            self.notify_message_arriving(key, self._get_max_offset(*key), None)

    # --- internals ---

    def _on_timeout(self, key: Key, r: PullRequest) -> None:
        r.timer = None
        requests = self.pull_request_table.get(key)
        if requests is None or r not in requests:
            return
        requests.remove(r)
        self.parked -= 1
        self._set(key, requests)
        if not r.channel.closed:
            self._wake(r)

    def _wake(self, r: PullRequest) -> None:
        if r.timer is not None:
            r.timer.cancel()
            r.timer = None
        if r.channel.write_paused:
            self._defer(r.channel, r.request)
            return
        later = self._wakeup(r.channel, r.request)
        if later is not None:
            self._tasks.spawn(self._answer_later(r.channel, r.request, later), name="pull-wakeup")

    async def _answer_later(
        self, channel: Channel, request: RemotingCommand, later: Coroutine[Any, Any, bool]
    ) -> None:
        if not await later:
            self._defer(channel, request)

    def _defer(self, channel: Channel, request: RemotingCommand, first: bool = False) -> None:
        if channel.closed:
            return
        queue = self.deferred.get(channel)
        if queue is None:
            queue = self.deferred[channel] = deque()
            self._tasks.spawn(self._answer_deferred(channel, queue), name="pull-deferred")
        if first:
            queue.appendleft(request)
        else:
            queue.append(request)
        self.parked += 1

    async def _answer_deferred(self, channel: Channel, queue: deque[RemotingCommand]) -> None:
        """Run the connection's deferred pulls while it takes their answers, waiting for it to drain between."""
        try:
            while queue:
                await channel.drain()
                # One at a time, the store read included: each answer may be the one that pauses the connection.
                while queue and not channel.write_paused and not channel.closed:
                    request = queue.popleft()
                    self.parked -= 1
                    later = self._wakeup(channel, request)
                    if later is not None and not await later:
                        self._defer(channel, request, first=True)
                if channel.closed:
                    break
        finally:
            if self.deferred.get(channel) is queue:  # (else on_channel_close or shutdown took it)
                del self.deferred[channel]
                self.parked -= len(queue)

    def _set(self, key: Key, requests: list[PullRequest]) -> None:
        if requests:
            self.pull_request_table[key] = requests
        else:
            self.pull_request_table.pop(key, None)


def _wakes(r: PullRequest, next_offset: int, tags_code: int, properties: bytes) -> bool:
    f = r.message_filter
    return (
        next_offset > r.pull_from_offset
        and f.is_matched_by_consume_queue(tags_code)
        and (not f.needs_commit_log or f.is_matched_by_properties(properties))
    )
