"""QueueLockManager: one pop (or orderly ack) at a time per topic@group@queue.

Everything runs on the event loop, but a pop awaits between reading the group's offset and committing past what
it read (a store read on a pull thread, a checkpoint put that waits for the disk). A second pop of the same queue
in that window would read the same messages: it skips the queue instead, as RocketMQ's try-lock does.
"""

from __future__ import annotations

from pocketmq.common.pop_ack_constants import build_polling_key


class QueueLockManager:
    def __init__(self) -> None:
        self._locked: set[str] = set()

    @staticmethod
    def build_lock_key(topic: str, group: str, queue_id: int) -> str:
        return build_polling_key(topic, group, queue_id)

    def try_lock(self, key: str) -> bool:
        if key in self._locked:
            return False
        self._locked.add(key)
        return True

    def unlock(self, key: str) -> None:
        self._locked.discard(key)

    def is_locked(self, key: str) -> bool:
        return key in self._locked
