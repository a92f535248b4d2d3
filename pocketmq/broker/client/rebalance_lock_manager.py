"""RebalanceLockManager: which client holds which queue of a group, for orderly consumption."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from pocketmq.remoting.client_body import MessageQueue

log = logging.getLogger(__name__)


@dataclass(slots=True)
class LockEntry:
    """RocketMQ's LockEntry: a queue's lock, held by one client until it expires unrenewed."""

    client_id: str
    last_update_timestamp: float = field(default_factory=time.monotonic)


class RebalanceLockManager:
    """A lock is granted when free, already held by the same client (renewed) or expired."""

    def __init__(self, lock_max_live_time: float = 60.0) -> None:
        self.lock_max_live_time = lock_max_live_time
        self.mq_lock_table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: float) -> bool:
        return now - entry.last_update_timestamp > self.lock_max_live_time

    def is_locked(self, group: str, mq: MessageQueue, client_id: str, now: float | None = None) -> bool:
        entry = self.mq_lock_table.get(group, {}).get(mq)
        now = time.monotonic() if now is None else now
        return entry is not None and entry.client_id == client_id and not self._expired(entry, now)

    def is_lock_all_expired(self, group: str, now: float | None = None) -> bool:
        """No queue of ``group`` is locked now (RocketMQ 5 reads a lock as the sign of an orderly group)."""
        now = time.monotonic() if now is None else now
        return all(self._expired(entry, now) for entry in self.mq_lock_table.get(group, {}).values())

    def try_lock_batch(
        self, group: str, mqs: set[MessageQueue], client_id: str, now: float | None = None
    ) -> set[MessageQueue]:
        now = time.monotonic() if now is None else now
        table = self.mq_lock_table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            entry = table.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                if entry is not None and entry.client_id != client_id:
                    log.info("queue lock of %s %s moves from expired %s to %s", group, mq, entry.client_id, client_id)
                table[mq] = LockEntry(client_id, now)
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: set[MessageQueue], client_id: str) -> None:
        table = self.mq_lock_table.get(group)
        if table is None:
            return
        for mq in mqs:
            entry = table.get(mq)
            if entry is not None and entry.client_id == client_id:
                del table[mq]
        if not table:
            del self.mq_lock_table[group]

    def drop_expired(self, now: float | None = None) -> int:
        """Forget the locks that expired (a lock taken again after expiry is granted anew either way)."""
        now = time.monotonic() if now is None else now
        dropped = 0
        for group, table in list(self.mq_lock_table.items()):
            for mq in [mq for mq, entry in table.items() if self._expired(entry, now)]:
                del table[mq]
                dropped += 1
            if not table:
                del self.mq_lock_table[group]
        return dropped
