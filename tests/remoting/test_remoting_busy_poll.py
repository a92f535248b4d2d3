"""Busy polling: the loop keeps polling for a window after a request or response, then sleeps again."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

from pocketmq.remoting import busy_poll
from pocketmq.remoting.busy_poll import BusyPoller, busy_poller
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.spin_policy import SpinPolicy, parse_running
from tests.conftest import wait_until

ECHO = 2101

pytestmark = pytest.mark.usefixtures("no_other_pollers")


async def _echo_pair(server_poll: float, client_poll: float) -> tuple[RemotingServer, RemotingClient]:
    srv = RemotingServer(busy_poll=server_poll)
    srv.register_inline_processor(ECHO, lambda ch, req: RemotingCommand.response_to(req, body=req.body))
    await srv.start()
    return srv, RemotingClient(busy_poll=client_poll)


async def test_the_loop_polls_after_a_request_then_sleeps_again():
    # The machine's load is not this test's subject (test_remoting_spin_policy.py): a policy that ignores it.
    busy_poller(0.05).policy = SpinPolicy(cpus=1_000_000, max_crowding=1.0)
    srv, cli = await _echo_pair(0.05, 0.05)
    try:
        response = await cli.invoke(srv.address, RemotingCommand.request(ECHO, body=b"x"), 5)
        assert response.body == b"x"
        poller = busy_poller(0.05)
        assert poller is not None and poller.spinning
        await wait_until(lambda: not poller.spinning)
        await asyncio.sleep(0.01)
        assert not poller.spinning  # nothing re-armed it: an idle loop sleeps
    finally:
        await cli.close()
        await srv.stop()


async def test_zero_means_no_polling():
    srv, cli = await _echo_pair(0.0, 0.0)
    try:
        await cli.invoke(srv.address, RemotingCommand.request(ECHO, body=b"x"), 5)
        assert busy_poller(0.0) is None
        assert srv._channels and all(ch._poller is None for ch in srv._channels)
    finally:
        await cli.close()
        await srv.stop()


async def test_no_polling_while_another_loop_of_the_process_runs():
    # Two spinning loops of one process would hand the GIL to each other at every iteration.
    other = asyncio.new_event_loop()
    started = threading.Event()
    thread = threading.Thread(target=lambda: (other.call_soon(started.set), other.run_forever()), daemon=True)
    thread.start()
    try:
        started.wait(5)
        other_poller = asyncio.run_coroutine_threadsafe(_make_poller(), other).result(5)
        srv, cli = await _echo_pair(0.05, 0.05)
        try:
            await cli.invoke(srv.address, RemotingCommand.request(ECHO, body=b"x"), 5)
            poller = busy_poller(0.05)
            assert poller is not None and poller is not other_poller
            assert not poller.spinning
        finally:
            await cli.close()
            await srv.stop()
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()


async def _make_poller():
    return busy_poller(0.05)


async def test_busy_polling_switched_off_by_the_environment(monkeypatch) -> None:
    # POCKETMQ_BUSY_POLL=never: what bench/e2e.py's policy comparison runs the broker and clients with.
    monkeypatch.setenv("POCKETMQ_BUSY_POLL", "never")
    assert busy_poller(0.05) is None


async def test_the_poller_samples_its_threads_schedstat() -> None:
    # Linux: /proc/thread-self/schedstat, read on the loop's own thread at each sample.
    from pocketmq.remoting.busy_poll import read_schedstat

    first = read_schedstat()
    assert first is not None and first[0] > 0 and first[1] >= 0 and first[2] > 0  # ran, waited, runs
    poller = BusyPoller(asyncio.get_running_loop(), 0.001, SpinPolicy(cpus=2, sample_interval=0.0))
    poller.poke(arrived=False)
    await wait_until(lambda: not poller.spinning)  # the spin ran on this thread
    poller.poke(arrived=False)
    assert poller._schedstat is not None and poller._schedstat[0] > first[0]


def test_a_kept_proc_file_reads_what_opening_it_afresh_reads() -> None:
    # The poller keeps its /proc files open and reads them with pread; the readable reference opens them anew.
    from pocketmq.remoting.busy_poll import _LOADAVG, _SCHEDSTAT, ProcFile, parse_schedstat, read_schedstat

    kept = ProcFile(_SCHEDSTAT)
    for _ in range(50):
        before = read_schedstat()
        now = parse_schedstat(kept.read() or "")
        after = read_schedstat()
        assert before is not None and now is not None and after is not None
        assert before[0] <= now[0] <= after[0] and before[2] <= now[2] <= after[2]
    # Read from another thread, the kept file is still the thread's that opened it: not the reader's own.
    seen: list[tuple[float, float, int] | None] = []
    worker = threading.Thread(target=lambda: seen.extend([parse_schedstat(kept.read() or ""), read_schedstat()]))
    mine = read_schedstat()
    worker.start()
    worker.join()
    theirs_of_mine, their_own = seen
    assert mine is not None and theirs_of_mine is not None and their_own is not None
    assert theirs_of_mine[2] >= mine[2] > their_own[2]
    running = parse_running(ProcFile(_LOADAVG).read() or "")
    assert running is not None and running >= 1  # this thread, at least


def test_a_closed_loop_leaves_no_poller_behind() -> None:
    # The poller held its loop, and the table of pollers (weak on the loop) then held both for good, with the
    # poller's two /proc descriptors: one pair more for every loop that ever ran a client or a server.
    async def poll_once() -> None:
        assert busy_poller(0.001) is not None

    gc.collect()
    before = len(busy_poll._pollers)
    for _ in range(5):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(poll_once())
        loop.close()
        del loop
    gc.collect()
    assert len(busy_poll._pollers) <= before
