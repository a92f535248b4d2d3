"""PushConsumerConfig: a push consumer's settings (DefaultMQPushConsumer's fields plus the constants of
DefaultMQPushConsumerImpl, ConsumeMessage*Service and ProcessQueue that RocketMQ hard-codes or reads from
system properties). Every time is in seconds so tests can run the machinery in milliseconds."""

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
class PushConsumerConfig:
    """A push consumer's settings (DefaultMQPushConsumer's and what RocketMQ hard-codes); times in seconds."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    # CONSUME_FROM_TIMESTAMP's start, local time as yyyyMMddHHmmss (RocketMQ's format).
    consume_timestamp: str = field(default_factory=half_an_hour_ago)

    # --- consumption ---
    consume_thread_max: int = 20  # concurrent consume requests (tasks, or threads for sync listeners)
    consume_message_batch_max_size: int = 1  # messages per listener call
    max_reconsume_times: int = -1  # -1: 16 concurrently, unlimited orderly
    consume_timeout: float = 15 * 60.0  # a message consumed longer than this is sent back (concurrent)
    suspend_current_queue_time: float = 1.0  # orderly: SUSPEND_CURRENT_QUEUE_A_MOMENT retries after this
    send_message_back_timeout: float = 5.0
    local_retry_delay: float = 5.0  # a failed message that could not be sent back is consumed again here
    await_termination_when_shutdown: float = 0.0  # how long shutdown waits for consumptions in flight

    # --- pulling and flow control ---
    pull_batch_size: int = 32
    pull_interval: float = 0.0
    pull_threshold_for_queue: int = 1000  # cached messages per queue
    pull_threshold_size_for_queue: int = 100  # cached MiB per queue
    pull_threshold_for_topic: int = -1  # -1: off; else split evenly over the topic's queues of this client
    pull_threshold_size_for_topic: int = -1  # MiB, likewise
    consume_concurrently_max_span: int = 2000  # last - first cached offset of a queue (concurrent only)
    post_subscription_when_pull: bool = False  # send the expression with every pull (else the heartbeat's)
    broker_suspend_max_time: float = 15.0  # long polling: how long the broker may hold a pull
    consumer_timeout_when_suspend: float = 30.0  # RPC timeout of such a pull
    pull_time_delay_when_flow_control: float = 0.05
    pull_time_delay_when_broker_flow_control: float = 0.02
    pull_time_delay_when_suspend: float = 1.0  # the consumer is suspended
    pull_time_delay_when_exception: float = 3.0  # (DefaultMQPushConsumerImpl's; the lite pull consumer's is 1 s)
    offset_illegal_delay: float = 10.0  # OFFSET_ILLEGAL: wait before persisting the corrected offset
    # An offset reset pushed by the broker: how long the dropped queues settle (pulls and consumptions in
    # flight end) before the new offsets are taken (RocketMQ: 10 s).
    reset_offset_settle_time: float = 10.0
    pull_max_idle_time: float = 120.0  # a queue not pulled for this long is dropped in the next rebalance

    # --- orderly locks (seed 003) ---
    lock_interval: float = 20.0  # renew every broker queue lock (LOCK_BATCH_MQ)
    lock_max_live_time: float = 30.0  # a local lock not renewed for this long is no longer trusted
    unlock_delay: float = 20.0  # a removed queue with cached messages is unlocked this much later
    max_time_consume_continuously: float = 60.0  # one queue's turn before it yields to the others
    remove_queue_lock_wait: float = 1.0  # how long a rebalance waits for a queue's batch in flight
    retry_lock_delay: float = 0.1  # an unlocked queue tries to lock again after this
    retry_consume_delay: float = 0.01  # ... and, locked, consumes again after this
    not_locked_consume_delay: float = 3.0  # ... or, still not locked, after this

    # --- POP instead of client rebalance (RocketMQ 5's remoting client: setClientRebalance(false)) ---
    # False: the consumers of the group pop every queue of each broker (POP_MESSAGE, queue -1) and the broker
    # decides who gets what; acks and retries go through POP (docs/client.md, "POP").
    client_rebalance: bool = True
    pop_invisible_time: float = 60.0  # what a pop hides from the group until it is acked
    pop_batch_nums: int = 32  # messages per pop (1..32)
    # A failed message becomes visible again after pop_retry_delays[min(2 + reconsume times, last)] seconds
    # (RocketMQ's delay levels from level 3 on, as a failed pulled message's send-back).
    pop_retry_delays: tuple[float, ...] = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200,
                                           1800, 3600, 7200)

    # --- BROADCASTING offsets ---
    offset_store_dir: str = DEFAULT_OFFSET_STORE_DIR

    # --- message trace (DefaultMQPushConsumer(group, enableMsgTrace, customizedTraceTopic)) ---
    enable_msg_trace: bool = False  # a SubBefore and a SubAfter record per listener call
    custom_trace_topic: str | None = None  # None: RMQ_SYS_TRACE_TOPIC

    def __post_init__(self) -> None:
        self.message_model = MessageModel(self.message_model)
        self.consume_from_where = ConsumeFromWhere(self.consume_from_where)
        if not 1 <= self.consume_thread_max <= 1000:
            raise ValueError("consume_thread_max out of range [1, 1000]")
        if not 1 <= self.consume_message_batch_max_size <= 1024:
            raise ValueError("consume_message_batch_max_size out of range [1, 1024]")
        if not 1 <= self.pull_batch_size <= 1024:
            raise ValueError("pull_batch_size out of range [1, 1024]")
        if not 1 <= self.pull_threshold_for_queue <= 65535:
            raise ValueError("pull_threshold_for_queue out of range [1, 65535]")
        if not 1 <= self.pull_threshold_size_for_queue <= 1024:
            raise ValueError("pull_threshold_size_for_queue out of range [1, 1024]")
        if not 1 <= self.consume_concurrently_max_span <= 65535:
            raise ValueError("consume_concurrently_max_span out of range [1, 65535]")
        if self.max_reconsume_times < -1:
            raise ValueError("max_reconsume_times must be -1 or more")
        if self.pull_interval < 0 or self.pull_interval > 65.535:
            raise ValueError("pull_interval out of range [0, 65.535] s")
        if self.broker_suspend_max_time >= self.consumer_timeout_when_suspend:
            raise ValueError("consumer_timeout_when_suspend must exceed broker_suspend_max_time")
        if self.consume_timestamp:
            check_consume_timestamp(self.consume_timestamp)
        if not 1 <= self.pop_batch_nums <= 32:
            raise ValueError("pop_batch_nums out of range [1, 32]")
        if not self.client_rebalance and self.message_model is MessageModel.BROADCASTING:
            raise ValueError("POP (client_rebalance=False) consumes in the CLUSTERING model only")

    def consume_timestamp_ms(self) -> int:
        return consume_timestamp_ms(self.consume_timestamp)
