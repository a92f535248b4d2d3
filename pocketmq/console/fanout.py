"""BrokerCalls: the calls one console request (a /metrics scrape, the cluster page) makes to many brokers, made
concurrently, a bounded number at a time, and never again to a broker that already failed to answer.

Any process may register a broker at a name server (without ACL, as in Apache RocketMQ), also one whose address
accepts connections and never answers. Asked one after another, such a broker cost a request the admin timeout
(3 s) for every call to it: a scrape made a dozen or more per broker, past Prometheus' 10 s scrape timeout. Here
a silent broker costs a request about one admin timeout, and the request still carries what the other brokers
answered."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.remoting.admin_body import ConsumeStats

T = TypeVar("T")

# Calls in flight at once in one request: enough that thousands of consumer groups' stats come in a fraction of a
# second, few enough to hold no more than that many connections' worth of requests to any broker.
MAX_IN_FLIGHT = 16


class BrokerCalls:
    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        self._slots = asyncio.Semaphore(limit)
        self.failed: set[str] = set()  # brokers that did not answer (down, refusing, silent, garbled)
        self.errors: dict[str, str] = {}  # broker address -> its last error, to show

    async def ask(self, addr: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """``call()``'s answer; None when the broker refused (MQBrokerException, or MQClientException for a
        group without offsets) or did not answer, now or earlier in this request."""
        async with self._slots:
            if addr in self.failed:
                return None
            try:
                return await call()
            except (MQBrokerException, MQClientException) as e:
                self.errors[addr] = str(e)  # it answered: ask it again for other things
            except Exception as e:  # a timeout, a refused connection, an answer that does not decode
                self.failed.add(addr)
                self.errors[addr] = str(e) or type(e).__name__
            return None


# GET_BROKER_CONSUME_STATS answers for all of a broker's groups at once: it may take longer than one call, but a
# scrape waits for nothing longer than Prometheus' default scrape timeout.
CONSUME_STATS_TIMEOUT = 10.0


async def consume_stats_by_group(admin: MQAdminExt, calls: BrokerCalls,
                                 addrs: list[str]) -> list[dict[str, list[ConsumeStats]] | None]:
    """Each broker's groups' ConsumeStats (a list per topic the group has offsets of, empty without offsets), or
    None where the broker did not answer: one GET_BROKER_CONSUME_STATS a broker. A GET_CONSUME_STATS a group cost
    the broker's loop a walk of its offset table each, square in the groups (bench/README.md, "The console's
    scrape and thousands of groups")."""
    async def one(addr: str) -> dict[str, list[ConsumeStats]] | None:
        # Read queues: a queue a shrink left read-only still holds what its consumers have to read.
        stats = await calls.ask(addr, partial(admin.fetch_consume_stats_in_broker, addr, False,
                                              CONSUME_STATS_TIMEOUT, True))
        return None if stats is None else {g: s for entry in stats.consume_stats_list for g, s in entry.items()}

    return list(await asyncio.gather(*(one(addr) for addr in addrs)))
