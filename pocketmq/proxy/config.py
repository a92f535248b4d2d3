"""ProxyConfig: what the gRPC endpoint listens on and the values it gives the SDKs (RocketMQ's ProxyConfig)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class TlsMode(StrEnum):
    """``tls.server.mode`` (TlsSystemConfig): RocketMQ's proxy defaults to permissive."""

    DISABLED = "disabled"  # plaintext h2c only, gRPC bound on the port itself
    PERMISSIVE = "permissive"  # TLS and plaintext on one port, told apart by the first byte
    ENFORCING = "enforcing"  # TLS only


class ProxyMode(StrEnum):
    """``proxyMode`` (``-pm``): how the endpoint reaches a broker that runs in its own process."""

    LOCAL = "local"  # in-process, the broker's own processors handed each request (no socket, no codec)
    CLUSTER = "cluster"  # over a socket, as every broker of another process


@dataclass(slots=True)
class ProxyConfig:
    """The gRPC endpoint's settings (RocketMQ's ProxyConfig)."""

    namesrv_addr: str
    grpc_host: str = "127.0.0.1"
    grpc_server_port: int = 8081  # 0 picks a free port
    tls_mode: TlsMode = TlsMode.PERMISSIVE
    # With LOCAL, the brokers the composition gives GrpcProxy (its own process's) are reached in-process; brokers
    # elsewhere always over sockets. CLUSTER: every broker over a socket.
    proxy_mode: ProxyMode = ProxyMode.LOCAL
    # PEM files; without them a self-signed certificate is made at start (tlsTestModeEnable).
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    # grpcMaxInboundMessageSize: a whole SendMessageRequest, body and all.
    grpc_max_inbound_message_size: int = 130 * 1024 * 1024
    max_message_size: int = 4 * 1024 * 1024
    max_user_property_size: int = 16 * 1024
    user_property_max_num: int = 128
    max_message_group_size: int = 64
    max_lite_topic_size: int = 64
    max_delay_time_millis: int = 24 * 3600 * 1000
    max_transaction_recovery_second: int = 3600
    enable_message_body_empty_check: bool = True
    # Topics one producer's Settings may name (RocketMQ: no limit): each live producer's are kept and heartbeated to
    # the brokers as producer groups, so a Settings naming 100,000 made-up topics cost memory and name-server lookups.
    max_producer_topics: int = 1024
    enable_topic_message_type_check: bool = True
    # The producer's backoff policy in the Settings reply (the SDKs refuse any other than exponential).
    producer_max_attempts: int = 3
    producer_backoff_initial_millis: int = 10
    producer_backoff_max_millis: int = 1000
    producer_backoff_multiplier: float = 2.0
    # The consumers' values in the Settings reply.
    consumer_long_polling_batch_size: int = 32
    consumer_max_long_polling_timeout_millis: int = 20_000
    consumer_retry_max_times: int = 16
    consumer_customized_backoff_millis: tuple[int, ...] = field(default_factory=lambda: tuple(
        s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)))
    # ReceiveMessage: a long polling time is clamped to [min, max] (grpcClientConsumer*LongPollingTimeoutMillis);
    # a receive that does not auto-renew must ask an invisible time within [min for receive, max].
    consumer_min_long_polling_timeout_millis: int = 5_000
    min_invisible_time_millis_for_recv: int = 10_000
    max_invisible_time_millis: int = 12 * 3600 * 1000
    # Auto renew (a push consumer's receive): the invisible time the proxy picks, renewed while a message is not
    # acked (renewAheadTimeMillis before it runs out, every renewSchedulePeriodMillis at most, with the next of
    # renew_next_millis each time) for up to renew_max_time_millis; a client that goes away has its messages made
    # visible again after invisible_time_millis_when_clear.
    enable_proxy_auto_renew: bool = True
    default_invisible_time_millis: int = 60_000
    renew_ahead_time_millis: int = 10_000
    renew_schedule_period_millis: int = 5_000
    renew_max_time_millis: int = 3 * 3600 * 1000
    renew_next_millis: tuple[int, ...] = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
    invisible_time_millis_when_clear: int = 1_000
    max_renew_retry_times: int = 3
    # channelExpiredTimeout: a client stays registered (its auto-renewed messages renewed, its settings kept) this
    # long after its last Heartbeat or Settings, whether or not its Telemetry stream is open; looked at every
    # channel_scan_interval seconds (ClientHousekeepingService's period).
    channel_expired_timeout_millis: int = 120_000
    channel_scan_interval: float = 10.0
    # transactionHeartbeatPeriodSecond: how often the proxy tells the brokers which producer groups it serves,
    # so their transaction checks come to it.
    transaction_heartbeat_period: float = 20.0
    transaction_data_expire_millis: int = 30_000
    transaction_data_max_num: int = 100_000
    # How long a route, a topic's message type or a group's config (fifo, retries) is reused before the name
    # server / broker is asked again.
    route_cache_seconds: float = 5.0
    # Bounds against clients that misbehave: a connection to the permissive port that sends nothing is closed after
    # this long; Telemetry streams at once; commands queued for one stream.
    first_byte_timeout: float = 30.0
    max_telemetry_streams: int = 10_000
    # Settings kept for clients, in bytes in all (a client may send any Settings up to the inbound message size).
    max_client_settings_bytes: int = 64 * 1024 * 1024
    telemetry_queue_size: int = 64
    request_timeout: float = 3.0
    # ACL (RocketMQ's plain_acl.yml): with a file, every call is checked against its accounts
    # (grpc_access_validator.py); the proxy's own requests to brokers with aclEnable are signed with this key pair.
    acl_file: str | None = None
    access_key: str | None = None
    secret_key: str | None = None

    def __post_init__(self) -> None:
        self.proxy_mode = ProxyMode(self.proxy_mode)  # (a name from a config file or a test's overrides)
