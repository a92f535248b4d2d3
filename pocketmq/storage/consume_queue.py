"""ConsumeQueue: the per topic-queue index into the commit log, 20 bytes per message.

Entry n (the message with queue offset n) sits at byte n * 20: commit-log offset (8),
record size (4), tags hash code (8).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from pocketmq.common.constants import CQ_PRE_BLANK_SIZE, CQ_STORE_UNIT_SIZE
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC

from .mapped_file import fault_in_page_by_page
from .mapped_file_queue import MappedFileQueue

CQ_ENTRY = struct.Struct(">qiq")
# Disk space a queue file reserves at a time, ahead of the dispatcher (whole entries: the dispatcher's fast
# path writes while an entry ends within the reserved bytes).
RESERVE_CHUNK = 3276 * CQ_STORE_UNIT_SIZE
_PRE_BLANK = CQ_ENTRY.pack(0, CQ_PRE_BLANK_SIZE, 0)
_pack_entry = CQ_ENTRY.pack_into
# _RUNS[n]: n entries one after another, what put_entries packs a run of n with (n <= _MAX_RUN).
_MAX_RUN = 64
_RUNS = tuple(struct.Struct(">" + CQ_ENTRY.format[1:] * n) for n in range(_MAX_RUN + 1))


class ConsumeQueue:
    def __init__(self, topic: str, queue_id: int, root: str, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size  # whole entries (MessageStoreConfig rounds it up to a multiple of 20)
        self.mapped_file_queue = MappedFileQueue(os.path.join(root, topic, str(queue_id)), file_size,
                                                 page_by_page=True, reserve_chunk=RESERVE_CHUNK)
        self.max_physic_offset = -1  # end (offset + size) of the last commit-log record indexed here
        self.min_logic_offset = 0  # in bytes
        # The delay topic's tags code holds the delivery time instead of a tag hash.
        self.is_schedule = topic == RMQ_SYS_SCHEDULE_TOPIC
        # Files unmapped to bound the open descriptors (ConsumeQueueLru); readers fall back to pread.
        self.parked = False

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic}, {self.queue_id}, max={self.get_max_offset_in_queue()})"

    # -- open files (ConsumeQueueLru) ----------------------------------------------------------------
    def mapped_count(self) -> int:
        """Mappings (each holding a descriptor) this queue keeps while not parked."""
        return len(self.mapped_file_queue.files) + 1

    def park(self) -> None:
        """Unmap every file (the dispatcher's thread, or before start): reads use pread until unpark()."""
        mfq = self.mapped_file_queue
        mfq._drop_spare()
        self.parked = True
        for mf in mfq.files:
            mf.park()

    def unpark(self) -> None:
        for mf in self.mapped_file_queue.files:
            mf.unpark()
        self.parked = False

    # -- load and recover -------------------------------------------------------------------------
    def load(self) -> None:
        self.mapped_file_queue.load()

    def _count_valid(self, mf, limit: int, valid) -> int:
        """Entries are written front to back, so the valid ones form a prefix: binary-search its length."""
        lo, hi = 0, limit // CQ_STORE_UNIT_SIZE
        mm = mf.mm
        while lo < hi:
            mid = (lo + hi) // 2
            if valid(*CQ_ENTRY.unpack_from(mm, mid * CQ_STORE_UNIT_SIZE)):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _last_real_end(self, mf, count: int) -> int:
        """offset + size of the last entry before `count` that is not a pre-blank, or -1."""
        for i in range(count - 1, -1, -1):
            phys, size, _t = CQ_ENTRY.unpack_from(mf.mm, i * CQ_STORE_UNIT_SIZE)
            if size != CQ_PRE_BLANK_SIZE:
                return phys + size
        return -1

    def recover(self) -> None:
        """From the third-last file, read entries until one has offset < 0 or size <= 0; cut there.

        Only up to the end of each file's data: its sparse tail is zeros. The probes fault one page each
        (read-around of a fresh file's holes would zero-fill all of it, a cost per queue that made a broker of 10,000
        topics slow to restart: bench/README.md); a file the writer has finished reads ahead again afterwards.
        """
        mfq = self.mapped_file_queue
        files = mfq.files
        if not files:
            return
        start = max(0, len(files) - 3)
        end_offset = files[start].file_from_offset
        max_phys = -1
        for mf in files[start:]:
            fault_in_page_by_page(mf.mm)
            count = self._count_valid(mf, mf.data_end(), lambda phys, size, _t: phys >= 0 and size > 0)
            end_offset = mf.file_from_offset + count * CQ_STORE_UNIT_SIZE
            max_phys = max(max_phys, self._last_real_end(mf, count))
            if count * CQ_STORE_UNIT_SIZE < self.file_size:
                break
        mfq.set_positions_after_recovery(end_offset)
        for mf in mfq.files[:-1]:
            mf.done_writing()
        self.max_physic_offset = max_phys
        first = mfq.first()
        if first is not None:
            self.min_logic_offset = max(self.min_logic_offset, first.file_from_offset)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop entries that point at or past `phy_offset` (the recovered end of the commit log)."""
        mfq = self.mapped_file_queue
        max_phys = -1
        for mf in mfq.files:
            keep = self._count_valid(mf, mf.wrote_position,
                                     lambda phys, size, _t: size == CQ_PRE_BLANK_SIZE or phys < phy_offset)
            if keep * CQ_STORE_UNIT_SIZE < mf.wrote_position:
                cut = mf.file_from_offset + keep * CQ_STORE_UNIT_SIZE
                mfq.truncate_dirty_files(cut)
                self.min_logic_offset = min(self.min_logic_offset, cut)
                max_phys = max(max_phys, self._last_real_end(mf, keep))
                break
            max_phys = max(max_phys, self._last_real_end(mf, keep))
        self.max_physic_offset = max_phys

    def truncate_to_file_start(self, offset: int) -> None:
        """Destroy the files from the one starting at `offset` (bytes) on, so that dispatch rebuilds them: what
        a clean start does when a file of this queue is missing."""
        mfq = self.mapped_file_queue
        keep = [mf for mf in mfq.files if mf.file_from_offset < offset]
        mfq.truncate_dirty_files(keep[-1].file_end_offset if keep else 0)
        if not keep:
            mfq.destroy()
            self.min_logic_offset = 0
        max_phys = -1
        for mf in keep[-1:]:
            max_phys = self._last_real_end(mf, mf.wrote_position // CQ_STORE_UNIT_SIZE)
        self.max_physic_offset = max_phys

    # -- write ------------------------------------------------------------------------------------

    def put_entry(self, queue_offset: int, offset: int, size: int, tags_code: int) -> bool:
        """put_entries of one entry, without building the list (mixed traffic hands over runs of one: a
        ``pack_into(*entries)`` costs twice what one of three arguments does)."""
        try:
            mf = self.mapped_file_queue.files[-1]
        except IndexError:
            return self.put_entry_reference(offset, size, tags_code, queue_offset)
        wp = mf.wrote_position
        end = offset + size
        # (The fast path of put_entries, for one entry.)
        # (mf.reserved counts whole entries, so an entry that starts below it ends within it.)
        if queue_offset * CQ_STORE_UNIT_SIZE - mf.file_from_offset == wp < mf.reserved and end > self.max_physic_offset:
            _pack_entry(mf.mm, wp, offset, size, tags_code)
            mf.wrote_position = wp + CQ_STORE_UNIT_SIZE
            self.max_physic_offset = end
            return True
        return self.put_entry_reference(offset, size, tags_code, queue_offset)

    def put_entries(self, queue_offset: int, entries: list[int]) -> bool:
        """Write entries ``queue_offset``, ``queue_offset + 1``, ...: ``entries`` holds their (commit-log offset,
        size, tags code) one after another, in commit-log order. Does what ``put_entry_reference`` does for each.

        The dispatcher hands over every run of records of one queue: mostly they go right after the last entry
        and fit the last file, and are written by one ``pack_into``. Anything else (a new file, a gap, entries
        already present after a crash) takes the reference, entry by entry. False when an entry could not be
        written (the reference's answer)."""
        files = self.mapped_file_queue.files
        n = len(entries) // 3
        if files and n <= _MAX_RUN:
            mf = files[-1]
            wp = mf.wrote_position
            end = wp + n * CQ_STORE_UNIT_SIZE
            # (In commit-log order, so when the first entry is new, all are.)
            # (Within the bytes reserved on disk, which never exceed the file: past them the reference reserves more.)
            if (wp < end <= mf.reserved and queue_offset * CQ_STORE_UNIT_SIZE == mf.file_from_offset + wp
                    and entries[0] + entries[1] > self.max_physic_offset):
                _RUNS[n].pack_into(mf.mm, wp, *entries)
                mf.wrote_position = end
                self.max_physic_offset = entries[-3] + entries[-2]
                return True
        ok = True
        for i in range(0, len(entries), 3):
            ok = self.put_entry_reference(entries[i], entries[i + 1], entries[i + 2], queue_offset + i // 3) and ok
        return ok

    def put_entry_reference(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Write entry `cq_offset` alone: the readable definition of what put_entries does.

        An entry whose record ends at or before the last one indexed here is already present (dispatch
        starts again after a crash) and skipped, as is one behind the write position. One past the write
        position leaves a gap of zeros; the first entry of a queue whose first file starts mid-way has the
        slots before it filled with pre-blanks."""
        if offset + size <= self.max_physic_offset:
            return True
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        mfq = self.mapped_file_queue
        mf = mfq.last()
        if mf is None or mf.is_full() or not (mf.file_from_offset <= expect < mf.file_end_offset):
            if mf is not None and expect < mf.file_from_offset + mf.wrote_position:
                return True  # behind the write position: already built
            mf = mfq.get_last_mapped_file(expect)
            if mf.wrote_position == 0 and len(mfq.files) == 1 and expect != mf.file_from_offset:
                self._fill_pre_blank(mf, expect)
        current = mf.file_from_offset + mf.wrote_position
        if expect < current:
            return True
        pos = expect - mf.file_from_offset
        if pos + CQ_STORE_UNIT_SIZE > self.file_size:
            return False
        if pos + CQ_STORE_UNIT_SIZE > mf.reserved:
            mf.reserve_to(pos + RESERVE_CHUNK)  # OSError (no space): the dispatcher retries this entry
        CQ_ENTRY.pack_into(mf.mm, pos, offset, size, tags_code)
        mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
        self.max_physic_offset = offset + size
        return True

    def prepare_next_file(self) -> bool:
        """Once the last file is half written, create the next one ahead of the dispatcher
        (MappedFileQueue.prepare_next_file); called by the consume-queue flush service."""
        mf = self.mapped_file_queue.last()
        if mf is None or mf.wrote_position < self.file_size // 2 or self.parked:
            return False
        return self.mapped_file_queue.prepare_next_file()

    def _fill_pre_blank(self, mf, until: int) -> None:
        """A queue whose first file starts mid-way: fill the slots before `until` with (0, MAX_INT, 0)."""
        pos = 0
        end = until - mf.file_from_offset
        mf.reserve_to(end + RESERVE_CHUNK)
        mm = mf.mm
        while pos < end:
            mm[pos:pos + CQ_STORE_UNIT_SIZE] = _PRE_BLANK
            pos += CQ_STORE_UNIT_SIZE
        mf.wrote_position = end
        mf.flushed_position = end
        self.min_logic_offset = until
        self.mapped_file_queue.flushed_where = until

    # -- read -------------------------------------------------------------------------------------
    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def get_max_offset_in_queue(self) -> int:
        return self.mapped_file_queue.get_max_offset() // CQ_STORE_UNIT_SIZE

    def get_entries(self, start_index: int, max_count: int) -> bytes:
        """Up to `max_count` raw 20-byte entries from `start_index`, within one file; b"" when the file is gone.

        OSError when a parked file cannot be read now (no descriptor free, an I/O error): a reader must not take
        that for a file that is gone, whose entries it would skip."""
        pos = start_index * CQ_STORE_UNIT_SIZE
        mf = self.mapped_file_queue.find_mapped_file_by_offset(pos)
        if mf is None:
            return b""
        rel = pos - mf.file_from_offset
        end = min(mf.wrote_position, rel + max_count * CQ_STORE_UNIT_SIZE)
        if end <= rel:
            return b""
        try:
            return mf.read(rel, end - rel)
        except ValueError:  # deleted meanwhile
            return b""

    def get_entry(self, index: int) -> tuple[int, int, int] | None:
        raw = self.get_entries(index, 1)
        return CQ_ENTRY.unpack(raw) if raw else None

    def get_offset_in_queue_by_time(self, timestamp: int, store_time: Callable[[int, int], int],
                                    min_phy_offset: int) -> int:
        """The first queue offset whose message was stored at or after `timestamp` (binary search).

        Past the last message's time: the max offset; before the first: the min offset.
        """
        lo = self.get_min_offset_in_queue()
        hi = self.get_max_offset_in_queue()
        if hi <= lo:
            return lo
        # Entries whose commit-log data was deleted cannot be timed: start after them.
        while lo < hi:
            e = self.get_entry(lo)
            if e is None or e[0] >= min_phy_offset and e[1] != CQ_PRE_BLANK_SIZE:
                break
            lo += 1
        left, right = lo, hi
        while left < right:
            mid = (left + right) // 2
            e = self.get_entry(mid)
            ts = store_time(e[0], e[1]) if e else -1
            if ts < timestamp:  # also when the record's time cannot be read (-1)
                left = mid + 1
            else:
                right = mid
        return left

    # -- flush and cleanup ------------------------------------------------------------------------
    def flush(self, least_pages: int) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def delete_expired_file(self, min_commit_log_offset: int) -> int:
        """Delete leading files whose last entry points below the commit log's min offset."""
        mfq = self.mapped_file_queue
        count = 0
        for mf in mfq.files[:-1]:
            last = mf.read(self.file_size - CQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE)
            phys = CQ_ENTRY.unpack(last)[0]
            if phys < min_commit_log_offset:
                count += 1
            else:
                break
        if count:
            mfq.delete_first_files(count)
        self.correct_min_offset(min_commit_log_offset)
        return count

    def correct_min_offset(self, min_commit_log_offset: int) -> None:
        """Move min_logic_offset to the first entry whose commit-log data still exists."""
        mf = self.mapped_file_queue.first()
        if mf is None:
            return
        data = mf.read(0, mf.wrote_position)
        for i, (phys, size, _t) in enumerate(CQ_ENTRY.iter_unpack(data)):
            if size != CQ_PRE_BLANK_SIZE and phys >= min_commit_log_offset:
                self.min_logic_offset = max(self.min_logic_offset, mf.file_from_offset + i * CQ_STORE_UNIT_SIZE)
                return
        self.min_logic_offset = max(self.min_logic_offset, mf.file_from_offset + mf.wrote_position)

    def destroy(self) -> None:
        self.mapped_file_queue.destroy()
        self.max_physic_offset = -1
        self.min_logic_offset = 0

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()
