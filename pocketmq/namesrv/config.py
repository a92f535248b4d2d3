"""NamesrvConfig: name server settings; times are in seconds (float) so tests can use milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.remoting.channel import DEFAULT_MAX_INFLIGHT
from pocketmq.remoting.codec import DEFAULT_MAX_FRAME_SIZE
from pocketmq.remoting.connection_limits import ConnectionLimits


@dataclass(slots=True)
class NamesrvConfig:
    """A name server's settings (RocketMQ's NamesrvConfig and NettyServerConfig)."""

    listen_host: str = "127.0.0.1"
    listen_port: int = 9876  # 0 = any free port
    # How often brokers that stopped registering are looked for (RocketMQ 4.9.8: 10 s).
    scan_not_active_broker_interval: float = 10.0
    # A broker silent for this long is dropped (RocketMQ's BROKER_CHANNEL_EXPIRED_TIME, 120 s).
    broker_channel_expired_time: float = 120.0
    # A broker's whole topic table drops the routes of the topics it no longer lists (RocketMQ 5's
    # deleteTopicWithBrokerRegistration, off by default there too: a 4.9.x broker registers one new topic as a
    # table of that topic alone, which would drop every other route of the broker until its next version).
    delete_topic_with_broker_registration: bool = False
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    # Where PUT_KV_CONFIG settings are kept (RocketMQ: ~/namesrv/kvConfig.json); None = in memory only.
    kv_config_path: str | None = None
    # Access control (docs/broker.md, "Access control"): with a plain ACL file, REGISTER_BROKER,
    # UNREGISTER_BROKER, DELETE_TOPIC_IN_NAMESRV and the other route-changing requests need an admin account's
    # signature (or a white-listed address); reads stay open. None: no checks (RocketMQ 4.9.8's name server).
    acl_file: str | None = None
    # Per connection (remoting.channel.ConnectionLimits), with the broker's defaults: Netty's write water marks,
    # RocketMQ's serverChannelMaxIdleTimeSeconds (120 s), pocketmq's frame read timeout and in-flight bound.
    write_buffer_high_water_mark: int = 64 * 1024
    write_buffer_low_water_mark: int = 32 * 1024
    server_channel_max_idle_time: float = 120.0
    server_frame_read_timeout: float = 60.0
    server_max_inflight_requests: int = DEFAULT_MAX_INFLIGHT

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits.of(self)
