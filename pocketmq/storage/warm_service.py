"""WarmMappedFileService: brings the commit log's next pages into the page cache ahead of the writer.

RocketMQ's AllocateMappedFileService can warm a new file (warmMapedFileEnable) so that appends do not
pay page faults. Here the first write to a fresh page of a mapped file costs a page fault, ten times more
when the hypervisor must back the page first (VMs whose balloon takes freed memory back: free page
reporting). A Python writer pays that inside the put lock, holding the GIL.

This thread reads the file a window ahead of the write position with preadv, which releases the GIL:
reading a hole of a sparse file puts a zeroed, clean page in the page cache, so the writer's fault
later only maps it. Nothing is written, so the file stays sparse, no block is allocated and no extra
byte goes to disk; RocketMQ's warm-up writes zeros instead, which doubles the disk writes.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from .service_thread import ServiceThread

if TYPE_CHECKING:
    from .mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

# Each time this thread takes the GIL it delays the dispatcher's turn (CPython restarts a waiter's 5 ms
# switch interval after any switch), so it wakes seldom and reads a whole window with one preadv. Its iovecs
# all name one buffer, which the reads fill, so the buffer is resident memory of the server: a small one,
# named up to _IOVECS times a call (IOV_MAX is 1024).
_CHUNK = 256 << 10
_IOVECS = 512


class WarmMappedFileService(ServiceThread):
    name = "warm-mapped-file"

    def __init__(self, queue: MappedFileQueue, ahead: int, interval: float = 0.05,
                 idle_interval: float = 0.2) -> None:
        super().__init__()
        self.queue = queue
        self.ahead = ahead
        # The window must cover what the writer appends until the next round: 50 ms while it appends
        # (~6 MiB at 100 B messages, ~15 MiB at 1 KiB), 200 ms once it stopped (a writer starting again
        # finds a whole window ready).
        self.interval = interval
        self.idle_interval = idle_interval
        self.warmed_offset = 0  # observable: the commit-log offset up to which pages are in the page cache
        self._buf = memoryview(bytearray(_CHUNK))  # reused, so the reads themselves touch no fresh memory

    @staticmethod
    def available() -> bool:
        return hasattr(os, "preadv")

    def run(self) -> None:
        path, fd, warmed, seen = None, -1, 0, -1
        try:
            while not self.stopped:
                mf = self.queue.last()
                moved = mf is not None and mf.file_from_offset + mf.wrote_position != seen
                if moved and mf is not None:
                    seen = mf.file_from_offset + mf.wrote_position
                if mf is not None and mf.available and mf.path != path:
                    if fd >= 0:
                        os.close(fd)
                        fd = -1
                    path, warmed = mf.path, mf.wrote_position
                    try:
                        fd = os.open(path, os.O_RDONLY)
                    except OSError:  # deleted meanwhile (truncation, cleanup): try the next one
                        path = None
                if fd >= 0 and mf is not None and mf.path == path:
                    target = min(mf.wrote_position + self.ahead, mf.file_size)
                    warmed = max(warmed, mf.wrote_position)
                    if warmed < target:
                        # One call for the whole gap: the iovecs all name the same buffer.
                        full, rest = divmod(min(target - warmed, _IOVECS * _CHUNK), _CHUNK)
                        n = os.preadv(fd, [self._buf] * full + ([self._buf[:rest]] if rest else []), warmed)
                        if n > 0:
                            warmed += n
                            self.warmed_offset = mf.file_from_offset + warmed
                self.wait_for_running(self.interval if moved else self.idle_interval)
        except OSError:
            log.exception("warming the commit log failed; appends go on without it")
        finally:
            if fd >= 0:
                os.close(fd)
