"""StoreCheckpoint: how far each kind of file is known to be on disk, as store timestamps.

A 4096-byte mapped file; bytes 0-7 physicMsgTimestamp, 8-15 logicsMsgTimestamp,
16-23 indexMsgTimestamp, the rest zero.
"""

from __future__ import annotations

import mmap
import os
import struct

from pocketmq.common.constants import OS_PAGE_SIZE

from .mapped_file import reserve_space

_FIELDS = struct.Struct(">qqq")
_LONG = struct.Struct(">q")


def _field(pos: int) -> property:
    """A timestamp that lives in the mapped page: every update lands there at once, so after a process
    crash (the page cache survives it) recovery starts from recent values, not from the last flush."""
    name = f"_f{pos}"

    def get(self) -> int:
        return getattr(self, name)

    def put(self, value: int) -> None:
        setattr(self, name, value)
        _LONG.pack_into(self.mm, pos, value)

    return property(get, put)


class StoreCheckpoint:
    physic_msg_timestamp = _field(0)
    logics_msg_timestamp = _field(8)
    index_msg_timestamp = _field(16)

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size != OS_PAGE_SIZE:
            os.ftruncate(self._fd, OS_PAGE_SIZE)
        reserve_space(self._fd, 0, OS_PAGE_SIZE, path)  # (a write to a sparse page on a full disk is a SIGBUS)
        self.mm = mmap.mmap(self._fd, OS_PAGE_SIZE)
        self._f0, self._f8, self._f16 = _FIELDS.unpack_from(self.mm, 0)

    def flush(self) -> None:
        _FIELDS.pack_into(self.mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp,
                          self.index_msg_timestamp)
        os.fdatasync(self._fd)  # (not mm.flush: msync holds the GIL, see mapped_file.sync_file)

    def get_min_timestamp(self) -> int:
        """min(physic, logics) - 3 s: the newest point all files are certainly past (RocketMQ's margin)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    def shutdown(self) -> None:
        self.flush()
        self.mm.close()
        os.close(self._fd)
