"""The store's `lock` file: one process per store directory (RocketMQ: "Lock failed,MQ already started")."""

from __future__ import annotations

import fcntl
import os


class StoreLockedError(RuntimeError):
    pass


class StoreLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, root: str) -> StoreLock:
        os.makedirs(root, exist_ok=True)
        fd = os.open(os.path.join(root, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(f"Lock failed, MQ already started: {root} is in use by another process")
        try:
            # Also the lock RocketMQ's broker takes (FileChannel.tryLock(0, 1, false): fcntl on the first byte).
            # The two kinds do not see each other, and without both a pocketmq broker and an Apache one would both
            # open one store. (flock alone keeps out a second pocketmq of this process: fcntl locks are per process.)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise StoreLockedError(f"Lock failed, MQ already started: {root} is in use by another broker "
                                   f"(an Apache RocketMQ one holds its lock)") from None
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)  # (closing it drops the fcntl lock)
            self._fd = None
