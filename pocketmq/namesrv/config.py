"""NamesrvConfig: name server settings; times are in seconds (float) so tests can use milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.common.java_text import parse_integer
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
    # A route also carries the topic's ORDER_TOPIC_CONFIG entry of the KV config ("brokerName:queueNums;..."),
    # which a producer then sends to in place of the route's queues (RocketMQ's orderMessageEnable).
    order_message_enable: bool = False
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

    def __post_init__(self) -> None:
        if not 0 <= self.listen_port <= 65535:  # (uvloop wrapped a bigger one round: 75412 bound 9876)
            raise ValueError(f"listenPort {self.listen_port} is out of range 0-65535")

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits.of(self)


# GET_NAMESRV_CONFIG's keys: RocketMQ's names (NamesrvConfig and NettyServerConfig; the scan interval and the
# topic deletion switch as 5.x names them), then pocketmq's own. A scale turns seconds into the key's unit.
PROPERTY_KEYS: dict[str, tuple[str, int]] = {
    "listen_host": ("bindAddress", 1),
    "listen_port": ("listenPort", 1),
    "kv_config_path": ("kvConfigPath", 1),
    "order_message_enable": ("orderMessageEnable", 1),
    "scan_not_active_broker_interval": ("scanNotActiveBrokerInterval", 1000),
    "delete_topic_with_broker_registration": ("deleteTopicWithBrokerRegistration", 1),
    "server_channel_max_idle_time": ("serverChannelMaxIdleTimeSeconds", 1),
    "write_buffer_high_water_mark": ("writeBufferHighWaterMark", 1),
    "write_buffer_low_water_mark": ("writeBufferLowWaterMark", 1),
    "broker_channel_expired_time": ("brokerChannelExpiredTime", 1000),
    "max_frame_size": ("maxFrameSize", 1),
    "server_frame_read_timeout": ("serverFrameReadTimeoutMillis", 1000),
    "server_max_inflight_requests": ("serverMaxInflightRequests", 1),
}
# What UPDATE_NAMESRV_CONFIG may change: the settings read at each use. RocketMQ refuses the path keys alone (and
# keeps any other key, used or not); pocketmq refuses what would not take effect, as its UPDATE_BROKER_CONFIG does.
RUNTIME_KEYS = frozenset({"orderMessageEnable", "scanNotActiveBrokerInterval", "deleteTopicWithBrokerRegistration",
                          "brokerChannelExpiredTime"})
PATH_KEYS = frozenset({"kvConfigPath", "configStorePath"})  # RocketMQ: NO_PERMISSION, "Can not update config path"


def config_properties(config: NamesrvConfig, listen_port: int | None = None) -> dict[str, str]:
    """The settings under their properties keys; ``listen_port`` is the bound port (the config may say 0)."""
    out: dict[str, str] = {}
    for name, (key, scale) in PROPERTY_KEYS.items():
        value = listen_port if name == "listen_port" and listen_port else getattr(config, name)
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif value is None:
            out[key] = ""
        else:
            out[key] = str(round(value * scale) if scale != 1 or isinstance(value, float) else value)
    return out


def parse_runtime_value(key: str, text: str) -> tuple[str, object]:
    """The attribute and value a run-time key's text sets; ValueError with the reason otherwise."""
    name = next(n for n, (k, _) in PROPERTY_KEYS.items() if k == key)
    scale = PROPERTY_KEYS[name][1]
    if isinstance(getattr(NamesrvConfig(), name), bool):
        if text.strip().lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return name, text.strip().lower() == "true"
    value = parse_integer(text.strip()) / scale  # (both are RocketMQ longs in ms: "NaN" is no interval)
    if value <= 0:
        raise ValueError(f"must be positive, got {text!r}")
    return name, value
