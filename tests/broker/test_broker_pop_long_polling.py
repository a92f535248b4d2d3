"""PopLongPollingService on its own, with channels that say whether they are paused: an arrival that finds only
paused connections waits for one of them to drain, and wakes one request, not one that parked after it was
answered otherwise."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from pocketmq.broker.longpolling.pop_long_polling_service import PopLongPollingService
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.tasks import TaskTracker


class PausableChannel:
    """What the service asks of a connection: closed, write_paused, and drain() until it resumes."""

    def __init__(self, paused: bool = False) -> None:
        self.closed = False
        self.write_paused = paused
        self._waiters: list[asyncio.Future[None]] = []

    async def drain(self) -> None:
        while self.write_paused and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def resume(self) -> None:
        self.write_paused = False
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters = []


@contextlib.asynccontextmanager
async def long_polling() -> AsyncIterator[tuple[PopLongPollingService, list[RemotingCommand]]]:
    """A started service whose wake-ups only record their requests."""
    woken: list[RemotingCommand] = []

    async def wakeup(channel, request, deadline) -> None:
        woken.append(request)

    tasks = TaskTracker()
    service = PopLongPollingService(wakeup, tasks)
    service.start()
    try:
        yield service, woken
    finally:
        service.shutdown()
        await tasks.close()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_drain_after_the_paused_request_timed_out_wakes_nobody_for_it() -> None:
    loop = asyncio.get_running_loop()
    async with long_polling() as (service, woken):
        paused = PausableChannel(paused=True)
        first = RemotingCommand.request(200050)
        service.polling(paused, first, "T", "G", 0, loop.time() + 0.05)  # type: ignore[arg-type]
        service.notify_message_arriving("T", 0)  # (held for the paused connection's drain)
        await settle()
        assert woken == []
        while not woken:  # its deadline: the processor answers it (and pops, or not, as the connection stands)
            await asyncio.sleep(0.01)
        assert woken == [first]
        later = RemotingCommand.request(200050)
        service.polling(PausableChannel(), later, "T", "G", 0, loop.time() + 60)  # type: ignore[arg-type]
        paused.resume()
        await settle()
        assert woken == [first]  # the arrival went with the first request: nothing new arrived for the later one


async def test_an_arrival_held_for_a_paused_connection_wakes_its_request_once_it_drains() -> None:
    async with long_polling() as (service, woken):
        paused = PausableChannel(paused=True)
        request = RemotingCommand.request(200050)
        service.polling(paused, request, "T", "G", 0, asyncio.get_running_loop().time() + 60)  # type: ignore[arg-type]
        service.notify_message_arriving("T", 0)
        await settle()
        assert woken == []
        paused.resume()
        await settle()
        assert woken == [request]
