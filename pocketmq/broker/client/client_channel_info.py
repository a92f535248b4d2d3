"""ClientChannelInfo: one client connection as the broker tracks it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pocketmq.remoting.transport import Channel


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    """RocketMQ's ClientChannelInfo: a client's connection, as its heartbeats describe it."""

    channel: Channel
    client_id: str
    language: int
    version: int
    # time.monotonic() of the last heartbeat: channels silent for channelExpiredTimeout are dropped.
    last_update_timestamp: float = field(default_factory=time.monotonic)
