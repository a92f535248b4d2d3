"""NettyServerConfig: the broker's listening socket and what each of its connections may hold (RocketMQ's
NettyServerConfig keys, with pocketmq's own for its event loop and frames)."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.remoting.channel import DEFAULT_MAX_INFLIGHT
from pocketmq.remoting.connection_limits import ConnectionLimits

from .config_fields import _f

__all__ = ["NettyServerConfig"]


@dataclass
class NettyServerConfig:
    """Where the broker listens, and how much each of its connections may hold and for how long."""

    listen_port: int = _f(10911, "listenPort")  # 0 = any free port (read BrokerController.address)
    # pocketmq's own: how long the event loop keeps polling after a request, instead of sleeping until the
    # next one wakes it (remoting/busy_poll.py). The file value is in microseconds; 0 turns it off.
    busy_poll: float = _f(0.0002, "busyPollMicros", "us")
    # Where the server binds; None = brokerIP1. RocketMQ binds 0.0.0.0; binding the advertised address is
    # the safer default for a development broker.
    bind_address: str | None = _f(None, "bindAddress")
    # Netty's write water marks, RocketMQ's keys: above the high mark a connection's requests are not read.
    write_buffer_high_water_mark: int = _f(64 * 1024, "writeBufferHighWaterMark")
    write_buffer_low_water_mark: int = _f(32 * 1024, "writeBufferLowWaterMark")
    server_channel_max_idle_time: float = _f(120.0, "serverChannelMaxIdleTimeSeconds")  # seconds, as RocketMQ's
    # pocketmq's own: a frame still incomplete this long after it began closes its connection (0: never).
    server_frame_read_timeout: float = _f(60.0, "serverFrameReadTimeoutMillis", "ms")
    # pocketmq's own: requests of one connection whose processor runs at once; reading pauses at this number.
    server_max_inflight_requests: int = _f(DEFAULT_MAX_INFLIGHT, "serverMaxInflightRequests")

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits.of(self)
