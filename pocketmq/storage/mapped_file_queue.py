"""MappedFileQueue: the ordered run of MappedFiles that together form one logical log."""

from __future__ import annotations

import logging
import os
import threading

from .mapped_file import MappedFile, offset_to_file_name

log = logging.getLogger(__name__)


class MappedFileQueue:
    def __init__(self, store_path: str, file_size: int, *, page_by_page: bool = False,
                 reserve_chunk: int | None = None) -> None:
        self.store_path = store_path
        self.file_size = file_size
        self.page_by_page = page_by_page  # new files: no fault read-around while written (fault_in_page_by_page)
        # Disk space reserved when a file is created: all of it (None), or a first chunk that the writer
        # extends as it goes (MappedFile.reserve_to): consume queues, of which a broker may have thousands.
        self.reserve_chunk = reserve_chunk
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self._lock = threading.Lock()  # guards the list (and the spare) against concurrent create / delete
        # The file after the last one, created ahead of need by another thread (prepare_next_file); the
        # writer adopts it instead of creating the file itself.
        self._spare: MappedFile | None = None
        # Bumped whenever a spare is dropped: a spare made across a drop is not published (see prepare_next_file).
        self._spare_generation = 0

    # -- loading --------------------------------------------------------------------------------
    def load(self) -> None:
        # Start from nothing: after a shutdown the list still holds the closed files.
        with self._lock:
            self.files = []
        self.flushed_where = 0
        if not os.path.isdir(self.store_path):
            return
        names = sorted(n for n in os.listdir(self.store_path) if n.isdigit() and len(n) == 20)
        if names:
            last = os.path.join(self.store_path, names[-1])
            if os.path.getsize(last) == 0:
                # A crash between creating the newest file and sizing it (MappedFile.__init__) leaves
                # it empty. It never held data; without this the store could never load again.
                log.warning("removing %s: an empty file left by a crash while it was being created", last)
                os.unlink(last)
                names.pop()
        for name in names:
            mf = MappedFile(os.path.join(self.store_path, name), self.file_size, create=False)
            # Positions are set by recovery; until then assume every loaded file is full.
            mf.wrote_position = mf.flushed_position = self.file_size
            self.files.append(mf)

    # -- lookup ---------------------------------------------------------------------------------
    def first(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def get_last_mapped_file(self, start_offset: int = 0) -> MappedFile:
        """The file to append to: the last one, or a new one after it when it is full (or none exists)."""
        last = self.last()
        if last is not None and not last.is_full():
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.file_size
        else:
            create_offset = last.file_from_offset + self.file_size
            if self.page_by_page:
                last.done_writing()
        return self._create(create_offset)

    def _create(self, offset: int) -> MappedFile:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare.file_from_offset == offset and spare.available:
            mf = spare
        else:
            if spare is not None:
                spare.close()
            os.makedirs(self.store_path, exist_ok=True)
            mf = MappedFile(os.path.join(self.store_path, offset_to_file_name(offset)), self.file_size,
                            page_by_page=self.page_by_page, reserve=self.reserve_chunk)
        with self._lock:
            self.files = [*self.files, mf]
            # A spare the flush thread made for this very file while this thread was creating it (it looked
            # before the append) names a live file now: only close it, deleting it would delete the data.
            stale = self._spare
            if stale is not None and stale.file_from_offset <= mf.file_from_offset:
                self._spare = None
            else:
                stale = None
        if stale is not None:
            stale.close()
        return mf

    def prepare_next_file(self) -> bool:
        """Create the file after the last one now, off the writer's thread; the writer adopts it (_create).

        Creating a file takes a handful of system calls (open, ftruncate, mmap, close), and each one
        releases the GIL: a writer that creates its own file can wait a switch interval (5 ms) for the
        GIL after each, several in all while another thread keeps putting (bench/README.md). Returns True if it
        made one.
        """
        with self._lock:
            last, generation = self.last(), self._spare_generation
        if last is None or self._spare is not None:
            return False
        path = os.path.join(self.store_path, offset_to_file_name(last.file_from_offset + self.file_size))
        try:
            mf = MappedFile(path, self.file_size, page_by_page=self.page_by_page, reserve=self.reserve_chunk)
        except OSError:  # the queue's directory went away (topic deleted), or no space: the writer will say so
            return False
        with self._lock:
            # Not if a spare was dropped meanwhile: this one may have opened the file just being deleted.
            if self._spare is None and self.last() is last and self._spare_generation == generation:
                self._spare = mf
                return True
            gone = not self.files
        # Meanwhile the writer created (and now uses) the same file itself, or the queue was destroyed.
        if gone:
            mf.destroy()
        else:
            mf.close()
        return False

    def _drop_spare(self) -> None:
        # Deleted under the lock, with the generation bumped: a spare the flush thread makes meanwhile either
        # started after the deletion (a file of its own) or is refused when it comes to publish itself.
        with self._lock:
            spare, self._spare = self._spare, None
            self._spare_generation += 1
            if spare is not None:
                spare.destroy()  # it never held data

    def find_mapped_file_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.files  # copy-on-write list: a stable snapshot without locking
        if not files:
            return None
        first = files[0]
        idx = offset // self.file_size - first.file_from_offset // self.file_size
        if 0 <= idx < len(files):
            mf = files[idx]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.file_size:
                return mf
        return first if return_first_on_not_found else None

    def get_min_offset(self) -> int:
        first = self.first()
        return first.file_from_offset if first is not None else -1

    def get_max_offset(self) -> int:
        last = self.last()
        return last.file_from_offset + last.wrote_position if last is not None else 0

    # -- flushing -------------------------------------------------------------------------------
    def flush(self, least_pages: int) -> bool:
        """Flush the file holding flushed_where; returns True when nothing was left to flush."""
        mf = self.find_mapped_file_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None:
            first = self.first()
            if first is None or self.flushed_where >= first.file_from_offset:
                return True
            # The files holding flushed_where were deleted under it (the clean service, forced by a full disk):
            # flushing goes on from the first file left, or it would stop for good.
            self.flushed_where, mf = first.file_from_offset, first
        if not mf.available:
            return True
        where = mf.file_from_offset + mf.flush(least_pages)
        done = where == self.flushed_where
        self.flushed_where = where
        return done

    def flush_all(self) -> None:
        for _ in range(len(self.files) + 1):
            self.flush(0)
            if self.flushed_where >= self.get_max_offset():
                break

    # -- truncation and deletion ----------------------------------------------------------------
    def truncate_dirty_files(self, offset: int) -> None:
        """Keep data below `offset`: trim the file holding it, destroy the files after it."""
        keep: list[MappedFile] = []
        for mf in self.files:
            if mf.file_from_offset + self.file_size <= offset:
                keep.append(mf)
            elif mf.file_from_offset <= offset:
                mf.truncate_to(offset - mf.file_from_offset)
                keep.append(mf)
            else:
                mf.destroy()
        self._drop_spare()
        with self._lock:
            self.files = keep
        self.flushed_where = min(self.flushed_where, offset) if self.flushed_where else offset

    def set_positions_after_recovery(self, offset: int) -> None:
        for mf in self.files:
            end = mf.file_from_offset + self.file_size
            if end <= offset:
                mf.wrote_position = mf.flushed_position = self.file_size
        self.truncate_dirty_files(offset)
        self.flushed_where = offset

    def delete_first_files(self, count: int) -> list[MappedFile]:
        """Destroy the first `count` files (never the last one)."""
        with self._lock:
            count = min(count, len(self.files) - 1)
            if count <= 0:
                return []
            gone, self.files = self.files[:count], self.files[count:]
        for mf in gone:
            mf.destroy()
        return gone

    def destroy(self) -> None:
        with self._lock:
            files, self.files = self.files, []
        for mf in files:
            mf.destroy()
        self._drop_spare()
        self.flushed_where = 0

    def shutdown(self) -> None:
        # A spare never held data: delete it, so a restart finds the files as the writer left them.
        # (After a crash it is found as an empty newest file, which recovery keeps as the one to append to.)
        self._drop_spare()
        for mf in self.files:
            mf.close()
