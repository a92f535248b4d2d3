"""PullRequest: one parked PULL_MESSAGE request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter


@dataclass(slots=True, eq=False)
class PullRequest:
    """RocketMQ's broker-side PullRequest: a parked pull, answered by an arrival or at its timeout."""

    request: RemotingCommand
    channel: Channel
    timeout_millis: int
    suspend_timestamp: float  # loop.time() when parked
    pull_from_offset: int
    message_filter: MessageFilter
    timer: asyncio.TimerHandle | None = None
