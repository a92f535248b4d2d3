"""IndexService: the run of index files, newest last; builds entries and answers key queries."""

from __future__ import annotations

import os
import threading
import time

from pocketmq.common.constants import TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from pocketmq.common.java_hash import KeyHashes, java_string_hash
from pocketmq.common.util_all import time_millis_to_human_string

from .index_file import IndexFile
from .speedups import speedups

_INDEX_RECORD = speedups.index_record if speedups is not None else None


def _next_name(name: str) -> str:
    """The file name 1 ms after `name` (yyyyMMddHHmmssSSS, local time)."""
    t = time.mktime(time.strptime(name[:14], "%Y%m%d%H%M%S"))
    return time_millis_to_human_string(int(t) * 1000 + int(name[14:]) + 1)


class IndexService:
    def __init__(self, store_path: str, hash_slot_num: int, index_num: int, max_msgs_num_batch: int = 64) -> None:
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self.files: list[IndexFile] = []
        self._lock = threading.Lock()
        self._hashes = KeyHashes()
        # storage/_speedups.c's index_record where it is built (index_props); None: the Python does every record.
        self.index_record = _INDEX_RECORD

    def load(self) -> None:
        self.files = []
        if not os.path.isdir(self.store_path):
            return
        for name in sorted(os.listdir(self.store_path)):
            if name.isdigit() and len(name) == 17:
                self.files.append(IndexFile(os.path.join(self.store_path, name), self.hash_slot_num, self.index_num))

    def drop_files_after(self, phy_offset: int) -> int | None:
        """After the commit log was cut at `phy_offset`, destroy index files that point past it.

        Returns the offset from which they must be rebuilt, or None when nothing was dropped.
        """
        rebuild = None
        with self._lock:
            while self.files and self.files[-1].entry_count() > 0 and self.files[-1].end_phy_offset >= phy_offset:
                f = self.files.pop()
                rebuild = f.begin_phy_offset if rebuild is None else min(rebuild, f.begin_phy_offset)
                f.destroy()
        return rebuild

    def _writable_file(self) -> IndexFile:
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_full():
            return last
        os.makedirs(self.store_path, exist_ok=True)
        ms = int(time.time() * 1000)
        path = os.path.join(self.store_path, time_millis_to_human_string(ms))
        if last is not None and os.path.basename(path) <= last.name:
            # Names must sort in creation order even if the clock stepped back: go 1 ms past the last.
            path = os.path.join(self.store_path, _next_name(last.name))
        f = IndexFile(path, self.hash_slot_num, self.index_num)
        if last is not None:
            # The new file continues where the full one ended, as RocketMQ seeds it.
            f.begin_phy_offset = f.end_phy_offset = last.end_phy_offset
            f.begin_timestamp = f.end_timestamp = last.end_timestamp
            f.sync_header()
            last.flush()
        with self._lock:
            self.files = [*self.files, f]
        return f

    def build_index_raw(self, topic: str, topic_b: bytes, keys: bytes | None, uniq_key: bytes | None,
                        phy_offset: int, store_timestamp: int, sys_flag: int) -> None:
        """IndexService.buildIndex for the dispatcher: keys as raw property bytes, hashed without decoding."""
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return
        f = self.files[-1] if self.files else None
        all_keys = (uniq_key, *keys.split(b" ")) if keys else (uniq_key,)
        written = 0
        if f is not None and phy_offset <= f.end_phy_offset:
            if phy_offset < f.end_phy_offset:
                return  # already indexed (re-dispatch after recovery; a new file is seeded with the last one's end)
            # The last record indexed, dispatched again after a crash, may have had some or all of its keys written:
            # those are not written twice (a key the record names twice, as KEYS "k k", still has its two entries)
            written = self._indexed_tail(phy_offset)
            if written >= sum(1 for key in all_keys if key):
                return
        if f is None or f.index_count >= f.index_num:
            f = self._writable_file()
        hashes = self._hashes
        prefix = hashes.topic_hash(topic, topic_b)
        for key in all_keys:
            if not key:
                continue
            if written:
                written -= 1
                continue
            h = hashes.key_hash(prefix, key)
            if h is None:
                h = java_string_hash(f"{topic}#{key.decode(errors='replace')}") & 0xFFFFFFFF
            # abs(int) of the signed value; Integer.MIN_VALUE stays negative in Java and becomes 0
            h = 0x100000000 - h if h & 0x80000000 else h
            if h > 0x7FFFFFFF:
                h = 0
            while not f.put_hashed(h, phy_offset, store_timestamp):
                f = self._writable_file()

    def index_props(self, topic: str, topic_b: bytes, props: bytes, phy_offset: int, store_timestamp: int,
                    sys_flag: int) -> int | None:
        """The C form (``index_record``) of the dispatcher's ``_classify`` with this index: the record's UNIQ_KEY
        and KEYS indexed as build_index_raw does, and its tags code answered; None when the C is not built or does
        not take the record (the reference then does it), having written nothing."""
        f = self.files[-1] if self.files else None
        index_record = self.index_record
        if (index_record is None or f is None or sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE
                or phy_offset <= f.end_phy_offset):
            return None  # (the last record indexed, dispatched again, is build_index_raw's case)
        n = f.index_count
        done = index_record(f.mm, props, self._hashes.topic_hash(topic, topic_b), f.hash_slot_num, f.index_num,
                             f.entries_base, n, f.begin_timestamp, phy_offset, store_timestamp)
        if done is None:
            return None
        code, count, slots = done
        if count != n:
            f.index_count = count
            f.hash_slot_count += slots
            f.end_phy_offset = phy_offset
            f.end_timestamp = store_timestamp
        return code

    def _indexed_tail(self, phy_offset: int) -> int:
        """The entries the index ends with that point at the record at ``phy_offset``, across a roll to a new
        file mid-record (the new file is seeded with the full one's end)."""
        count = 0
        for f in reversed(self.files):
            tail = f.tail_entries_at(phy_offset)
            count += tail
            if tail < f.entry_count() or f.end_phy_offset != phy_offset:
                break
        return count

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """Commit-log offsets for `key` stored within [begin, end] ms, newest files first.

        Returns (offsets, last update timestamp, last update offset). Hash collisions are possible:
        callers check the records.
        """
        max_num = min(max_num, self.max_msgs_num_batch)
        out: list[int] = []
        files = self.files
        last_ts = last_phy = 0
        if files:
            last_ts, last_phy = files[-1].end_timestamp, files[-1].end_phy_offset
        full_key = f"{topic}#{key}"
        for f in reversed(files):
            if f.is_time_matched(begin, end):
                try:
                    f.select_phy_offset(out, full_key, max_num, begin, end)
                except ValueError:  # "mmap closed": the clean service deleted it since the list was read
                    continue
            if f.begin_timestamp < begin or len(out) >= max_num:
                break
        return out, last_ts, last_phy

    def delete_expired_file(self, min_phy_offset: int) -> int:
        """Delete all files but the newest whose entries all point below the commit log's min offset."""
        with self._lock:
            files = self.files
            gone = [f for f in files[:-1] if f.end_phy_offset < min_phy_offset]
            if gone:
                self.files = [f for f in files if f not in gone]
        for f in gone:
            f.destroy()
        return len(gone)

    def sync_header(self) -> None:
        if self.files:
            self.files[-1].sync_header()

    def flush(self) -> None:
        for f in self.files:
            f.flush()

    def destroy(self) -> None:
        with self._lock:
            files, self.files = self.files, []
        for f in files:
            f.destroy()

    def shutdown(self) -> None:
        for f in self.files:
            f.flush()
            f.close()
