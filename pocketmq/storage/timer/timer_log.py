"""TimerLog: the append-only log of timer units (RocketMQ 5's store/timer/TimerLog, same bytes).

A unit is 52 bytes, big-endian (docs/storage.md, "Timer files"):

    size 4 (52) | prev pos 8 | magic 4 | enqueue time 8 | delay 4 | commit-log offset 8 | size 4 |
    real-topic hash 4 | reserved 8

``prev pos`` links the units of one wheel slot, newest first; the delivery time is enqueue time + delay. A file
ends with a 16-byte blank (size, 0, BLANK_MAGIC_CODE) once the next unit does not fit.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..mapped_file import MappedFile
from ..mapped_file_queue import MappedFileQueue

UNIT_SIZE = 52
UNIT_PRE_SIZE_FOR_MSG = 28  # where the commit-log offset starts in a unit
UNIT_PRE_SIZE_FOR_METRIC = 40  # where the topic hash starts
MIN_BLANK_LEN = 16
BLANK_MAGIC_CODE = -875286124  # 0xBBCCDDEE ^ (1880681586 + 8) as a Java int: 0xCBD43194, the commit log's blank too

MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2

UNIT = struct.Struct(">iqiqiqiiq")
_HEAD = struct.Struct(">iqi")  # size, prev pos, magic: what a blank has too


def is_magic_ok(magic: int) -> bool:
    return (magic | 0xF) == 0xF


def need_roll(magic: int) -> bool:
    return bool(magic & MAGIC_ROLL)


def need_delete(magic: int) -> bool:
    return bool(magic & MAGIC_DELETE)


@dataclass(frozen=True, slots=True)
class TimerLogUnit:
    """One unit of the timer log as read back, with its position."""

    pos: int
    prev_pos: int
    magic: int
    enqueue_time: int
    delayed_time: int  # enqueue time + delay: the slot's time
    offset_py: int
    size_py: int
    hash_topic: int


def pack_unit(prev_pos: int, magic: int, enqueue_time: int, delayed_time: int, offset_py: int, size_py: int,
              hash_topic: int) -> bytes:
    return UNIT.pack(UNIT_SIZE, prev_pos, magic, enqueue_time, delayed_time - enqueue_time, offset_py, size_py,
                     hash_topic, 0)


class TimerLog:
    def __init__(self, store_path: str, file_size: int) -> None:
        self.file_size = file_size
        # Disk space is reserved as the log grows, not 100 MiB at once per file.
        self.mapped_file_queue = MappedFileQueue(store_path, file_size, reserve_chunk=min(file_size, 1 << 20))

    def load(self) -> None:
        self.mapped_file_queue.load()

    @property
    def files(self) -> list[MappedFile]:
        return self.mapped_file_queue.files

    def append(self, data: bytes) -> int:
        """Append one unit; its position in the log. Raises OSError when no file can be had (disk full)."""
        mfq = self.mapped_file_queue
        mf = mfq.get_last_mapped_file(0)
        if len(data) + MIN_BLANK_LEN > self.file_size - mf.wrote_position:
            blank_len = self.file_size - mf.wrote_position
            mf.reserve_to(mf.wrote_position + MIN_BLANK_LEN)
            _HEAD.pack_into(mf.mm, mf.wrote_position, blank_len, 0, BLANK_MAGIC_CODE)
            mf.wrote_position = self.file_size
            mf = mfq.get_last_mapped_file(0)
        pos = mf.wrote_position
        mf.reserve_to(pos + len(data) + (1 << 20))
        mf.mm[pos:pos + len(data)] = data
        mf.wrote_position = pos + len(data)
        return mf.file_from_offset + pos

    def read_unit(self, pos: int) -> TimerLogUnit | None:
        """The unit at ``pos``; None when its file is gone or what is there is not a unit."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(pos)
        if mf is None or not mf.available:
            return None
        at = pos - mf.file_from_offset
        if at + UNIT_SIZE > self.file_size:
            return None
        try:
            size, prev, magic, enq, delay, offset_py, size_py, hash_topic, _ = UNIT.unpack_from(mf.mm, at)
        except (ValueError, struct.error):  # (a mapping closed meanwhile)
            return None
        if size != UNIT_SIZE or not is_magic_ok(magic):
            return None
        return TimerLogUnit(pos, prev, magic, enq, enq + delay, offset_py, size_py, hash_topic)

    def offset_for_last_unit(self) -> int:
        """Where the last unit of a full file starts (TimerLog.getOffsetForLastUnit)."""
        fs = self.file_size
        return fs - (fs - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE

    def last_unit_of(self, mf: MappedFile) -> TimerLogUnit | None:
        """The last unit of a full file: at offset_for_last_unit, or before it when the file's blank came
        earlier (a few steps at most: a blank is shorter than two units)."""
        at = self.offset_for_last_unit()
        for _ in range(4):
            if at < 0:
                return None
            unit = self.read_unit(mf.file_from_offset + at)
            if unit is not None:
                return unit
            at -= UNIT_SIZE
        return None

    def clean_expired_files(self, min_commit_log_offset: int) -> int:
        """Delete the leading files whose last unit points below the commit log's first offset: their messages
        are gone (deleteExpiredFileByOffsetForTimerLog). Never the last file, nor one whose last unit does not
        read as a unit (RocketMQ logs "Found error data" and stops: what it holds may still be due). Returns how
        many went."""
        deleted = 0
        while len(self.files) > 1:
            unit = self.last_unit_of(self.files[0])
            if unit is None or unit.offset_py >= min_commit_log_offset:
                break
            self.mapped_file_queue.delete_first_files(1)
            deleted += 1
        return deleted

    def flush(self) -> None:
        self.mapped_file_queue.flush(0)

    @property
    def flushed_where(self) -> int:
        return self.mapped_file_queue.flushed_where

    def shutdown(self) -> None:
        self.mapped_file_queue.flush_all()
        self.mapped_file_queue.shutdown()
