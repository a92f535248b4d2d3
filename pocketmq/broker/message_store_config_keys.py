"""MessageStoreConfigKeys: the ``broker.conf`` keys that are RocketMQ's MessageStoreConfig. A field with ``store=``
feeds pocketmq's own store config (pocketmq.storage.config.MessageStoreConfig, through
BrokerConfig.to_store_config); the others are read by the broker itself (delay offsets, brokerRole, the
in-memory ratio of a new group's start)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pocketmq.storage.config import DEFAULT_DELAY_LEVELS, FlushDiskType

from .config_fields import _f

__all__ = ["MessageStoreConfigKeys"]


@dataclass
class MessageStoreConfigKeys:
    """The store's files, flushing, clean-up, index, delay levels and timer wheel, as broker.conf spells them."""

    store_path_root_dir: str = _f(os.path.join("~", "store"), "storePathRootDir", store="store_path_root_dir")
    flush_disk_type: FlushDiskType = _f(FlushDiskType.ASYNC_FLUSH, "flushDiskType", store="flush_disk_type")
    mapped_file_size_commit_log: int = _f(
        1024 * 1024 * 1024, "mappedFileSizeCommitLog", store="mapped_file_size_commit_log"
    )
    mapped_file_size_consume_queue: int = _f(
        300_000 * 20, "mappedFileSizeConsumeQueue", store="mapped_file_size_consume_queue"
    )
    max_message_size: int = _f(4 * 1024 * 1024, "maxMessageSize", store="max_message_size")
    flush_interval_commit_log: float = _f(0.5, "flushIntervalCommitLog", "ms", store="flush_interval_commit_log")
    sync_flush_timeout: float = _f(5.0, "syncFlushTimeout", "ms", store="sync_flush_timeout")
    flush_interval_consume_queue: float = _f(
        1.0, "flushIntervalConsumeQueue", "ms", store="flush_interval_consume_queue"
    )
    # pocketmq's own: a put waits for the dispatcher when it is this far behind (docs/storage.md 9.2).
    max_dispatch_lag_bytes: int = _f(1024 * 1024, "maxDispatchLagBytes", store="max_dispatch_lag_bytes")
    file_reserved_time: float = _f(72.0, "fileReservedTime", store="file_reserved_time")  # hours
    delete_when: str = _f("04", "deleteWhen", store="delete_when")
    disk_max_used_space_ratio: int = _f(75, "diskMaxUsedSpaceRatio", store="disk_max_used_space_ratio")
    # Percent (or fraction) of the disk above which writes are refused / young files are deleted.
    disk_space_warning_level_ratio: float = _f(
        0.90, "diskSpaceWarningLevelRatio", store="disk_space_warning_level_ratio")
    disk_space_clean_forcibly_ratio: float = _f(
        0.85, "diskSpaceCleanForciblyRatio", store="disk_space_clean_forcibly_ratio")
    # pocketmq's own: the put path checks the disk every this many bytes (docs/broker.md, "What survives what").
    disk_space_check_bytes: int = _f(4 * 1024 * 1024, "diskSpaceCheckBytes", store="disk_space_check_bytes")
    # pocketmq's own: consume-queue files kept mapped (0: half the open-files limit), see docs/broker.md.
    max_mapped_consume_queue_files: int = _f(0, "maxMappedConsumeQueueFiles", store="max_mapped_consume_queue_files")
    clean_resource_interval: float = _f(10.0, "cleanResourceInterval", "ms", store="clean_resource_interval")
    message_index_enable: bool = _f(True, "messageIndexEnable", store="message_index_enable")
    auto_message_version_on_topic_len: bool = _f(
        True, "autoMessageVersionOnTopicLen", store="auto_message_version_on_topic_len")
    max_hash_slot_num: int = _f(5_000_000, "maxHashSlotNum", store="max_hash_slot_num")
    max_index_num: int = _f(5_000_000 * 4, "maxIndexNum", store="max_index_num")
    message_delay_level: str = _f(DEFAULT_DELAY_LEVELS, "messageDelayLevel", store="message_delay_level")
    max_transfer_count_on_message_in_memory: int = _f(
        32, "maxTransferCountOnMessageInMemory", store="max_transfer_count_on_message_in_memory"
    )
    max_transfer_bytes_on_message_in_memory: int = _f(
        256 * 1024, "maxTransferBytesOnMessageInMemory", store="max_transfer_bytes_on_message_in_memory"
    )
    # Share of RAM within which a message counts as "in memory" (QUERY_CONSUMER_OFFSET's new-group rule).
    access_message_in_memory_max_ratio: int = _f(40, "accessMessageInMemoryMaxRatio")
    # Accepted so RocketMQ broker.conf files load; only the master roles are supported.
    broker_role: str = _f("ASYNC_MASTER", "brokerRole")

    # --- delayed messages ---
    flush_delay_offset_interval: float = _f(10.0, "flushDelayOffsetInterval", "ms")
    # RocketMQ 5's timer messages (docs/broker.md §4.6, docs/storage.md "Timer files")
    timer_wheel_enable: bool = _f(True, "timerWheelEnable", store="timer_wheel_enable")
    timer_precision_ms: int = _f(1000, "timerPrecisionMs", store="timer_precision_ms")
    timer_max_delay_sec: int = _f(3600 * 24 * 3, "timerMaxDelaySec", store="timer_max_delay_sec")
    timer_roll_window_slot: int = _f(3600 * 24 * 2, "timerRollWindowSlot", store="timer_roll_window_slot")
    mapped_file_size_timer_log: int = _f(
        100 * 1024 * 1024, "mappedFileSizeTimerLog", store="mapped_file_size_timer_log")
    timer_flush_interval: float = _f(1.0, "timerFlushIntervalMs", "ms", store="timer_flush_interval")
    # pocketmq's own: how often the timer threads look for work when idle (None: a tenth of the precision).
    timer_poll_interval: float | None = _f(None, "timerPollIntervalMs", "ms", store="timer_poll_interval")
    timer_enable_retry_until_success: bool = _f(
        False, "timerEnableRetryUntilSuccess", store="timer_enable_retry_until_success")

    @property
    def store_root(self) -> str:
        return os.path.abspath(os.path.expanduser(self.store_path_root_dir))
