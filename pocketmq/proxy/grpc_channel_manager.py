"""GrpcChannelManager: a live gRPC client (by client id) and its Telemetry stream, the proxy's way to send a
client commands of its own (RocketMQ's GrpcClientChannel.writeTelemetryCommand)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(eq=False)
class GrpcClientChannel:
    """RocketMQ's GrpcClientChannel: a connected gRPC client and the commands waiting for its Telemetry stream."""

    client_id: str
    language: str
    client_version: str
    remote_address: str
    # Commands waiting for the Telemetry stream's writer; bounded, so a client that stops reading costs at most
    # this many (further commands are dropped; the broker asks again).
    outbox: asyncio.Queue[Any | None]
    producer_topics: set[str] = field(default_factory=set)
    closed: bool = False

    def write_telemetry_command(self, command: Any) -> bool:
        if self.closed:
            return False
        try:
            self.outbox.put_nowait(command)
        except asyncio.QueueFull:
            log.warning("telemetry stream of %s is not reading: command dropped", self.client_id)
            return False
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.outbox.put_nowait(None)
            except asyncio.QueueFull:
                # The writer is stuck on a client that does not read; it is cancelled with the stream.
                pass


class GrpcChannelManager:
    """The open Telemetry streams, one channel each (a client that reconnects replaces its channel)."""

    def __init__(self, max_channels: int, queue_size: int) -> None:
        self.max_channels = max_channels
        self.queue_size = queue_size
        self._channels: dict[str, GrpcClientChannel] = {}
        self.streams = 0
        # Told the client id of a channel removed (its auto-renewed messages become visible again).
        self.on_remove: Callable[[str], None] | None = None

    def __len__(self) -> int:
        return len(self._channels)

    def new_outbox(self) -> asyncio.Queue[Any | None]:
        return asyncio.Queue(self.queue_size)

    def create_channel(self, client_id: str, language: str, client_version: str, remote_address: str,
                       outbox: asyncio.Queue[Any | None]) -> GrpcClientChannel:
        """The channel of a client's Telemetry stream (whose writer reads ``outbox``)."""
        old = self._channels.get(client_id)
        if old is not None and old.outbox is outbox:
            return old
        channel = GrpcClientChannel(client_id, language, client_version, remote_address, outbox)
        if old is not None:
            channel.producer_topics = set(old.producer_topics)
            old.closed = True  # its stream goes on, but commands now go to the new one
        self._channels[client_id] = channel
        return channel

    def get_channel(self, client_id: str) -> GrpcClientChannel | None:
        return self._channels.get(client_id)

    def remove_channel(self, client_id: str, channel: GrpcClientChannel | None = None) -> GrpcClientChannel | None:
        current = self._channels.get(client_id)
        if current is None or (channel is not None and current is not channel):
            return None
        del self._channels[client_id]
        current.close()
        if self.on_remove is not None:
            self.on_remove(client_id)
        return current

    def producer_topics(self) -> set[str]:
        return {t for c in self._channels.values() if not c.closed for t in c.producer_topics}

    def producer_of(self, topic: str) -> GrpcClientChannel | None:
        """Any live producer of ``topic`` (the group a transaction check is for)."""
        live = [c for c in self._channels.values() if not c.closed and topic in c.producer_topics]
        return random.choice(live) if live else None
