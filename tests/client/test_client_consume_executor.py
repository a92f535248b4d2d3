"""ConsumeExecutor on its own: the bounded pool that runs consume requests (no broker needed)."""

from __future__ import annotations

import asyncio

from pocketmq.client.impl.consumer.consume_message_service import ConsumeExecutor


async def settle() -> None:
    for _ in range(10):  # a few loop turns: woken workers take their jobs
        await asyncio.sleep(0)


async def test_jobs_that_suspend_occupy_every_worker_and_the_rest_wait() -> None:
    """One worker is woken per submit burst; each worker that takes a job wakes the next, so five jobs that
    all wait fill a pool of three and two stay queued."""
    pool = ConsumeExecutor(3, "t")
    pool.start()
    await settle()  # every worker parked
    gate, started, finished = asyncio.Event(), [], []

    async def job(i: int) -> None:
        started.append(i)
        await gate.wait()
        finished.append(i)

    for i in range(5):
        pool.submit(job, i)
    await settle()
    assert (started, pool.active, pool.queued) == ([0, 1, 2], 3, 2)
    gate.set()
    await settle()
    assert sorted(finished) == [0, 1, 2, 3, 4] and (pool.active, pool.queued) == (0, 0)
    # Parked again: a later job still gets a worker.
    pool.submit(job, 5)
    await settle()
    assert finished[-1] == 5
    await pool.shutdown(0)


async def test_submit_all_hands_over_a_pulls_jobs_as_submit_does_one_by_one() -> None:
    """A pull's jobs given at once (submit_all) fill the pool as the same jobs submitted one by one do: three of
    five waiting jobs take the three workers, in order, and two stay queued; an empty list wakes nobody."""
    pool = ConsumeExecutor(3, "t")
    pool.start()
    await settle()
    pool.submit_all([])
    await settle()
    assert (pool.active, pool.queued) == (0, 0)
    gate, started = asyncio.Event(), []

    async def job(i: int) -> None:
        started.append(i)
        await gate.wait()

    pool.submit_all([(job, (i,)) for i in range(5)])
    await settle()
    assert (started, pool.active, pool.queued) == ([0, 1, 2], 3, 2)
    gate.set()
    await settle()
    assert started == [0, 1, 2, 3, 4] and (pool.active, pool.queued) == (0, 0)
    await pool.shutdown(0)


async def test_jobs_that_do_not_suspend_run_in_order_and_failures_do_not_stop_the_pool() -> None:
    pool = ConsumeExecutor(4, "t")
    pool.start()
    ran: list[int] = []

    async def job(i: int) -> None:
        ran.append(i)
        if i == 3:
            raise RuntimeError("listener bug")

    for i in range(32):
        pool.submit(job, i)
    await settle()
    assert ran == list(range(32)) and (pool.active, pool.queued) == (0, 0)
    await pool.shutdown(0)


async def test_shutdown_waits_for_running_jobs_then_cancels_what_is_left() -> None:
    pool = ConsumeExecutor(1, "t")
    pool.start()
    finished = []

    async def quick() -> None:
        await asyncio.sleep(0.01)
        finished.append("quick")

    async def stuck() -> None:
        await asyncio.Event().wait()
        finished.append("stuck")

    pool.submit(quick)
    pool.submit(stuck)
    pool.submit(quick)  # queued behind the stuck one: never runs
    await pool.shutdown(0.2)
    assert finished == ["quick"] and (pool.active, pool.queued) == (0, 0)


async def test_a_job_that_raises_cancelled_error_without_being_cancelled_keeps_its_worker() -> None:
    """A listener that awaited a future cancelled elsewhere raises CancelledError though nobody cancelled the
    worker: the pool's only worker survives two such jobs and runs the next (it used to end, the pool one worker
    smaller for good). Cancelling the worker itself still ends it: shutdown returns."""
    pool = ConsumeExecutor(1, "t")
    pool.start()
    ran: list[str] = []

    async def awaits_a_cancelled_future() -> None:
        ran.append("cancelled")
        other = asyncio.get_running_loop().create_future()
        other.cancel()
        await other

    async def job() -> None:
        ran.append("next")

    async def stuck() -> None:
        ran.append("stuck")
        await asyncio.Event().wait()

    pool.submit(awaits_a_cancelled_future)
    pool.submit(awaits_a_cancelled_future)
    pool.submit(job)
    await settle()
    assert ran == ["cancelled", "cancelled", "next"] and (pool.active, pool.queued) == (0, 0)
    pool.submit(stuck)
    await settle()
    assert pool.active == 1
    await asyncio.wait_for(pool.shutdown(0), 10)
    assert (pool.active, pool.queued) == (0, 0)


async def test_a_caller_cancelled_while_the_pool_shuts_down_stays_cancelled() -> None:
    """shutdown() waits for its cancelled workers; when the task calling it is itself cancelled meanwhile (a
    consumer's shutdown under a timeout), that cancellation reaches the caller instead of being taken for a
    worker's and swallowed."""
    pool = ConsumeExecutor(1, "t")
    pool.start()
    await settle()
    release = asyncio.Event()

    async def stubborn() -> None:  # a listener that finishes its work before it lets a cancellation through
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()
            raise

    pool.submit(stubborn)
    await settle()
    closing = asyncio.ensure_future(pool.shutdown(0))
    await settle()
    closing.cancel()
    await settle()
    release.set()
    await asyncio.wait([closing])
    assert closing.cancelled()
