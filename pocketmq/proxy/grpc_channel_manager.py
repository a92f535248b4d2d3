"""GrpcChannelManager: a registered gRPC client (by client id) and its Telemetry stream, the proxy's way to send a
client commands of its own (RocketMQ's GrpcClientChannel.writeTelemetryCommand).

As in RocketMQ's proxy, a client stays registered when its Telemetry stream ends (the SDKs open a new one after any
error); it goes at NotifyClientTermination, or once it has sent no Heartbeat or Settings for the channel expiry
time. Only then are its auto-renewed messages given back.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import OrderedDict
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
    # this many (further commands are dropped; the broker asks again). None once the stream has ended.
    outbox: asyncio.Queue[Any | None] | None
    producer_topics: set[str] = field(default_factory=set)
    closed: bool = False  # no stream to write to (it ended, or a newer one of the client took over)
    last_seen: float = field(default_factory=time.monotonic)  # the last Heartbeat or Settings

    def write_telemetry_command(self, command: Any) -> bool:
        if self.closed or self.outbox is None:
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
            if self.outbox is None:
                return
            try:
                self.outbox.put_nowait(None)
            except asyncio.QueueFull:
                # The writer is stuck on a client that does not read; it is cancelled with the stream.
                pass


class GrpcChannelManager:
    """The registered clients, one channel each (a client that opens a new Telemetry stream replaces its
    channel). At most ``max_channels`` streams at once; at most twice as many channels, the stream-less ones seen
    longest ago going first."""

    def __init__(self, max_channels: int, queue_size: int, expired_timeout: float = 120.0) -> None:
        self.max_channels = max_channels
        self.queue_size = queue_size
        self.expired_timeout = expired_timeout  # seconds without Heartbeat or Settings before a client goes
        # Least recently seen first (a Heartbeat or Settings moves a client to the end).
        self._channels: OrderedDict[str, GrpcClientChannel] = OrderedDict()
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
            old.last_seen = time.monotonic()
            self._channels.move_to_end(client_id)
            return old
        channel = GrpcClientChannel(client_id, language, client_version, remote_address, outbox)
        if old is not None:
            channel.producer_topics = set(old.producer_topics)
            old.closed = True  # its stream goes on, but commands now go to the new one
        self._add(channel)
        return channel

    def touch(self, client_id: str, language: str, client_version: str, remote_address: str) -> GrpcClientChannel:
        """A Heartbeat: the client is still there (registered again, without a stream, if it had gone)."""
        channel = self._channels.get(client_id)
        if channel is None:
            channel = GrpcClientChannel(client_id, language, client_version, remote_address, None, closed=True)
            self._add(channel)
        else:
            channel.last_seen = time.monotonic()
            self._channels.move_to_end(client_id)
        return channel

    def _add(self, channel: GrpcClientChannel) -> None:
        self._channels.pop(channel.client_id, None)
        self._channels[channel.client_id] = channel
        if len(self._channels) > 2 * self.max_channels:
            # (At most max_channels have a stream: one of the first max_channels + 1 has none.)
            oldest = next((c for c in self._channels.values() if c.closed), None)
            if oldest is not None:
                self.remove_channel(oldest.client_id, oldest)

    def detach(self, client_id: str, channel: GrpcClientChannel) -> None:
        """The channel's Telemetry stream ended: the client stays registered until it terminates or expires."""
        if self._channels.get(client_id) is channel:
            channel.close()
            channel.outbox = None  # (what was queued for the stream goes with it)

    def scan_expired(self) -> list[str]:
        """ClientHousekeepingService's scan: the clients silent for longer than the expiry time go."""
        too_old = time.monotonic() - self.expired_timeout
        gone = []
        for channel in self._channels.values():
            if channel.last_seen >= too_old:
                break  # (the rest were seen later)
            gone.append(channel)
        for channel in gone:
            self.remove_channel(channel.client_id, channel)
        return [c.client_id for c in gone]

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
