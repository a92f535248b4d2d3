"""PopBufferMergeService: checkpoints held in memory, where the acks that come soon meet them, so that a message
popped and acked within ``popCkStayBufferTime`` costs no revive-log record at all (RocketMQ's
enablePopBufferMerge).

A pop's checkpoint is buffered, not written. An ack of a buffered checkpoint sets its bit in memory; once every
bit is set the checkpoint is done and is never written. A checkpoint still missing acks is written to the revive
log once it is ``popCkStayBufferTime`` old, or when its revive time comes near, and from then on acks are
written as records, as without the buffer.

The group's offset is what a restart would pop from, so it only moves past a pop's messages once its checkpoint
is done or written: per topic@group@queue the buffered pops are kept in order, and the offset is committed up to
the end of the first run of resolved ones. A pop reads from the end of the newest buffered pop of its queue (or
the committed offset when that is further). A crash loses the buffer but not a message: the offset was not
committed past anything whose checkpoint was lost, and those messages are popped again (at least once). A clean
shutdown writes every buffered checkpoint that is not done and commits the offsets.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pocketmq.remoting.tasks import run_whole
from pocketmq.storage.pop import AckMsg, PopCheckPoint

from .revive_log import ReviveLog

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

QueueKey = tuple[str, str, int]  # topic, group, queue id


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True, eq=False)
class BufferedCheckPoint:
    """RocketMQ's PopCheckPointWrapper: a pop's checkpoint while it is held in the buffer."""

    ck: PopCheckPoint
    revive_qid: int
    next_begin_offset: int  # where the pop's queue read ended (-1: not one of a queue's pops)
    added: int  # ms
    stored: bool = False
    storing: bool = False

    @property
    def resolved(self) -> bool:
        return self.stored or self.ck.all_acked


class PopBufferMergeService:
    def __init__(self, controller: BrokerController, revive_log: ReviveLog) -> None:
        self.controller = controller
        self.revive_log = revive_log
        bc = controller.broker_config
        self.enabled = bc.enable_pop_buffer_merge
        self.stay_ms = round(bc.pop_ck_stay_buffer_time * 1000)
        self.scan_interval = bc.pop_buffer_scan_interval
        self.buffer: dict[str, BufferedCheckPoint] = {}  # merge key -> not yet written, not yet done
        self.offset_queues: dict[QueueKey, collections.deque[BufferedCheckPoint]] = {}
        self.merged = 0  # checkpoints that were acked in the buffer and never written

    def start(self) -> None:
        if self.enabled:
            self.controller.tasks.periodic("pop-buffer-merge", self.scan_interval, self.scan)

    # --- pops and acks (event loop) ------------------------------------------------------------------------

    def latest_offset(self, topic: str, group: str, queue_id: int) -> int:
        q = self.offset_queues.get((topic, group, queue_id))
        return q[-1].next_begin_offset if q else -1

    def add_ck(self, ck: PopCheckPoint, revive_qid: int, next_begin_offset: int) -> None:
        """A pop's checkpoint; ``next_begin_offset`` -1 for one that moves no offset (change invisible time)."""
        entry = BufferedCheckPoint(ck, revive_qid, next_begin_offset, _now_ms())
        if ck.num > 0:
            self.buffer[ck.merge_key()] = entry
        else:
            entry.stored = True  # (nothing to revive: only the offset moves, RocketMQ's addCkMock)
        if next_begin_offset >= 0:
            self.offset_queues.setdefault((ck.topic, ck.cid, ck.queue_id), collections.deque()).append(entry)
            self._commit_resolved((ck.topic, ck.cid, ck.queue_id))

    def add_ack(self, ack: AckMsg) -> bool:
        """True when the ack met its checkpoint in the buffer (nothing to write); False: write the ack record."""
        entry = self.buffer.get(ack.merge_key())
        if entry is None or entry.storing:
            return False
        ck = entry.ck
        for offset in ack.ack_offsets:
            i = ck.index_of_ack(offset)
            if i >= 0:
                ck.bit_map |= 1 << i
        if ck.all_acked:
            del self.buffer[ck.merge_key()]
            self.merged += 1
            self._commit_resolved((ck.topic, ck.cid, ck.queue_id))
        return True

    def clear_offset_queue(self, topic: str, group: str, queue_id: int) -> None:
        """RocketMQ's clearOffsetQueue: the queue's offset was reset, and the pops buffered before it no longer say
        where the group is (their checkpoints stay, for their acks and their revive)."""
        self.offset_queues.pop((topic, group, queue_id), None)

    def has_pending(self, topic: str, group: str, queue_id: int) -> bool:
        return bool(self.offset_queues.get((topic, group, queue_id)))

    # --- writing and committing ----------------------------------------------------------------------------

    async def scan(self) -> None:
        """Write the checkpoints that stayed long enough or whose revive time comes near."""
        now = _now_ms()
        lead = 2 * round(self.scan_interval * 1000) + round(self.controller.broker_config.revive_interval * 1000)
        for entry in list(self.buffer.values()):
            if entry.storing or entry.stored:
                continue
            if now - entry.added >= self.stay_ms or entry.ck.revive_time - now <= lead:
                await self._store(entry)

    async def flush_all(self) -> None:
        """Shutdown: write every buffered checkpoint that is not done, so that the offsets can be committed."""
        for entry in list(self.buffer.values()):
            if not entry.storing and not entry.stored:
                await self._store(entry)

    async def _store(self, entry: BufferedCheckPoint) -> None:
        # Whole: cut after the put by shutdown's cancel of the scan, a written checkpoint would stay buffered as
        # unwritten, acks would merge into it without a record, and the next broker would revive acked messages.
        await run_whole(self._write(entry))

    async def _write(self, entry: BufferedCheckPoint) -> None:
        entry.storing = True
        try:
            put = await self.revive_log.append_check_point(entry.ck, entry.revive_qid)
        finally:
            entry.storing = False
        ck = entry.ck
        if not put.is_ok:
            log.warning("checkpoint of %s@%s queue %d not written (%s); tried again", ck.topic, ck.cid, ck.queue_id,
                        put.status)
            return
        entry.stored = True
        self.buffer.pop(ck.merge_key(), None)
        self._commit_resolved((ck.topic, ck.cid, ck.queue_id))

    def _commit_resolved(self, key: QueueKey) -> None:
        q = self.offset_queues.get(key)
        if not q:
            return
        upto = -1
        while q and q[0].resolved:
            upto = q.popleft().next_begin_offset
        if not q:
            del self.offset_queues[key]
        if upto >= 0:
            topic, group, queue_id = key
            com = self.controller.consumer_offset_manager
            if com.reset_offset_table and com.has_offset_reset(topic, group, queue_id):
                # Pops from before an admin's reset still held: the group's next pop of the queue drops them, and
                # until then the offset stays the reset's (RocketMQ, which commits a pop's offset as soon as its
                # checkpoint is written, has nothing left to commit by then).
                return
            if upto > com.query_offset(group, topic, queue_id):
                com.commit_offset("pop", group, topic, queue_id, upto)
