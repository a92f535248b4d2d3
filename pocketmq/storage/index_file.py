"""IndexFile: a hash index from "topic#key" to commit-log offsets, in one fixed-size file.

    header (40 bytes) | hash slots (4 bytes each) | index entries (20 bytes each)

A slot holds the number of the newest entry for its bucket; each entry links to the previous one
of the same bucket, so a lookup walks a chain from newest to oldest.
"""

from __future__ import annotations

import mmap
import os
import struct

from pocketmq.common.constants import INDEX_ENTRY_SIZE, INDEX_HASH_SLOT_SIZE, INDEX_HEADER_SIZE
from pocketmq.common.java_hash import java_string_hash

from .mapped_file import reserve_space, sync_file

HEADER = struct.Struct(">qqqqii")
ENTRY = struct.Struct(">iqii")
_INT = struct.Struct(">i")
_MAX_INT = 0x7FFFFFFF


def key_hash(key: str) -> int:
    """abs(String.hashCode), and 0 for Integer.MIN_VALUE whose abs is still negative."""
    h = abs(java_string_hash(key))
    return 0 if h > _MAX_INT else h


class IndexFile:
    __slots__ = ("path", "hash_slot_num", "index_num", "file_size", "mm", "_open", "begin_timestamp",
                 "end_timestamp", "begin_phy_offset", "end_phy_offset", "hash_slot_count", "index_count",
                 "entries_base")

    def __init__(self, path: str, hash_slot_num: int, index_num: int) -> None:
        self.path = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE
        self.entries_base = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE
        exists = os.path.exists(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if not exists or size == 0:
                try:
                    os.ftruncate(fd, self.file_size)
                    # Slots are written anywhere in the file: reserve all of it (a full disk must not fault).
                    reserve_space(fd, 0, self.file_size, path)
                except OSError:
                    os.close(fd)
                    fd = -1
                    os.unlink(path)
                    raise
            elif size != self.file_size:
                raise ValueError(f"{path} is {size} bytes, expected {self.file_size} for this slot/index count")
            self.mm = mmap.mmap(fd, self.file_size)
        finally:
            if fd >= 0:
                os.close(fd)  # the mapping holds its own descriptor
        self._open = True
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, self.index_count) = HEADER.unpack_from(self.mm, 0)
        if self.index_count <= 0:
            self.index_count = 1  # entry 0 is never used: 0 means "empty" in slots and links
            self._write_header()
        else:
            self._roll_forward()

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def _write_header(self) -> None:
        HEADER.pack_into(self.mm, 0, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset,
                         self.end_phy_offset, self.hash_slot_count, self.index_count)

    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def entry_count(self) -> int:
        return self.index_count - 1

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        return self.put_hashed(key_hash(key), phy_offset, store_timestamp)

    def put_hashed(self, h: int, phy_offset: int, store_timestamp: int) -> bool:
        """put_key for a key whose hash (key_hash) is already known.

        The header is written at the first entry and then by sync_header() (once per dispatch
        round), not per entry; load() rolls forward over entries a crash left past the header.
        """
        n = self.index_count
        if n >= self.index_num:
            return False
        slot_pos = INDEX_HEADER_SIZE + (h % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE
        mm = self.mm
        slot_value = _INT.unpack_from(mm, slot_pos)[0]
        if slot_value <= 0 or slot_value > n:
            slot_value = 0
            self.hash_slot_count += 1
        if n <= 1:
            # A file's times count from its first entry: a file seeded with the full one's end time would give
            # this entry the idle time between the two as its own (RocketMQ resets the begin after the diff).
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        begin = self.begin_timestamp
        if begin <= 0:
            time_diff = 0
        else:
            time_diff = (store_timestamp - begin) // 1000
            if time_diff < 0:
                time_diff = 0
            elif time_diff > _MAX_INT:
                time_diff = _MAX_INT
        ENTRY.pack_into(mm, self.entries_base + n * INDEX_ENTRY_SIZE, h, phy_offset, time_diff, slot_value)
        _INT.pack_into(mm, slot_pos, n)
        self.index_count = n + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        if n <= 1:
            self._write_header()
        return True

    def tail_entries_at(self, phy_offset: int) -> int:
        """How many of the last entries point at the record at ``phy_offset`` (a record's keys are written one after
        another at the tail)."""
        n = self.index_count - 1
        while n >= 1 and ENTRY.unpack_from(self.mm, self.entries_base + n * INDEX_ENTRY_SIZE)[1] == phy_offset:
            n -= 1
        return self.index_count - 1 - n

    def sync_header(self) -> None:
        """Write the in-memory header fields to the mapped file."""
        self._write_header()

    def _roll_forward(self) -> None:
        """Entries are written before the header that counts them: after a crash, count the
        entries found past indexCount (a never-written entry is all zeros)."""
        n = self.index_count
        found = False
        while n < self.index_num:
            kh, phy, diff, prev = ENTRY.unpack_from(self.mm, self.entries_base + n * INDEX_ENTRY_SIZE)
            if not (kh or phy or diff or prev) or prev >= n:
                break
            if prev == 0:
                self.hash_slot_count += 1
            self.end_phy_offset = phy
            self.end_timestamp = max(self.end_timestamp, self.begin_timestamp + diff * 1000)
            n += 1
            found = True
        if found:
            self.index_count = n
            self._write_header()

    def is_time_matched(self, begin: int, end: int) -> bool:
        return (begin < self.begin_timestamp and end > self.end_timestamp) or (
            self.begin_timestamp <= begin <= self.end_timestamp) or (
            self.begin_timestamp <= end <= self.end_timestamp)

    def select_phy_offset(self, out: list[int], key: str, max_num: int, begin: int, end: int) -> None:
        h = key_hash(key)
        mm = self.mm
        slot_value = _INT.unpack_from(mm, INDEX_HEADER_SIZE + (h % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE)[0]
        # Bounded by the file, not by index_count: the C index step writes a record's entries and their slots
        # before the dispatcher raises index_count, and a query between the two must still follow the slots (an
        # entry is always written before the slot that names it; load() rolls a crash's entries forward).
        bound = self.index_num
        if slot_value <= 0 or slot_value >= bound or self.index_count <= 1:
            return
        nxt = slot_value
        while len(out) < max_num:
            kh, phy, diff, prev = ENTRY.unpack_from(mm, self.entries_base + nxt * INDEX_ENTRY_SIZE)
            if diff < 0:
                break
            # An entry keeps its time to the second below: it was stored in [time_read, time_read + 999].
            time_read = self.begin_timestamp + diff * 1000
            if kh == h and begin - 999 <= time_read <= end:
                out.append(phy)
            if prev <= 0 or prev >= bound or prev == nxt or time_read + 999 < begin:
                break
            nxt = prev

    def slot_value(self, slot: int) -> int:
        return _INT.unpack_from(self.mm, INDEX_HEADER_SIZE + slot * INDEX_HASH_SLOT_SIZE)[0]

    def entry(self, n: int) -> tuple[int, int, int, int]:
        """(keyHash, phyOffset, timeDiff, prevIndex) of entry n."""
        return ENTRY.unpack_from(self.mm, self.entries_base + n * INDEX_ENTRY_SIZE)

    def flush(self) -> None:
        self._write_header()
        sync_file(self.path)

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self.mm.close()
            except BufferError:
                pass

    def destroy(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
