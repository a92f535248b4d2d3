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
from typing import TypeVar

from pocketmq.client.exceptions import MQBrokerException, MQClientException

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
