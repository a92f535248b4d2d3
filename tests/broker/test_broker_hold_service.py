"""PullRequestHoldService on its own: arrivals from another thread, filters, the parking race, timeouts."""

from __future__ import annotations

import asyncio
import threading

from pocketmq.broker.filter import ExpressionMessageFilter, build_subscription_data
from pocketmq.broker.longpolling import PullRequest, PullRequestHoldService
from pocketmq.common.java_hash import java_string_hash
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.tasks import TaskTracker


class FakeChannel:
    closed = False
    write_paused = False


class Harness:
    def __init__(self) -> None:
        self.max_offsets: dict[tuple[str, int], int] = {}
        self.woken: list[RemotingCommand] = []
        self.tasks = TaskTracker()
        self.hold = PullRequestHoldService(
            lambda t, q: self.max_offsets.get((t, q), 0), self._wakeup, self.tasks, check_interval=3600
        )

    async def _wakeup(self, channel, request) -> bool:
        self.woken.append(request)
        return True

    def park(self, topic: str, queue_id: int, offset: int, expr: str = "*", timeout_ms: int = 60_000):
        request = RemotingCommand.request(11)
        self.hold.suspend_pull_request(
            topic,
            queue_id,
            PullRequest(
                request=request,
                channel=FakeChannel(),  # type: ignore[arg-type]
                timeout_millis=timeout_ms,
                suspend_timestamp=asyncio.get_running_loop().time(),
                pull_from_offset=offset,
                message_filter=ExpressionMessageFilter(build_subscription_data(topic, expr)),
            ),
        )
        return request


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_arrivals_from_the_dispatcher_thread_wake_matching_requests_once() -> None:
    h = Harness()
    h.hold.start()
    try:
        wanted = h.park("T", 0, 5, expr="A")
        other_queue = h.park("T", 1, 0)
        code_a, code_b = java_string_hash("A"), java_string_hash("B")

        def dispatcher() -> None:
            h.hold.on_message_arriving("T", 0, 6, code_b, 0, b"")  # rejected by the filter
            h.hold.on_message_arriving("T", 0, 5, code_a, 0, b"")  # offset 4: before what the pull wants
            h.hold.on_message_arriving("Other", 0, 1, code_a, 0, b"")  # nobody waits there

        t = threading.Thread(target=dispatcher)
        t.start()
        t.join()
        await settle()
        assert h.woken == [] and h.hold.parked_count == 2

        h.max_offsets[("T", 0)] = 8
        burst = threading.Thread(target=lambda: [h.hold.on_message_arriving("T", 0, n, code_a, 0, b"") for n in (7, 8)])
        burst.start()
        burst.join()
        await settle()
        assert h.woken == [wanted] and h.hold.parked_count == 1
        assert [r.request for r in h.hold.pull_request_table[("T", 1)]] == [other_queue]
    finally:
        h.hold.shutdown()
        await h.tasks.close()


async def test_a_message_that_arrived_before_parking_wakes_at_once() -> None:
    h = Harness()
    h.hold.start()
    try:
        # The store read saw nothing at offset 3, but a message landed before the request was parked.
        h.max_offsets[("T", 0)] = 4
        request = h.park("T", 0, 3)
        await settle()
        assert h.woken == [request] and h.hold.parked_count == 0
    finally:
        h.hold.shutdown()
        await h.tasks.close()


async def test_timeout_and_periodic_recheck() -> None:
    h = Harness()
    h.hold.start()
    try:
        quick = h.park("T", 0, 0, timeout_ms=20)
        slow = h.park("T", 1, 0)
        await asyncio.wait_for(_until(lambda: h.woken == [quick]), 5.0)
        assert h.hold.wakeups == 0  # a timeout is not an arrival
        h.max_offsets[("T", 1)] = 1
        h.hold.check_hold_request()
        await settle()
        assert h.woken == [quick, slow] and h.hold.wakeups == 1 and h.hold.parked_count == 0
    finally:
        h.hold.shutdown()
        await h.tasks.close()


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.005)
