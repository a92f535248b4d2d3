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
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
