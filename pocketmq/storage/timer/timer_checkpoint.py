"""TimerCheckpoint: ``config/timercheck``, where the timer store's progress is kept (RocketMQ 5's
store/timer/TimerCheckpoint, same bytes).

A 4096-byte file, big-endian longs: 0 lastReadTimeMs (the wheel is delivered up to this time), 8
lastTimerLogFlushPos, 16 lastTimerQueueOffset (rmq_sys_wheel_timer is enqueued up to this offset), 24
masterTimerQueueOffset, then the data version: 32 stateVersion, 40 timestamp, 48 counter. Written at each flush.
"""

from __future__ import annotations

import mmap
import os
import struct
import time

from pocketmq.common.constants import OS_PAGE_SIZE

from ..mapped_file import reserve_space, sync_file

_FIELDS = struct.Struct(">qqqqqqq")


class TimerCheckpoint:
    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.existed = os.path.exists(path) and os.path.getsize(path) > 0
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != OS_PAGE_SIZE:
                os.ftruncate(fd, OS_PAGE_SIZE)
            reserve_space(fd, 0, OS_PAGE_SIZE, path)  # (a write to a sparse page on a full disk is a SIGBUS)
            self.mm = mmap.mmap(fd, OS_PAGE_SIZE)
        finally:
            os.close(fd)
        (self.last_read_time_ms, self.last_timer_log_flush_pos, self.last_timer_queue_offset,
         self.master_timer_queue_offset, self.state_version, self.timestamp, self.counter) = _FIELDS.unpack_from(
            self.mm, 0)

    def update_data_version(self, state_version: int) -> None:
        """DataVersion.nextVersion: a new timestamp, the counter one up."""
        self.state_version = state_version
        self.timestamp = time.time_ns() // 1_000_000
        self.counter += 1

    def write(self) -> None:
        """The fields into the mapped page, not synced: a crash of the process (the page cache survives it)
        finds them; the flush service syncs them."""
        _FIELDS.pack_into(self.mm, 0, self.last_read_time_ms, self.last_timer_log_flush_pos,
                          self.last_timer_queue_offset, self.master_timer_queue_offset, self.state_version,
                          self.timestamp, self.counter)

    def flush(self) -> None:
        self.write()
        sync_file(self.path)  # (not mm.flush: msync holds the GIL, see sync_file)

    def shutdown(self) -> None:
        self.flush()
        self.mm.close()
