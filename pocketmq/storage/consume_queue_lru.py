"""ConsumeQueueLru: keeps the mapped consume-queue files, and so the descriptors they hold, under a bound.

Each mapping holds a descriptor, and a broker has a consume queue per topic and queue: 10,000 topics used to
mean 10,000 open files, and past the process's limit ("Too many open files") the dispatcher could create no
queue file and stopped for every topic. Queues are kept in least-recently-used order; when the mapped files
pass the bound, the least recently used queues are parked (their files unmapped, ConsumeQueue.park) and mapped
again when the dispatcher next writes to them. Readers of a parked queue read its files with pread.

Only the dispatcher's thread (and the store's load, before it starts) touches queues here: the thread that
writes a queue is the one that unmaps and maps it, so no write ever meets an unmapped file.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .consume_queue import ConsumeQueue

log = logging.getLogger(__name__)


class ConsumeQueueLru:
    def __init__(self, max_mapped_files: int) -> None:
        self.max_mapped_files = max(2, max_mapped_files)
        # Open (not parked) queues, least recently used first, with the mappings counted when they were opened
        # (a queue gains a file seldom: one per mappedFileSizeConsumeQueue / 20 messages).
        self._open: OrderedDict[ConsumeQueue, int] = OrderedDict()
        self.mapped = 0
        self.parked_total = 0  # (observable: queues parked so far)

    def touch(self, cq: ConsumeQueue) -> None:
        """`cq` is about to be written: map it if parked, make it the most recently used, park others if needed."""
        open_ = self._open
        if cq in open_:
            open_.move_to_end(cq)
            return
        if cq.parked:
            cq.unpark()
        n = cq.mapped_count()
        open_[cq] = n
        self.mapped += n
        while self.mapped > self.max_mapped_files and len(open_) > 1:
            old, count = open_.popitem(last=False)
            self.mapped -= count
            old.park()
            self.parked_total += 1

    def forget(self, cq: ConsumeQueue) -> None:
        """`cq` was destroyed."""
        count = self._open.pop(cq, None)
        if count is not None:
            self.mapped -= count

    def clear(self) -> None:
        self._open.clear()
        self.mapped = 0
