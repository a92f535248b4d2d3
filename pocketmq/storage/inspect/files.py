"""Read-only access to store files, and the small formatting helpers every section uses.

Nothing here opens a file for writing, creates a directory or takes a lock: inspect must be safe
to run next to a live store, and must leave a crashed store exactly as the crash left it.
"""

from __future__ import annotations

import codecs
import mmap
import os
import time
from collections import Counter
from contextlib import ExitStack

FILE_NAME_DIGITS = 20  # commit-log and consume-queue files: the start offset, zero-padded
INDEX_NAME_DIGITS = 17  # index files: creation time as yyyyMMddHHmmssSSS


class ReadOnlyFiles:
    """Maps files read-only and unmaps them all on close. A zero-length file maps to b""."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._maps: dict[str, mmap.mmap | bytes] = {}

    def __enter__(self) -> ReadOnlyFiles:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def map(self, path: str) -> mmap.mmap | bytes:
        mm = self._maps.get(path)
        if mm is None:
            fd = os.open(path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
            finally:
                os.close(fd)  # the mapping keeps its own reference to the file
            if isinstance(mm, mmap.mmap):
                self._stack.callback(mm.close)
            self._maps[path] = mm
        return mm

    def close(self) -> None:
        self._maps.clear()
        self._stack.close()


def numbered_files(directory: str, digits: int = FILE_NAME_DIGITS) -> list[str]:
    """Names of the files in `directory` that are `digits` decimal digits long, in order."""
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if len(n) == digits and n.isdigit()
                  and os.path.isfile(os.path.join(directory, n)))


def log_file_problems(directory: str, names: list[str], unit: int = 1) -> dict[str, list[str]]:
    """What breaks the layout of a log, a run of equal files named by their first offset, per file name: a size
    other than its siblings', a name no multiple of the file size, a gap to the next file, a size that is no whole
    number of ``unit``-byte entries. pocketmq (MappedFile) and Apache RocketMQ (MappedFileQueue.doLoad) refuse to
    load a log holding a file of another size than the configured one. An empty newest file is left out: a crash
    while creating it leaves one, and pocketmq's load removes it."""
    bases = [int(name) for name in names]
    sizes = [os.path.getsize(os.path.join(directory, name)) for name in names]
    if sizes and sizes[-1] == 0:
        bases, sizes = bases[:-1], sizes[:-1]
    counts = Counter(sizes)
    # The most common size; between as many, the biggest (a file cut short is likelier than one grown).
    expected = max(counts, key=lambda size: (counts[size], size)) if counts else 0
    out: dict[str, list[str]] = {}
    for i, (name, base, size) in enumerate(zip(names, bases, sizes, strict=False)):
        problems = []
        if size % unit:
            problems.append(f"{size:,} bytes is no whole number of {unit}-byte entries")
        if size != expected:
            problems.append(f"{size:,} bytes, where its sibling files have {expected:,}")
        if expected and base % expected:
            problems.append(f"its name is no multiple of the file size {expected:,}")
        if i + 1 < len(bases) and bases[i + 1] - base != expected:
            problems.append(f"the next file starts {bases[i + 1] - base:,} bytes after it, not {expected:,}")
        if problems:
            out[name] = problems
    return out


def file_sizes(path: str) -> dict:
    """Apparent size and bytes actually allocated: store files are sparse until written."""
    st = os.stat(path)
    return {"size": st.st_size, "allocated": st.st_blocks * 512}


def fmt_ms(ms: int) -> str:
    """A millisecond timestamp as local time, e.g. 2024-06-01 12:00:00.123; 0 reads as "never"."""
    if ms <= 0:
        return "never"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"
    except (OverflowError, OSError, ValueError):
        return "out of range"


def fmt_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} B"


def index_name_time(name: str) -> str:
    """An index file's name (yyyyMMddHHmmssSSS) in the same form as fmt_ms."""
    return f"{name[0:4]}-{name[4:6]}-{name[6:8]} {name[8:10]}:{name[10:12]}:{name[12:14]}.{name[14:17]}"


def preview(data: bytes, width: int = 60) -> str:
    """Bytes as text for a one-line preview: UTF-8 when it decodes, escapes otherwise."""
    data = data[:width * 4]  # enough for `width` characters; a body can be megabytes
    try:
        text = data.decode()
    except UnicodeDecodeError:
        try:
            # final=False: a character cut in two by the slice above is not an error.
            text = codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    text = "".join(c if c.isprintable() else _escape(c) for c in text[:width + 1])
    return text if len(text) <= width else text[:width - 3] + "..."


def _escape(c: str) -> str:
    return {"\x01": "\\x01", "\x02": "\\x02", "\n": "\\n", "\t": "\\t"}.get(c, f"\\x{ord(c):02x}")


# /proc/locks names the kind of each lock: flock(2) (pocketmq's store), fcntl(2) POSIX record locks (Apache
# RocketMQ's FileChannel.tryLock) and open-file-description locks; any of them on `lock` means a store runs.
LOCK_KINDS = ("FLOCK", "POSIX", "OFDLCK")


PROC_LOCKS = "/proc/locks"  # the kernel's table of file locks, with the holder of each


def lock_holder(lock_path: str, locks_path: str = PROC_LOCKS) -> tuple[str, int | None] | None:
    """(kind, pid) of a lock held on `lock_path`, read from `locks_path` (Linux's /proc/locks), or None when none
    is held. OSError when either cannot be read (macOS has no /proc/locks; a restricted /proc hides it): whether
    the lock is held is then unknown, which is not the same as not held.

    The kind is one of LOCK_KINDS. pid is None for an OFDLCK: such a lock belongs to an open file, not a
    process, and /proc/locks shows -1. Asking the kernel this way takes no lock ourselves, so a store starting
    at the same moment never sees inspect as a competitor.
    """
    st = os.stat(lock_path)
    with open(locks_path) as f:
        lines = f.read().splitlines()
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    found: dict[str, int | None] = {}
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 8277 fe:00:2147008 0 EOF"; blocked waiters show "->" first.
        if len(parts) < 6 or parts[1] not in LOCK_KINDS:
            continue
        try:
            major, minor, inode = parts[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == want:
                pid = int(parts[4])
                found.setdefault(parts[1], pid if pid > 0 else None)
        except ValueError:
            continue
    # A pocketmq store holds an flock and RocketMQ's fcntl lock both: it is named by its flock, one of
    # Apache's by its fcntl lock alone (in LOCK_KINDS' order, whatever order /proc/locks lists them in).
    return next(((kind, found[kind]) for kind in LOCK_KINDS if kind in found), None)
