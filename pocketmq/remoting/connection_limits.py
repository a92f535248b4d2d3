"""ConnectionLimits: what one server connection may hold and for how long (RocketMQ's NettyServerConfig water
marks and idle time), read from a broker's or name server's config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one server connection may hold, and for how long (RocketMQ's NettyServerConfig names where it has them).

    A peer that does not read its responses: once the transport holds more than ``write_buffer_high_water_mark``
    unwritten bytes, the connection's requests are no longer read, and requests already read wait before their
    processor runs, until the buffer is back under ``write_buffer_low_water_mark`` (Netty's write water marks, and
    what its channel writability would do if RocketMQ stopped reading on it). What a connection holds in responses
    is then about the high-water mark plus one flush (256 KiB) plus the responses of processors that were already
    running. ``frame_read_timeout``: a frame that started arriving that long ago and is still incomplete closes the
    connection (a half-sent 16 MiB frame would pin its buffer forever). ``max_idle_time``: a connection without a
    read or a write for that long is closed (serverChannelMaxIdleTimeSeconds). Times in seconds; 0 turns one off.
    """

    write_buffer_high_water_mark: int = 64 * 1024  # Netty's default (RocketMQ: writeBufferHighWaterMark)
    write_buffer_low_water_mark: int = 32 * 1024  # (writeBufferLowWaterMark)
    frame_read_timeout: float = 60.0  # pocketmq's own: 16 MiB at 280 KB/s
    max_idle_time: float = 120.0  # serverChannelMaxIdleTimeSeconds

    def __post_init__(self) -> None:
        if not 0 <= self.write_buffer_low_water_mark <= self.write_buffer_high_water_mark:
            raise ValueError(
                f"write buffer water marks: need 0 <= low ({self.write_buffer_low_water_mark}) <= high "
                f"({self.write_buffer_high_water_mark})"
            )
        if self.frame_read_timeout < 0 or self.max_idle_time < 0:
            raise ValueError("connection timeouts must be >= 0 (0: none)")

    @classmethod
    def of(cls, config: ServerConnectionSettings) -> ConnectionLimits:
        """The limits a broker's or a name server's config sets (both use the same keys)."""
        return cls(
            write_buffer_high_water_mark=config.write_buffer_high_water_mark,
            write_buffer_low_water_mark=config.write_buffer_low_water_mark,
            frame_read_timeout=config.server_frame_read_timeout,
            max_idle_time=config.server_channel_max_idle_time,
        )


class ServerConnectionSettings(Protocol):
    """The keys of a server's config that ConnectionLimits.of reads."""

    write_buffer_high_water_mark: int
    write_buffer_low_water_mark: int
    server_frame_read_timeout: float
    server_channel_max_idle_time: float
