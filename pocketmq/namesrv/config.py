"""NamesrvConfig: name server settings; times are in seconds (float) so tests can use milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.remoting.codec import DEFAULT_MAX_FRAME_SIZE


@dataclass(slots=True)
class NamesrvConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 9876  # 0 = any free port
    # How often brokers that stopped registering are looked for (RocketMQ 4.9.8: 10 s).
    scan_not_active_broker_interval: float = 10.0
    # A broker silent for this long is dropped (RocketMQ's BROKER_CHANNEL_EXPIRED_TIME, 120 s).
    broker_channel_expired_time: float = 120.0
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    # Where PUT_KV_CONFIG settings are kept (RocketMQ: ~/namesrv/kvConfig.json); None = in memory only.
    kv_config_path: str | None = None
