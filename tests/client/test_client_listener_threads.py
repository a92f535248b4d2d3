"""ListenerThreads on its own: the threads plain-function listeners run on (no broker needed)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pocketmq.client.impl.consumer.consume_message_service import ConsumeExecutor
from pocketmq.client.impl.consumer.listener_threads import ListenerThreads

WAIT = 30  # seconds a thread waits for what a test holds it for; never reached when the test passes


async def test_a_call_answers_its_result_or_its_exception_on_the_loop() -> None:
    threads = ListenerThreads(4, "t")
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def listener(x: int) -> int:
        ran_on.append(threading.get_ident())
        if x < 0:
            raise ValueError(x)
        return x * 2

    assert await asyncio.gather(*(threads.call(listener, (i,)) for i in range(50))) == [i * 2 for i in range(50)]
    with pytest.raises(ValueError):
        await threads.call(listener, (-1,))
    assert loop_thread not in ran_on
    threads.shutdown()


async def test_a_listener_that_raises_stop_iteration_fails_its_call_and_no_other() -> None:
    """An asyncio future refuses StopIteration (the old executor's answer then never came): it becomes a
    RuntimeError, and the answers drained with it still arrive."""
    threads = ListenerThreads(2, "t")

    def listener(x: int) -> int:
        if x == 3:
            raise StopIteration
        return x

    calls = asyncio.gather(*(threads.call(listener, (i,)) for i in range(8)), return_exceptions=True)
    results = await asyncio.wait_for(calls, WAIT)
    assert [type(r) for r in results].count(RuntimeError) == 1 and isinstance(results[3], RuntimeError)
    assert [r for i, r in enumerate(results) if i != 3] == [0, 1, 2, 4, 5, 6, 7]
    threads.shutdown()


async def test_calls_that_block_each_get_a_thread_up_to_the_size() -> None:
    """Three calls that each wait for the other two finish only if three threads run them at once; a fourth
    call, past the size, waits until one of them is done."""
    threads = ListenerThreads(3, "t")
    meet = threading.Barrier(3, timeout=WAIT)
    release = threading.Event()
    order: list[str] = []

    def blocking(name: str) -> str:
        meet.wait()
        release.wait(WAIT)
        order.append(name)
        return name

    def after() -> str:
        order.append("fourth")
        return "fourth"

    calls = [threads.call(blocking, (n,)) for n in "abc"]
    fourth = threads.call(after, ())
    await asyncio.sleep(0.05)  # (time for a wrongly started fourth thread to run it)
    assert order == [] and not fourth.done()
    release.set()
    assert sorted(await asyncio.gather(*calls)) == ["a", "b", "c"]
    assert await fourth == "fourth" and order.index("fourth") > 0  # (after a thread came free)
    assert threads._threads <= 3
    threads.shutdown()


async def test_a_run_of_quick_calls_does_not_start_the_whole_pool() -> None:
    """Calls that return at once, one after another, are taken by the thread already awake."""
    threads = ListenerThreads(20, "t")
    for i in range(200):
        assert await threads.call(lambda v: v, (i,)) == i
    assert threads._threads == 1
    threads.shutdown()


async def test_shutdown_cancels_what_no_thread_took_and_drops_a_running_calls_answer() -> None:
    threads = ListenerThreads(1, "t")
    entered, release = threading.Event(), threading.Event()

    def blocking() -> str:
        entered.set()
        release.wait(WAIT)
        return "late"

    running = threads.call(blocking, ())
    queued = threads.call(lambda: "never", ())
    await asyncio.get_running_loop().run_in_executor(None, entered.wait, WAIT)
    running.cancel()  # (its awaiter gave up: the answer that comes later is dropped)
    threads.shutdown()
    assert queued.cancelled()
    release.set()
    for _ in range(1000):  # the thread ends once its call returns
        if threads._threads == 0:
            break
        await asyncio.sleep(0.01)
    assert threads._threads == 0
    with pytest.raises(RuntimeError):
        threads.call(lambda: None, ())


async def test_the_executor_runs_plain_listeners_on_its_threads() -> None:
    pool = ConsumeExecutor(2, "pool")
    pool.start()
    names = await asyncio.gather(*(pool.run_sync(lambda: threading.current_thread().name) for _ in range(5)))
    assert all(name.startswith("pool_") for name in names)
    await pool.shutdown(0)
