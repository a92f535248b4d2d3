"""TimerWheel: the file ``timerwheel``, one 32-byte slot per ``precision`` of time (RocketMQ 5's
store/timer/TimerWheel and Slot, same bytes).

``slots_total * 2`` slots, big-endian: time / precision 8 | first pos 8 | last pos 8 | num 4 | magic 4. A slot
belongs to the time it names: one read for another time (the wheel turned since) is an empty slot. Its
positions are the first and last timer-log units of that time; the units link back from last to first.
Slots are read and written in the mapping itself (RocketMQ keeps a copy in memory and writes the changed bytes
at each flush); recovery revises them from the timer log either way.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..mapped_file import reserve_space, sync_file

SLOT_SIZE = 32
BLANK = -1
IGNORE = -2

_SLOT = struct.Struct(">qqqii")
_TIME_FIRST = struct.Struct(">qq")
_LONG = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class Slot:
    """RocketMQ's Slot: one time's slot of the wheel, where its timer-log units start and end."""

    time_ms: int
    first_pos: int
    last_pos: int
    num: int = 0
    magic: int = 0


EMPTY_SLOT = Slot(-1, -1, -1)


def data_ranges(path: str, length: int) -> list[tuple[int, int]]:
    """Slot-aligned ranges of the wheel file that may hold data: the file is sparse, and SEEK_DATA / SEEK_HOLE
    (which see dirty mapped pages too) find its written pages; all of it where the OS cannot tell."""
    if not hasattr(os, "SEEK_DATA"):
        return [(0, length)]
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < length:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # nothing after pos
                    break
                return [(0, length)]
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), length)
            out.append((data - data % SLOT_SIZE, -(-hole // SLOT_SIZE) * SLOT_SIZE))
            pos = hole
    finally:
        os.close(fd)
    return out


class TimerWheel:
    def __init__(self, path: str, slots_total: int, precision_ms: int) -> None:
        self.path = path
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self.wheel_length = slots_total * 2 * SLOT_SIZE
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size not in (0, self.wheel_length):
                raise ValueError(f"Timer wheel length:{size} != expected:{self.wheel_length} ({path})")
            if size == 0:
                os.ftruncate(fd, self.wheel_length)  # sparse: the slots touched take disk space
            self.mm = mmap.mmap(fd, self.wheel_length)
        except BaseException:
            os.close(fd)
            raise
        # Kept open: each page gets its disk blocks before its first touch (_reserve). Touched first through the
        # mapping, a page a full disk cannot back is a SIGBUS, which kills the process; reserved first, it is an
        # OSError (ENOSPC) the caller can refuse on. Reserving the whole wheel (~19 MB) up front would take a
        # small disk's room, and the file's holes tell recovery which slots were never written (data_ranges).
        self._fd = fd
        self._reserved = bytearray(-(-self.wheel_length // mmap.PAGESIZE))

    def slot_index(self, time_ms: int) -> int:
        return time_ms // self.precision_ms % (self.slots_total * 2)

    def _reserve(self, at: int) -> None:
        page = at // mmap.PAGESIZE
        if not self._reserved[page]:
            reserve_space(self._fd, page * mmap.PAGESIZE, mmap.PAGESIZE, self.path)  # (OSError on a full disk)
            self._reserved[page] = 1

    def reserve_slot(self, time_ms: int) -> None:
        """Give the slot's page its disk blocks before it is written; OSError (ENOSPC) when the disk is full."""
        self._reserve(self.slot_index(time_ms) * SLOT_SIZE)

    def get_raw_slot(self, time_ms: int) -> Slot:
        at = self.slot_index(time_ms) * SLOT_SIZE
        try:
            self._reserve(at)  # (a read of a hole faults on tmpfs too)
        except OSError:
            return EMPTY_SLOT  # a page that cannot be given blocks has none: a hole, never written
        t, first, last, num, magic = _SLOT.unpack_from(self.mm, at)
        return Slot(t * self.precision_ms, first, last, num, magic)

    def get_slot(self, time_ms: int) -> Slot:
        """The slot of ``time_ms``, or EMPTY_SLOT when the one there belongs to another time."""
        slot = self.get_raw_slot(time_ms)
        if slot.time_ms != time_ms // self.precision_ms * self.precision_ms:
            return EMPTY_SLOT
        return slot

    def put_slot(self, time_ms: int, first_pos: int, last_pos: int, num: int = 0, magic: int = 0) -> None:
        at = self.slot_index(time_ms) * SLOT_SIZE
        self._reserve(at)
        _SLOT.pack_into(self.mm, at, time_ms // self.precision_ms, first_pos, last_pos, num, magic)

    def revise_slot(self, time_ms: int, first_pos: int, last_pos: int, force: bool) -> None:
        """Set a slot's positions (IGNORE keeps one); a slot of another time is replaced only when ``force``."""
        at = self.slot_index(time_ms) * SLOT_SIZE
        self._reserve(at)
        stored, old_first = _TIME_FIRST.unpack_from(self.mm, at)
        if stored != time_ms // self.precision_ms:
            if force:
                self.put_slot(time_ms, first_pos if first_pos != IGNORE else last_pos, last_pos)
            return
        if first_pos != IGNORE:
            _LONG.pack_into(self.mm, at + 8, first_pos)
        if last_pos != IGNORE:
            _LONG.pack_into(self.mm, at + 16, last_pos)

    def _live_slots(self, time_start_ms: int) -> Iterator[tuple[int, int, int, int]]:
        """(first pos, last pos, num, magic) of every live slot of the wheel's turn from ``time_start_ms``.

        A slot written for time t sits at index t % (2 * slots_total), so it is live when its stored time
        falls within the turn. Only the parts of the file that hold data are read: the file is sparse, and a
        store that used a few slots has a few pages."""
        lo = time_start_ms // self.precision_ms
        hi = lo + self.slots_total * 2
        for start, stop in data_ranges(self.path, self.wheel_length):
            for t, first, last, num, magic in _SLOT.iter_unpack(self.mm[start:stop]):
                if lo <= t < hi:
                    yield first, last, num, magic

    def check_phy_pos(self, time_start_ms: int, max_offset: int) -> int:
        """The smallest first position of the live slots whose last position is at or past ``max_offset`` (units
        the timer log lost): where recovery must revise from. A large number when there is none. (RocketMQ's
        checkPhyPos takes only those past it, so a slot whose last unit was the first one lost keeps pointing at
        it, and the units before it in the slot are never delivered.)"""
        return min((first for first, last, _, _ in self._live_slots(time_start_ms) if last >= max_offset),
                   default=1 << 63)

    def get_all_num(self, time_start_ms: int) -> int:
        """Messages waiting in the live slots from ``time_start_ms`` on (TimerWheel.getAllNum)."""
        return sum(num for _, _, num, _ in self._live_slots(time_start_ms))

    def flush(self) -> None:
        sync_file(self.path)  # (not mm.flush: msync holds the GIL, see sync_file)

    def shutdown(self) -> None:
        self.flush()
        self.mm.close()
        os.close(self._fd)
