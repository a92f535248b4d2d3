"""PopRequest: one parked POP_MESSAGE (or NOTIFICATION) request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel


@dataclass(slots=True, eq=False)
class PopRequest:
    """RocketMQ's PopRequest: a parked pop or notification, answered by an arrival or at its deadline."""

    request: RemotingCommand
    channel: Channel
    topic: str
    group: str
    queue_id: int  # -1: every queue of the topic
    deadline: float  # loop.time() when the request is answered empty
    timer: asyncio.TimerHandle | None = None
