"""File cleanup: CleanCommitLogService then CleanConsumeQueueService, every clean_resource_interval.

Commit-log files older than fileReservedTime go at the deleteWhen hour, or at any hour once the disk
passes diskMaxUsedSpaceRatio; above 85 % even young files go (cleanFileForciblyEnable); above 90 %
writes are refused until usage drops. Queue and index files below the log's new minimum follow.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TYPE_CHECKING

from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore


def disk_usage_ratio(path: str) -> float:
    """Used fraction of the file system holding `path`, as UtilAll.getDiskPartitionSpaceUsedPercent (and df's Use%)
    count it: used over used plus what this user may still take, rounded up to a whole percent; -1 when it cannot
    be read.

    Blocks reserved for root count in neither part. Counting them as used (total minus available over total) read
    a disk df shows 59 % full as 85 % full, and the clean service then deleted young commit-log files forcibly.
    """
    try:
        while not os.path.exists(path):
            path = os.path.dirname(path) or "."
        st = os.statvfs(path)
    except OSError:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if st.f_blocks <= 0 or entire <= 0:
        return -1.0
    return -(-used * 100 // entire) / 100


def disk_free_bytes(path: str) -> int:
    """Bytes free (to this user) on the file system holding `path`; -1 when it cannot be read."""
    try:
        while not os.path.exists(path):
            path = os.path.dirname(path) or "."
        return shutil.disk_usage(path).free
    except OSError:
        return -1


class CleanService(ServiceThread):
    name = "clean"

    def __init__(self, store: DefaultMessageStore) -> None:
        super().__init__()
        self.store = store
        self.clean_immediately = False
        self.manual_delete_remaining = 0
        self._last_cq_min_offset = 0

    def run(self) -> None:
        while not self.stopped:
            self._stopped.wait(self.store.config.clean_resource_interval)
            if not self.stopped:
                self.survive(self.run_once)

    def run_once(self, now_ms: int | None = None) -> int:
        """One cleaning round; returns how many commit-log files were deleted."""
        deleted = self.delete_expired_commit_log_files(now_ms)
        self.delete_expired_consume_queue_files()
        return deleted

    def is_space_to_delete(self) -> bool:
        cfg = self.store.config
        store = self.store
        usage = store.disk_usage(cfg.store_path_commit_log)
        self.clean_immediately = False
        if usage > cfg.disk_space_warning_level_ratio:
            store.running_flags.make_disk_full()
            self.clean_immediately = True
        elif usage > cfg.disk_space_clean_forcibly_ratio:
            self.clean_immediately = True
        else:
            store.running_flags.make_disk_ok()
        return usage < 0 or usage > cfg.effective_disk_max_used_space_ratio() / 100

    def _is_time_to_delete(self, now_ms: int) -> bool:
        hour = time.localtime(now_ms / 1000).tm_hour
        return any(h.strip() and int(h) == hour for h in self.store.config.delete_when.split(";"))

    def delete_expired_commit_log_files(self, now_ms: int | None = None) -> int:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        space = self.is_space_to_delete()
        manual = self.manual_delete_remaining > 0
        if manual:
            self.manual_delete_remaining -= 1
        if not (self._is_time_to_delete(now_ms) or space or manual):
            return 0
        cfg = self.store.config
        force = cfg.clean_file_forcibly_enable and self.clean_immediately
        expired_ms = cfg.file_reserved_time * 3600 * 1000
        mfq = self.store.commit_log.mapped_file_queue
        count = 0
        for mf in mfq.files[:-1][:cfg.delete_files_batch_max]:
            if force or now_ms - mf.last_modified() * 1000 >= expired_ms:
                count += 1
            else:
                break
        if count:
            mfq.delete_first_files(count)
        return count

    def delete_expired_consume_queue_files(self) -> None:
        min_offset = self.store.commit_log.get_min_offset()
        if min_offset <= self._last_cq_min_offset:
            return
        self._last_cq_min_offset = min_offset
        for cq in list(self.store.consume_queue_table.values()):
            cq.delete_expired_file(min_offset)
        self.store.index_service.delete_expired_file(min_offset)
