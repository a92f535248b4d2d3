"""LitePullConsumerConfig: a lite pull consumer's settings (DefaultLitePullConsumer's fields and the constants
of DefaultLitePullConsumerImpl). Times are seconds (RocketMQ: milliseconds), so tests run in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from .consumer_enums import (
    ConsumeFromWhere,
    MessageModel,
    check_consume_timestamp,
    consume_timestamp_ms,
    half_an_hour_ago,
)
from .store.local_file_offset_store import DEFAULT_OFFSET_STORE_DIR


@dataclass(slots=True)
class LitePullConsumerConfig:
    """A lite pull consumer's settings (DefaultLitePullConsumer's); times in seconds."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: str = field(default_factory=half_an_hour_ago)  # yyyyMMddHHmmss, local time

    # --- commits ---
    auto_commit: bool = True  # poll() commits what earlier polls returned, at most every auto_commit_interval
    auto_commit_interval: float = 5.0

    # --- polling and pulling ---
    poll_timeout: float = 5.0  # poll()'s default timeout
    pull_batch_size: int = 10  # messages per pull
    pull_threshold_for_all: int = 10000  # messages pulled and not yet polled, over every queue
    pull_threshold_for_queue: int = 1000  # ... per queue
    pull_threshold_size_for_queue: int = 100  # MiB per queue
    consume_max_span: int = 2000  # last - first offset held by a queue
    broker_suspend_max_time: float = 20.0  # long polling: how long the broker may hold a pull
    consumer_timeout_when_suspend: float = 30.0  # RPC timeout of such a pull
    pull_time_delay_when_exception: float = 1.0
    pull_time_delay_when_flow_control: float = 0.05
    pull_time_delay_when_pause: float = 1.0
    topic_metadata_check_interval: float = 30.0  # queue-change listeners: how often their topics are compared

    # --- BROADCASTING offsets ---
    offset_store_dir: str = DEFAULT_OFFSET_STORE_DIR

    # --- message trace (DefaultLitePullConsumer's enableMsgTrace, customizedTraceTopic) ---
    enable_msg_trace: bool = False  # a SubBefore and a SubAfter record for what each poll returns
    custom_trace_topic: str | None = None  # None: RMQ_SYS_TRACE_TOPIC

    def __post_init__(self) -> None:
        self.message_model = MessageModel(self.message_model)
        self.consume_from_where = ConsumeFromWhere(self.consume_from_where)
        if not 1 <= self.pull_batch_size <= 1024:
            raise ValueError("pull_batch_size out of range [1, 1024]")
        for name in ("pull_threshold_for_all", "pull_threshold_for_queue", "pull_threshold_size_for_queue",
                     "consume_max_span"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.auto_commit_interval <= 0:
            raise ValueError("auto_commit_interval must be positive")
        if self.broker_suspend_max_time >= self.consumer_timeout_when_suspend:
            raise ValueError("consumer_timeout_when_suspend must exceed broker_suspend_max_time")
        check_consume_timestamp(self.consume_timestamp)

    def consume_timestamp_ms(self) -> int:
        return consume_timestamp_ms(self.consume_timestamp)
