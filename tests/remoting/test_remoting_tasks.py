"""TaskTracker: the background work both the broker and the clients cancel at shutdown."""

from __future__ import annotations

import asyncio

from pocketmq.remoting.tasks import TaskTracker
from tests.conftest import wait_until


async def test_a_periodic_job_keeps_its_schedule_through_failures() -> None:
    tracker = TaskTracker()
    runs: list[int] = []

    async def job() -> None:
        runs.append(len(runs))
        if len(runs) % 2:
            raise ConnectionError("peer down")  # expected: one line, and the schedule goes on
        raise ValueError("a bug")  # unexpected: logged with its traceback, and the schedule still goes on

    tracker.periodic("job", 0.001, job, 0, expected=(ConnectionError,))
    await wait_until(lambda: len(runs) >= 5)
    assert await tracker.close() == 0
    count = len(runs)
    await asyncio.sleep(0.01)
    assert len(runs) == count  # closed: no more runs


async def test_timers_fire_until_the_tracker_closes() -> None:
    tracker = TaskTracker()
    fired: list[str] = []
    tracker.schedule(0, lambda: fired.append("soon"))
    tracker.schedule(60, lambda: fired.append("late"))
    await wait_until(lambda: fired == ["soon"])
    await tracker.close()
    tracker.schedule(0, lambda: fired.append("after close"))
    await asyncio.sleep(0.01)
    assert fired == ["soon"]
    assert tracker.spawn(asyncio.sleep(0)) is None  # a closed tracker starts nothing


async def test_close_reports_tasks_that_ignore_cancellation() -> None:
    tracker = TaskTracker()
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # swallows the cancel, as a buggy job might

    tracker.spawn(stubborn())
    await asyncio.sleep(0)
    assert await tracker.close(timeout=0.05) == 1
    release.set()
