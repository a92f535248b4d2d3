"""RebalanceService: rebalance every consumer of a client instance now and then, and at once when woken.

The period is ``ClientConfig.rebalance_interval`` (RocketMQ: 20 s, ``rocketmq.client.rebalance.waitInterval``);
a NOTIFY_CONSUMER_IDS_CHANGED from a broker, a consumer's start, or a queue given up after OFFSET_ILLEGAL
wakes it early. Rebalances never overlap: one task runs them one after another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class RebalanceService:
    def __init__(self, do_rebalance: Callable[[], Awaitable[None]], interval: float, name: str = "Rebalance") -> None:
        self._do_rebalance = do_rebalance
        self.interval = interval
        self._name = name
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0  # completed rebalance rounds (observability for tests and stats)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def wakeup(self) -> None:
        self._wakeup.set()

    async def _run(self) -> None:
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancel that lands just as the
            # event is set, and shutdown would wait for this task forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wakeup.wait()
            self._wakeup.clear()  # wakeups during the round below ask for one more round
            try:
                await self._do_rebalance()
            except Exception:
                log.exception("rebalance failed")
            self.rounds += 1
