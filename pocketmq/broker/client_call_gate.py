"""ClientCallGate: the calls the broker makes to a client on an asker's behalf, the client's answer relayed to the
asker (GET_CONSUMER_RUNNING_INFO: Broker2Client.callClient).

Such a request is small and its answer is whatever the client sends, up to a frame (16 MiB): an asker that sends
many and reads none would have the broker hold every answer until its connection drains (the transport holds a
finished answer for a peer that does not read). So an asker's calls run one at a time, each only once the
asker's connection has taken what was written to it, and the answer is handed back only once it has again: what
one asker makes the broker hold is one answer, whatever it sends. RocketMQ runs these on its admin pool, 16 at a
time for the whole broker (adminBrokerThreadPoolNums), so at most ``at_once`` calls are out to clients at once;
the rest wait their turn, as they would in RocketMQ's pool queue.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.transport import Channel

CLIENT_CALLS_AT_ONCE = 16  # RocketMQ's adminBrokerThreadPoolNums


class AskerGone(RemotingError):
    """The asker's connection closed before its turn: nobody would read the client's answer."""


@dataclass
class _Asker:
    """One asking connection: its turn to call (one call at a time), and how many of its calls hold or await it."""

    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ClientCallGate:
    def __init__(self, at_once: int = CLIENT_CALLS_AT_ONCE) -> None:
        self._calls = asyncio.Semaphore(at_once)
        self._askers: dict[Channel, _Asker] = {}

    async def call(self, asker: Channel, client: Channel, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """``client``'s answer to ``request``, asked for ``asker``. Raises RemotingError (AskerGone among them)."""
        state = self._askers.get(asker)
        if state is None:
            state = self._askers[asker] = _Asker()
        state.users += 1
        try:
            async with state.turn:
                # The lock is released as this returns and the caller answers before anything else runs: the
                # answer is written before the asker's next call starts.
                await asker.drain()
                if asker.closed:
                    raise AskerGone(f"the asking connection {asker.remote_address} closed")
                async with self._calls:
                    answer = await client.invoke(request, timeout)
                await asker.drain()
                return answer
        finally:
            state.users -= 1
            if not state.users:
                del self._askers[asker]
