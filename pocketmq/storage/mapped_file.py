"""MappedFile: one fixed-size, memory-mapped file named by the offset of its first byte."""

from __future__ import annotations

import errno
import logging
import mmap
import os

from pocketmq.common.constants import OS_PAGE_SIZE

log = logging.getLogger(__name__)

_ZERO_CHUNK = bytes(1 << 20)
# posix_fallocate errors that mean "this file system cannot reserve", not "there is no space".
_CANNOT_RESERVE = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
_warned_cannot_reserve: set[str] = set()
# On a shared file mapping DONTNEED only unmaps: the dirty data stays in the page cache (Linux, BSDs).
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None) if hasattr(mmap.mmap, "madvise") else None
_MADV_RANDOM = getattr(mmap, "MADV_RANDOM", None) if hasattr(mmap.mmap, "madvise") else None
_MADV_NORMAL = getattr(mmap, "MADV_NORMAL", None) if hasattr(mmap.mmap, "madvise") else None


def advise(mm: mmap.mmap, advice: int | None) -> None:
    """madvise the whole mapping, where the platform can; advice is only a hint, so failures are ignored."""
    if advice is not None:
        try:
            mm.madvise(advice)
        except (OSError, ValueError):
            pass


def fault_in_page_by_page(mm: mmap.mmap) -> None:
    """For the mapping of a new, empty (sparse) consume-queue file, which the dispatcher writes front to back.

    On the first fault in a file, Linux reads around the faulting page: up to read_ahead_kb (8 MiB
    here) of the file's holes become fresh zeroed page-cache pages, all in that one fault. For a
    6 MB consume-queue file that is its every page at once, paid by the dispatcher holding the GIL.
    MADV_RANDOM turns read-around off for this mapping, so each page is faulted in when the writer
    reaches it: the same work, in pieces of one page. Once the file is full, `done_writing`
    restores the default, so a reader of a file read back from disk gets read-ahead again.
    Commit-log files keep the default: a lagging consumer reads them back from disk while they are
    still being written, and the warm service puts their pages in the page cache ahead of the writer.
    """
    advise(mm, _MADV_RANDOM)


def sync_file(path: str) -> None:
    """Write the file's dirty pages (mapped ones included) to disk.

    fdatasync instead of mmap.flush: CPython 3.11 holds the GIL through msync, which froze puts and the
    dispatcher for tens of milliseconds per flush; fdatasync releases it. The descriptor is opened for the
    call only, so a store of many files holds one descriptor per mapping, not two.
    """
    fd = os.open(path, os.O_RDWR)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


def reserve_space(fd: int, offset: int, length: int, path: str) -> bool:
    """Give [offset, offset + length) of the file disk blocks now (posix_fallocate).

    Store files are mapped and written through the mapping. A write into a page of a sparse file that the
    file system cannot back (disk full, quota) is not an error return but a SIGBUS, which kills the process:
    reserving the blocks when the file is created (or, for consume queues, a chunk ahead of the writer)
    turns a full disk into an OSError (ENOSPC) here, where the store can refuse the put instead.

    Returns False where the file system cannot reserve (logged once per directory): the file stays sparse,
    and only the store's disk-space checks stand between a full disk and a fault.
    """
    if length <= 0:
        return True
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is not None:
        try:
            fallocate(fd, offset, length)
            return True
        except OSError as e:
            if e.errno not in _CANNOT_RESERVE:
                raise
            why = f"posix_fallocate fails with {errno.errorcode.get(e.errno or 0, e.errno)}"
    else:
        why = "this platform has no posix_fallocate"
    where = os.path.dirname(path)
    if where not in _warned_cannot_reserve:
        _warned_cannot_reserve.add(where)
        log.warning("cannot reserve disk space for the store files in %s (%s): they stay sparse, so a disk that "
                    "fills up faster than the disk checks run may kill the process with SIGBUS", where, why)
    return False


def offset_to_file_name(offset: int) -> str:
    """UtilAll.offset2FileName: 20 zero-padded decimal digits."""
    return f"{offset:020d}"


def closed_mapping() -> mmap.mmap:
    """A closed mapping, for a file whose own mapping is closed while the file stays (parked): every access
    raises ValueError, as it does for the mapping of a deleted file, and it holds no descriptor."""
    mm = mmap.mmap(-1, 1)
    mm.close()
    return mm


_PARKED = closed_mapping()


def pread_file(path: str, pos: int, size: int) -> bytes:
    """`size` bytes at `pos` of the file at `path`, through a descriptor opened for the call only."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, pos)
    finally:
        os.close(fd)


class MappedFile:
    __slots__ = ("path", "file_from_offset", "file_size", "mm", "wrote_position",
                 "flushed_position", "store_timestamp", "available", "reserved", "parked")

    def __init__(self, path: str, file_size: int, *, create: bool = True, page_by_page: bool = False,
                 reserve: int | None = None) -> None:
        """Map the file at `path`, creating it (`create`) when missing or empty. A created file gets its first
        `reserve` bytes (all of it when None) reserved on disk (reserve_space); when that fails (ENOSPC) the
        file is removed again and the OSError raised."""
        self.path = path
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(path))
        # Bytes from the start known to be backed by disk blocks: writes below it cannot fault. A file found
        # on disk may be sparse: the writer reserves before it writes (reserve_to).
        self.reserved = 0
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o644)
        try:
            actual = os.fstat(fd).st_size
            fresh = actual == 0 and create
            if fresh:
                want = file_size if reserve is None else min(reserve, file_size)
                try:
                    os.ftruncate(fd, file_size)
                    reserved = reserve_space(fd, 0, want, path)
                except OSError:
                    os.close(fd)
                    fd = -1
                    os.unlink(path)
                    raise
                self.reserved = want if reserved else file_size  # (sparse anyway: nothing more to do)
            elif actual != file_size:
                raise ValueError(f"{path} is {actual} bytes, expected {file_size}: not a store file of this size")
            self.mm = mmap.mmap(fd, file_size)
            if fresh and page_by_page:
                fault_in_page_by_page(self.mm)
        finally:
            # The mapping keeps a descriptor of its own; holding ours too would double the open
            # files, and a store of many small files would hit the process limit.
            if fd >= 0:
                os.close(fd)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0  # store time of the last record appended, for the checkpoint
        self.available = True
        # The mapping (and the descriptor it holds) closed to keep the process's open files bounded, the file
        # kept (park / unpark): reads go through read(), which falls back to pread.
        self.parked = False

    def __repr__(self) -> str:
        return f"MappedFile({os.path.basename(self.path)}, wrote={self.wrote_position})"

    @property
    def file_end_offset(self) -> int:
        return self.file_from_offset + self.file_size

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def reserve_to(self, end: int) -> None:
        """Make sure bytes [0, end) are backed by disk blocks before they are written (reserve_space).
        Raises OSError (ENOSPC) when the space is not there; nothing is written then."""
        end = min(end, self.file_size)
        if end <= self.reserved:
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            if not reserve_space(fd, self.reserved, end - self.reserved, self.path):
                end = self.file_size  # cannot reserve here: do not ask again
        finally:
            os.close(fd)
        self.reserved = end

    def done_writing(self) -> None:
        """The writer has moved on to the next file: let page faults read ahead again (fault_in_page_by_page)."""
        if self.available:
            advise(self.mm, _MADV_NORMAL)

    def read(self, pos: int, size: int) -> bytes:
        """Bytes [pos, pos + size): from the mapping, or, parked (or parked meanwhile), from the file."""
        try:
            return self.mm[pos:pos + size]
        except ValueError:
            if not self.parked or not self.available:
                raise
        try:
            return pread_file(self.path, pos, size)
        except FileNotFoundError:
            raise ValueError(f"{self.path} was deleted") from None

    def park(self) -> None:
        """Close the mapping, keep the file (its dirty pages stay in the page cache and reach the disk as
        usual). Only the thread that writes the file parks and unparks it."""
        if self.available and not self.parked:
            mm, self.mm = self.mm, _PARKED
            self.parked = True
            try:
                mm.close()
            except BufferError:
                pass  # a reader still holds a view; the mapping goes when it does

    def unpark(self) -> None:
        if self.parked and self.available:
            fd = os.open(self.path, os.O_RDWR)
            try:
                self.mm = mmap.mmap(fd, self.file_size)
            finally:
                os.close(fd)
            self.parked = False

    def is_able_to_flush(self, least_pages: int) -> bool:
        if self.flushed_position >= self.wrote_position:
            return False
        if self.is_full() or least_pages <= 0:
            return True
        return (self.wrote_position // OS_PAGE_SIZE - self.flushed_position // OS_PAGE_SIZE) >= least_pages

    def flush(self, least_pages: int) -> int:
        """msync the unflushed pages when enough have accumulated; returns the flushed position."""
        if self.is_able_to_flush(least_pages):
            wrote = self.wrote_position
            self._unmap_written(self.flushed_position, wrote)
            sync_file(self.path)
            self.flushed_position = wrote
        return self.flushed_position

    def _unmap_written(self, start: int, end: int) -> None:
        """Drop this process's page-table entries of the whole pages in [start, end) before they are
        written back: their data stays in the page cache (dirty), readers fault them in again read-only.

        Writing back a page that is mapped writable makes the kernel write-protect it and flush the TLB
        of every CPU running this process, one interrupt per page (over 10,000 per 64 MiB here, each a
        VM exit); the appending thread pays for them. Unmapping the run first costs one flush for all.
        Only whole pages below the write position: the writer never touches them again.
        """
        if _MADV_DONTNEED is None:
            return
        first = start - start % OS_PAGE_SIZE
        last = end - end % OS_PAGE_SIZE
        if last > first:
            try:
                self.mm.madvise(_MADV_DONTNEED, first, last - first)
            except (OSError, ValueError):  # a closed mapping (file deleted meanwhile): nothing to do
                pass

    def truncate_to(self, pos: int) -> None:
        """Forget everything from `pos` on and zero it, so a later recovery cannot read stale records there.

        Every byte up to the end of the file is checked: a run of zeros (a hole, or a legal message
        body) says nothing about what follows it. Holes of a sparse file are skipped, not read.
        """
        self.wrote_position = self.flushed_position = pos
        chunk = len(_ZERO_CHUNK)
        zeroed = False
        for start, stop in self._data_ranges(pos, self.file_size):
            p = start
            while p < stop:
                n = min(chunk, stop - p)
                if self.mm[p:p + n] != _ZERO_CHUNK[:n]:
                    self.mm[p:p + n] = _ZERO_CHUNK[:n]
                    zeroed = True
                p += n
        if zeroed:  # (an msync of a whole mapping costs milliseconds even with nothing to write: 10,000 queues)
            self.mm.flush()

    def data_end(self) -> int:
        """The end of the file's last data (holes of a sparse file excluded): nothing but zeros lies after it."""
        ranges = self._data_ranges(0, self.file_size)
        return ranges[-1][1] if ranges else 0

    def _data_ranges(self, pos: int, end: int) -> list[tuple[int, int]]:
        """The parts of [pos, end) that may hold data: all but the file's holes (SEEK_DATA /
        SEEK_HOLE see dirty mapped pages too), or all of it where the OS cannot tell."""
        seek_data = getattr(os, "SEEK_DATA", None)
        seek_hole = getattr(os, "SEEK_HOLE", None)
        if seek_data is None or seek_hole is None:
            return [(pos, end)]
        out = []
        p = pos
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return [(pos, end)]
        try:
            while p < end:
                try:
                    data = os.lseek(fd, p, seek_data)
                except OSError as e:
                    if e.errno == errno.ENXIO:  # no data after p
                        break
                    raise
                if data >= end:
                    break
                hole = os.lseek(fd, data, seek_hole)
                out.append((data, min(hole, end)))
                p = hole
        except OSError:
            return [(pos, end)]
        finally:
            os.close(fd)
        return out

    def close(self) -> None:
        if self.available:
            self.available = False
            self.parked = False
            try:
                self.mm.close()
            except BufferError:
                pass  # a reader still holds a view; the mapping goes when it does

    def destroy(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def last_modified(self) -> float:
        return os.path.getmtime(self.path)
