"""MessageStoreConfig: RocketMQ's store settings and defaults, with intervals in seconds."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum

from pocketmq.common.message import pack_host


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"


@dataclass
class MessageStoreConfig:
    """The store's settings (RocketMQ's MessageStoreConfig); intervals in seconds."""

    store_path_root_dir: str = field(default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"))
    store_host: str = "127.0.0.1"
    store_port: int = 10911

    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64  # cap on index query results
    message_index_enable: bool = True
    # RocketMQ 5: a topic of more than 127 characters (a retry topic) is written as a version 2 record; when
    # false it is refused (MESSAGE_ILLEGAL), as RocketMQ 4 does.
    auto_message_version_on_topic_len: bool = True

    max_message_size: int = 4 * 1024 * 1024

    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: float = 0.5
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: float = 10.0
    sync_flush_timeout: float = 5.0
    flush_interval_consume_queue: float = 1.0
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: float = 60.0

    check_crc_on_recover: bool = True

    # WarmMappedFileService: read this many commit-log bytes ahead of the writer into the page cache
    # (0 turns it off). See storage/warm_service.py and docs/storage.md.
    warm_mapped_file_ahead: int = 32 * 1024 * 1024

    # A put that leaves the dispatcher more than this many bytes behind waits until it is back under half
    # of it (0: never wait). The GIL, not the CPU, is what the dispatcher lacks: see docs/storage.md 9.2.
    max_dispatch_lag_bytes: int = 1024 * 1024

    # Pull limits (DefaultMessageStore.getMessage / isTheBatchFull).
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024

    # Cleanup (CleanCommitLogService / CleanConsumeQueueService).
    file_reserved_time: float = 72.0  # hours
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75  # percent
    disk_space_clean_forcibly_ratio: float = 0.85
    disk_space_warning_level_ratio: float = 0.90
    clean_resource_interval: float = 10.0
    clean_file_forcibly_enable: bool = True
    delete_files_batch_max: int = 10

    # pocketmq's own: the put path checks the disk every this many bytes appended and at every new commit-log
    # file, refusing puts above disk_space_warning_level_ratio; once refused, a put looks again at most every
    # disk_recheck_interval seconds and writes resume as soon as there is room (docs/broker.md, "What survives
    # what").
    disk_space_check_bytes: int = 4 * 1024 * 1024
    disk_recheck_interval: float = 0.1

    # pocketmq's own: consume-queue files kept mapped at most (each mapping holds a descriptor); the least
    # recently written queues are unmapped past it (ConsumeQueueLru). 0: half the open-files limit at load.
    max_mapped_consume_queue_files: int = 0

    message_delay_level: str = DEFAULT_DELAY_LEVELS

    # RocketMQ 5's timer messages (storage/timer/, docs/storage.md "Timer files"). RocketMQ rounds the precision
    # to 100, 200, 500 or 1000 ms; pocketmq takes any number of milliseconds (tests run at 10 ms). The intervals
    # are pocketmq's (RocketMQ: 100 * precision / 1000 ms between polls, 1 s between flushes).
    timer_wheel_enable: bool = True
    timer_precision_ms: int = 1000
    timer_max_delay_sec: int = 3600 * 24 * 3
    timer_roll_window_slot: int = 3600 * 24 * 2
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    timer_flush_interval: float = 1.0
    timer_poll_interval: float | None = None  # None: precision / 10
    timer_enable_retry_until_success: bool = False

    def __post_init__(self) -> None:
        # The getter in RocketMQ rounds the consume-queue file size up to whole 20-byte entries.
        self.mapped_file_size_consume_queue = -(-self.mapped_file_size_consume_queue // 20) * 20
        self.flush_disk_type = FlushDiskType(self.flush_disk_type)
        if self.timer_precision_ms < 1:
            raise ValueError(f"timerPrecisionMs must be >= 1, got {self.timer_precision_ms}")
        # RocketMQ 5's broker.conf gives these two in percent (90, 85); 4.x's system properties as fractions.
        if self.disk_space_warning_level_ratio > 1:
            self.disk_space_warning_level_ratio /= 100
        if self.disk_space_clean_forcibly_ratio > 1:
            self.disk_space_clean_forcibly_ratio /= 100

    @property
    def store_host_bytes(self) -> bytes:
        return pack_host(self.store_host, self.store_port)

    @property
    def store_path_commit_log(self) -> str:
        return os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def store_path_consume_queue(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def timer_wheel_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "timerwheel")

    @property
    def timer_log_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "timerlog")

    @property
    def timer_check_path(self) -> str:
        """RocketMQ keeps it with the broker's JSON files (BrokerPathConfigHelper.getTimerCheckPath)."""
        return os.path.join(self.store_path_root_dir, "config", "timercheck")

    @property
    def store_path_index(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    def effective_max_mapped_consume_queue_files(self) -> int:
        if self.max_mapped_consume_queue_files > 0:
            return self.max_mapped_consume_queue_files
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, OSError, ValueError):  # (no resource module on Windows)
            return 4096
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return 65536
        return max(64, soft // 2)

    def effective_disk_max_used_space_ratio(self) -> int:
        return min(max(self.disk_max_used_space_ratio, 10), 95)


_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str, key: str = "messageDelayLevel") -> list[int]:
    """messageDelayLevel → delay in ms per level (level 1 is index 0). Accepts "ms" too, for tests. (Also
    popCkRewriteIntervals, a list of the same form: ``key`` names it in the errors.)

    ValueError for a token that is no number and unit, or for no level at all (RocketMQ's broker does not start
    then; one that started would refuse every delayed send and every consumer's send-back)."""
    out = []
    for token in spec.split():
        number, unit = (token[:-2], 1) if token.endswith("ms") else (token[:-1], _UNITS.get(token[-1:]))
        if unit is None or not number.isdigit():
            raise ValueError(f"{key} {spec!r}: {token!r} is not a whole number followed by ms, s, m, h "
                             f"or d")
        out.append(int(number) * unit)
    if not out:
        raise ValueError(f"{key} is empty: give at least one level, e.g. '1s 5s 10s'")
    return out
