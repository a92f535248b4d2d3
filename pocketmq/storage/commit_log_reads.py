"""CommitLog's reads: a record, or a run of them, copied from the mapped files (RocketMQ's CommitLog.getMessage and
getData), a record's size and store timestamp (pickupStoreTimestamp), and the log's bounds."""

from __future__ import annotations

import struct

from pocketmq.common.record_layout import (
    SIZE_MAGIC,
    SYSFLAG_POS,
    TOPIC_LENGTH_SIZES,
    field_positions,
    field_struct,
    host_lengths,
)

from .mapped_file_queue import MappedFileQueue

_SYSFLAG = field_struct("SYSFLAG")
_STORE_TIMESTAMP = field_struct("STORETIMESTAMP")


class CommitLogReads:
    """The reads of CommitLog (a mixin: the state is the log's)."""

    mapped_file_queue: MappedFileQueue
    file_size: int

    def get_min_offset(self) -> int:
        return self.mapped_file_queue.get_min_offset()

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    def get_message(self, offset: int, size: int) -> bytes | None:
        """The raw record at `offset` (a copy sliced from the mapped file), or None when it is gone."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if pos + size > mf.wrote_position:
            return None
        try:
            return mf.mm[pos:pos + size]
        except ValueError:  # the file was deleted (mmap closed) under us
            return None

    def get_messages(self, offsets: tuple[int, ...], sizes: tuple[int, ...], total: int) -> list[bytes] | None:
        """The raw records at ``offsets`` (ascending, ``total`` bytes in all), one slice if they are adjacent;
        None unless all are written and in one file."""
        first = offsets[0]
        mf = self.mapped_file_queue.find_mapped_file_by_offset(first)
        if mf is None:
            return None
        base = mf.file_from_offset
        end = offsets[-1] + sizes[-1] - base
        if end > mf.wrote_position:
            return None
        try:
            mm = mf.mm
            if end - (first - base) == total:
                return [mm[first - base:end]]
            return [mm[p - base:p - base + s] for p, s in zip(offsets, sizes, strict=True)]
        except ValueError:  # the file was deleted (mmap closed) under us
            return None

    def read_size_at(self, offset: int) -> int:
        """TOTALSIZE of the record at `offset`, or -1."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        if pos + 8 > mf.wrote_position:
            return -1
        try:
            size, magic = SIZE_MAGIC.unpack_from(mf.mm, pos)
        except ValueError:
            return -1
        return size if magic in TOPIC_LENGTH_SIZES else -1

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at `offset` (its position moves with an IPv6 born host)."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        try:
            sys_flag = _SYSFLAG.unpack_from(mf.mm, pos + SYSFLAG_POS)[0]
            ts_pos = pos + field_positions(*host_lengths(sys_flag))["STORETIMESTAMP"]
            return _STORE_TIMESTAMP.unpack_from(mf.mm, ts_pos)[0]
        except (ValueError, struct.error):
            return -1
