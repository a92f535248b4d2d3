"""ProcessQueue: a queue's pulled messages waiting for (or in) consumption, in offset order.

Pulls add messages, consumption removes them; the counts and sizes drive flow control, and the smallest
offset still held is how far the group may commit (RocketMQ's rule: a slow message holds back the offset,
so a restart may deliver again what was consumed after it — at least once, never lost).

Everything here runs on the event loop (listeners on threads never touch it), so no locks guard the maps;
``consume_lock`` is the orderly consumer's "a batch is being consumed" lock, not a data lock.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Iterable

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.message import MessageExt

from ...message_const import PROPERTY_MAX_OFFSET

_monotonic = time.monotonic  # (read per consumed batch)
CONSUME_START_TIME = "CONSUME_START_TIME"  # MessageConst.PROPERTY_CONSUME_START_TIMESTAMP


class ProcessQueue:
    def __init__(self) -> None:
        # offset -> message, with the offsets kept sorted beside it (pulls append in order, so inserting is
        # almost always an append; removal is a bisect).
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []
        self.msg_count = 0  # messages held here or being consumed orderly (RocketMQ's msgCount)
        self.msg_size = 0  # sum of their body lengths
        self.queue_offset_max = 0  # highest offset ever added
        self.msg_acc_cnt = 0  # backlog behind the last pulled message (MAX_OFFSET - its offset)
        self.dropped = False
        self.locked = False  # orderly: the broker lock is ours
        self.last_lock_timestamp = time.monotonic()
        self.last_pull_timestamp = time.monotonic()
        self.last_consume_timestamp = time.monotonic()
        self.consuming = False  # orderly: a consume request is scheduled or running for this queue
        self.try_unlock_times = 0
        # Orderly: the batch taken for consumption, offset -> message, until commit or consume-again.
        self.consuming_msg_orderly_tree_map: dict[int, MessageExt] = {}
        self.consume_lock = asyncio.Lock()

    # --- state ---------------------------------------------------------------------------------------------

    async def try_consume_lock(self, timeout: float) -> bool:
        """Take ``consume_lock`` within ``timeout`` seconds (the batch in flight, if any, finishes first)."""
        try:
            async with asyncio.timeout(timeout):
                await self.consume_lock.acquire()
        except TimeoutError:
            return False
        return True

    def is_lock_expired(self, max_live_time: float) -> bool:
        return time.monotonic() - self.last_lock_timestamp > max_live_time

    def is_pull_expired(self, max_idle_time: float) -> bool:
        return time.monotonic() - self.last_pull_timestamp > max_idle_time

    def has_temp_message(self) -> bool:
        return bool(self._msgs)

    def get_max_span(self) -> int:
        """Last minus first offset held (the concurrent consumer's flow-control measure)."""
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def first_offset(self) -> int | None:
        return self._offsets[0] if self._offsets else None

    def messages(self) -> list[MessageExt]:
        """The messages held (not those being consumed orderly), in offset order."""
        return [self._msgs[o] for o in self._offsets]

    def clear(self) -> None:
        """Forget everything held (RocketMQ's ProcessQueue.clear), the highest offset added included: a queue
        seeked back is pulled again from there, and the next commit must not run past what it has not given out."""
        self._msgs.clear()
        self._offsets.clear()
        self.consuming_msg_orderly_tree_map.clear()
        self.msg_count = self.msg_size = 0
        self.queue_offset_max = 0

    # --- pulls and concurrent consumption ------------------------------------------------------------------

    def put_message(self, msgs: Iterable[MessageExt]) -> bool:
        """Add pulled messages; True when an orderly consumer should start a consume request for this queue."""
        held, offsets = self._msgs, self._offsets
        added = size = 0
        top = offsets[-1] if offsets else -1
        last: MessageExt | None = None
        for msg in msgs:
            last = msg
            offset = msg.queue_offset
            if offset in held:
                continue
            held[offset] = msg
            if offset > top:  # a pull's messages come in offset order, after what is held
                offsets.append(offset)
                top = offset
            else:
                bisect.insort(offsets, offset)
            added += 1
            size += len(msg.body)
        self.msg_count += added
        self.msg_size += size
        if top > self.queue_offset_max:
            self.queue_offset_max = top
        dispatch = False
        if self._msgs and not self.consuming:
            dispatch = True
            self.consuming = True
        if last is not None:
            max_offset = last.get_property(PROPERTY_MAX_OFFSET)
            if max_offset is not None and max_offset.isdigit():
                self.msg_acc_cnt = max(0, int(max_offset) - last.queue_offset)
        return dispatch

    def remove_message(self, msgs: Iterable[MessageExt]) -> int:
        """Drop consumed messages; the next offset the group may commit: the smallest still held, or one past
        the highest ever added once none is left (-1 when nothing was held to begin with)."""
        held = self._msgs
        if not held:
            return -1
        self.last_consume_timestamp = _monotonic()
        offsets = self._offsets
        for msg in msgs:
            offset = msg.queue_offset
            gone = held.pop(offset, None)
            if gone is None:
                continue
            # Consumption mostly finishes in pull order: the head is the usual place to remove from.
            del offsets[0 if offsets[0] == offset else bisect.bisect_left(offsets, offset)]
            self.msg_count -= 1
            self.msg_size -= len(gone.body)
        return offsets[0] if offsets else self.queue_offset_max + 1

    # --- orderly consumption -------------------------------------------------------------------------------

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move the first ``batch_size`` messages into the consuming map; none left ends this consume round."""
        self.last_consume_timestamp = time.monotonic()
        n = min(batch_size, len(self._offsets))
        taken_offsets, self._offsets = self._offsets[:n], self._offsets[n:]
        taken = []
        for offset in taken_offsets:
            msg = self._msgs.pop(offset)
            self.consuming_msg_orderly_tree_map[offset] = msg
            taken.append(msg)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """The consumed batch is done: forget it; the next offset to consume (-1 if nothing was in flight)."""
        if not self.consuming_msg_orderly_tree_map:
            return -1
        offset = max(self.consuming_msg_orderly_tree_map) + 1
        self.msg_count -= len(self.consuming_msg_orderly_tree_map)
        for msg in self.consuming_msg_orderly_tree_map.values():
            self.msg_size -= len(msg.body)
        self.consuming_msg_orderly_tree_map.clear()
        return offset

    def rollback(self) -> None:
        """Every message consumed since the last commit is to be consumed again, in order."""
        self.make_message_to_consume_again(list(self.consuming_msg_orderly_tree_map.values()))

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """Put a batch back at the head of the queue, to be taken again (in order) later."""
        for msg in msgs:
            self.consuming_msg_orderly_tree_map.pop(msg.queue_offset, None)
            if msg.queue_offset not in self._msgs:
                self._msgs[msg.queue_offset] = msg
                bisect.insort(self._offsets, msg.queue_offset)

    # --- consume timeout (concurrent) ----------------------------------------------------------------------

    def expired_messages(self, consume_timeout: float, limit: int = 16) -> list[MessageExt]:
        """Messages at the head whose consumption started more than ``consume_timeout`` seconds ago."""
        deadline = now_ms() - int(consume_timeout * 1000)
        out = []
        for offset in self._offsets[:limit]:
            start = self._msgs[offset].properties.get(CONSUME_START_TIME)
            if start is None or not start.isdigit() or int(start) > deadline:
                break
            out.append(self._msgs[offset])
        return out
