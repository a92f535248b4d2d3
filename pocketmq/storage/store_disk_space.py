"""DefaultMessageStore's disk-full rule: puts are refused while the disk is above diskSpaceWarningLevelRatio or
has less free than a store file failed to reserve, and accepted again as soon as there is room (RocketMQ's
RunningFlags disk-full bit, as its CleanCommitLogService sets it)."""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable

from .commit_log import CommitLog
from .config import MessageStoreConfig
from .results import PutMessageResult, PutMessageStatus
from .running_flags import RunningFlags

log = logging.getLogger("pocketmq.storage.message_store")


class StoreDiskSpace:
    """The disk checks of DefaultMessageStore's put path (a mixin: the state is the store's)."""

    config: MessageStoreConfig
    commit_log: CommitLog
    running_flags: RunningFlags
    disk_usage: Callable[[str], float]
    disk_free: Callable[[str], int]
    _free_needed: int
    _next_disk_recheck: float

    def _disk_refusal(self) -> PutMessageResult | None:
        """Why the disk cannot take more now (usage above disk_space_warning_level_ratio, or less free than a
        file failed to reserve), or None."""
        cfg = self.config
        path = cfg.store_path_commit_log
        usage = self.disk_usage(path)
        if usage > cfg.disk_space_warning_level_ratio:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark=(
                f"the disk is full: {usage:.0%} used, above diskSpaceWarningLevelRatio "
                f"{cfg.disk_space_warning_level_ratio:.0%}; writes resume once space is freed"))
        if self._free_needed:
            free = self.disk_free(path)
            if 0 <= free < self._free_needed:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark=(
                    f"the disk is full: {free} bytes free, a store file needs {self._free_needed}; "
                    "writes resume once space is freed"))
        return None

    def _check_space(self) -> PutMessageResult | None:
        """The put path's disk check (CommitLog._writable_file, under the put lock): refuse and mark the disk
        full when there is no room."""
        refusal = self._disk_refusal()
        if refusal is not None:
            if not self.running_flags.is_disk_full():
                log.error("refusing puts: %s", refusal.remark)
            self.running_flags.make_disk_full()
            self._next_disk_recheck = time.monotonic() + self.config.disk_recheck_interval
        return refusal

    def _file_failed(self, e: OSError) -> PutMessageResult:
        """A commit-log file that could not be created or reserved: refuse the put, and on a full disk refuse
        every put until space comes back."""
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            self._free_needed = self.commit_log.file_size
            if not self.running_flags.is_disk_full():
                log.error("cannot create the next commit-log file (%s): refusing puts until %d bytes are free",
                          e, self._free_needed)
            self.running_flags.make_disk_full()
            self._next_disk_recheck = time.monotonic() + self.config.disk_recheck_interval
        else:
            log.error("cannot create the next commit-log file: %s", e)
        return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED, remark=f"commit-log file: {e}")

    def _recheck_disk(self) -> None:
        """While only a full disk blocks writes: look again (at most every disk_recheck_interval), and accept
        writes again as soon as there is room, without waiting for the clean service's next round."""
        now = time.monotonic()
        if now < self._next_disk_recheck:
            return
        self._next_disk_recheck = now + self.config.disk_recheck_interval
        if self._disk_refusal() is None:
            self._free_needed = 0
            self.running_flags.make_disk_ok()
            log.warning("disk space is back: accepting puts again")
