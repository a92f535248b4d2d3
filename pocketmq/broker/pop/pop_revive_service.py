"""PopReviveService: gives back what pops handed out and nobody acked in time.

Checkpoints (``ck``) and acks (``ack``, ``bAck``) reach the queues of ``rmq_sys_REVIVE_LOG_<cluster>`` through the
timer wheel (revive_log.py): a checkpoint ``popAckTimeInterval`` before its revive time (pop time + invisible
time), its acks at that revive time. Each queue is read in order, as the system group ``CID_RMQ_SYS_REVIVE_GROUP``
(its consumer offset is the revive offset), every ``reviveInterval``. A checkpoint read is held until it is safe
to revive; the acks that follow it set its bits; one all of whose messages are acked is dropped. So the service
holds only the checkpoints within a few seconds of their revive time, however many pops are out.

When a checkpoint is safe is decided as RocketMQ 5 decides it, from the deliver times (``TIMER_DELIVER_MS``) of
the records read, not from the clock: the timer hands records over in deliver-time order, so once the queue has
given a record due more than ``popAckTimeInterval + popReviveMargin`` after a checkpoint's revive time, every
ack of that checkpoint (due at its revive time) is in the queue before it, even when the timer delivered it
late. When the queue goes quiet (nothing read due in the last 3 margins), the clock stands in for the newest
deliver time (RocketMQ's endTime), as far as the timer has delivered. A safe checkpoint has each message not acked
re-read from its queue and put into the group's pop retry topic with reconsumeTimes + 1, or into ``%DLQ%group``
once the group's retryMaxTimes are used up (the send-back that CONSUMER_SEND_MSG_BACK uses). A message whose put
fails (its retry topic refuses it: properties too big once the revive's are added, a topic name too long) is
handed, as RocketMQ 5's rePutCK hands it, to a new checkpoint of its own in the same revive queue (``rp`` its
rePutTimes + 1), due the next of ``popCkRewriteIntervals`` (RocketMQ's ckRewriteIntervalsInSeconds, 10 s ... 2 h)
later; after the last one it is dropped with skipWhenCKRePutReachMaxTimes, else written again at the last
interval. The old checkpoint is then done, and the revive offset moves on past it.

The revive offset is committed as RocketMQ 5 commits it, the last record processed (reading goes on from the one
after it), and up to the oldest checkpoint still held (its revive offset - 1), so a restarted broker, or a RocketMQ
5 broker on the same store, reads the held checkpoints and their acks again and carries on: nothing handed out is
forgotten (a message revived just before a crash may be revived twice, as in RocketMQ: delivery is at least once).
Earlier pocketmq committed the next record to read instead; consumer_offset_manager.py recognises its files (no
``dataVersion``, which RocketMQ 5 and pocketmq now write) and moves their revive offsets back one record as it loads
them: a record read again at worst (revived twice), never one skipped. One revived behind a checkpoint still
held (records due at the same time fall in any order) gets an ack record of its own in the queue, so a restart
that reads it again finds it done. With ``timerWheelEnable=false`` nothing is revived and pops are refused, as in
RocketMQ: the records would not be delivered in time order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pocketmq.common.codec import CorruptRecordError, decode_all
from pocketmq.common.constants import PROPERTY_TIMER_DELIVER_MS
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.pop_ack_constants import ACK_TAG, BATCH_ACK_TAG, CK_TAG, PROPERTY_FIRST_POP_TIME, REVIVE_GROUP
from pocketmq.remoting.tasks import run_whole
from pocketmq.storage.config import parse_delay_levels
from pocketmq.storage.message_filter import TagsFilter
from pocketmq.storage.pop import BatchAckMsg, PopCheckPoint, decode_ack
from pocketmq.storage.pop.pop_check_point import PopRecordError
from pocketmq.storage.results import GetMessageResult, GetMessageStatus
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

_ALL = TagsFilter(None)
_BATCH = 32
_RETRY_QUEUE_NUM = 1  # PopAckConstants.retryQueueNum: a pop retry topic has one queue
_MOVED = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY)


@dataclass(slots=True)
class ReviveQueue:
    """One revive queue: where its reading stands and the checkpoints held until they are safe to revive."""

    queue_id: int
    offset: int = -1  # the next revive-log offset to read; -1 until loaded from the revive group's offset (+ 1)
    held: dict[str, PopCheckPoint] = field(default_factory=dict)  # merge key -> checkpoint, in log order
    end_time: int = 0  # the latest deliver time read (ms; RocketMQ's endTime)


class PopReviveService:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.revive_topic = controller.pop_message_processor.revive_log.revive_topic
        n = controller.pop_message_processor.revive_log.queue_num
        self.queues = [ReviveQueue(i) for i in range(n)]
        self.revived = 0  # messages put back (retry or DLQ), for tests and statistics
        self.ck_re_puts = 0  # checkpoints written anew for a message whose put failed (re_put_ck), likewise
        bc = controller.broker_config
        self.ck_rewrite_intervals_ms = parse_delay_levels(bc.pop_ck_rewrite_intervals, "popCkRewriteIntervals")
        self.margin_ms = round(bc.pop_revive_margin * 1000)
        # A checkpoint is safe once a record due this long after its revive time was read (ackTimeInterval + 1 s).
        self.safe_after_ms = round(bc.pop_ack_time_interval * 1000) + self.margin_ms
        self._round = asyncio.Lock()  # (the periodic task and a caller's round never read a queue at once)

    def start(self) -> None:
        if not self.controller.broker_config.timer_wheel_enable:
            log.warning("the revive service does not run: timerWheelEnable is false (pops are refused)")
            return
        self.controller.tasks.periodic("pop-revive", self.controller.broker_config.revive_interval, self.revive_all)

    @property
    def held_count(self) -> int:
        return sum(len(q.held) for q in self.queues)

    async def revive_all(self) -> None:
        if not self.controller.broker_config.timer_wheel_enable:
            return  # (RocketMQ: "skip revive topic because timerWheelEnable is false")
        async with self._round:
            # (before the queues are read: what it vouches for is in them then)
            watermark = await self._timer_watermark() if self.held_count else None
            for q in self.queues:
                try:
                    await self._read_new(q)
                    await self._revive_due(q, self._end_time(q, watermark))
                finally:
                    self._commit(q)  # also when shutdown cancels the round: what was put back is not put back again

    async def _read_new(self, q: ReviveQueue) -> None:
        c = self.controller
        if q.offset < 0:
            committed = c.consumer_offset_manager.query_offset(REVIVE_GROUP, self.revive_topic, q.queue_id)
            # (RocketMQ 5's: the last record processed; none, the queue's first, 0 while the store has no file of
            # it, as RocketMQ's store answers where ours says -1)
            q.offset = committed + 1 if committed >= 0 else max(
                0, c.store.get_min_offset_in_queue(self.revive_topic, q.queue_id))
        while True:
            result = await self._read(self.revive_topic, q.queue_id, q.offset, _BATCH)
            if result.status in _MOVED:
                q.offset = result.next_begin_offset  # (revive log files removed under it)
                continue
            if not result.message_count:
                return
            for m in decode_all(result.body):
                self._consume(q, m)
            q.offset = result.next_begin_offset

    def _end_time(self, q: ReviveQueue, watermark: int | None) -> int:
        """Up to which deliver time the queue, read to its end, is complete. RocketMQ's "move endTime": a queue
        that gave nothing due in the last three margins has nothing on its way, and the clock stands in, as far
        as the timer has delivered (else a checkpoint whose messages nobody acks, the last record of its queue,
        would wait for a record that never comes)."""
        if watermark is not None and q.held and time.time_ns() // 1_000_000 - q.end_time > 3 * self.margin_ms:
            return max(q.end_time, watermark)
        return q.end_time

    async def _timer_watermark(self) -> int | None:
        """A deliver time before which every revive record written so far has been delivered and dispatched, or
        None when the store cannot tell now. RocketMQ asks that the timer be less than a second behind the clock
        and its enqueue too; this asks that the timer have taken every record written before and delivered the
        slots before the time it answers, whatever its precision."""
        store = self.controller.store
        timer = store.timer_message_store
        wait = self.margin_ms / 1000
        if timer is None or not await asyncio.to_thread(store.wait_dispatched, wait):
            return None
        written = store.get_max_offset_in_queue(TIMER_TOPIC, 0)
        for _ in range(10):  # (its enqueue thread takes them within a poll)
            if timer.curr_queue_offset >= written:
                break
            await asyncio.sleep(wait / 10)
        else:
            return None
        # Every slot before it is delivered, a record taken late included (one due already is delivered as it
        # is taken); what the timer put by now reaches the consume queues before the queues are read.
        watermark = min(timer.curr_read_time_ms, time.time_ns() // 1_000_000)
        return watermark if await asyncio.to_thread(store.wait_dispatched, wait) else None

    def _consume(self, q: ReviveQueue, m: MessageExt) -> None:
        deliver = m.properties.get(PROPERTY_TIMER_DELIVER_MS)
        if deliver is not None and deliver.isdigit():  # (records pocketmq wrote before the timer carry none)
            q.end_time = max(q.end_time, int(deliver))
        try:
            if m.tags == CK_TAG:
                new = PopCheckPoint.decode(m.body)
                new.revive_offset = m.queue_offset
                q.held.setdefault(new.merge_key(), new)
            elif m.tags in (ACK_TAG, BATCH_ACK_TAG):
                ack = decode_ack(m.body, m.tags == BATCH_ACK_TAG)
                key = ack.merge_key()
                ck = q.held.get(key)
                if ck is None:
                    return  # revived already (a late ack), or of a checkpoint before the revive offset
                for offset in ack.ack_offsets:
                    i = ck.index_of_ack(offset)
                    if i >= 0:
                        ck.bit_map |= 1 << i
                if ck.all_acked:
                    del q.held[key]
        except PopRecordError as e:
            log.warning("revive queue %d offset %d: skipped %s", q.queue_id, m.queue_offset, e)

    async def _revive_due(self, q: ReviveQueue, end_time: int) -> None:
        for key, ck in list(q.held.items()):
            if end_time - ck.revive_time <= self.safe_after_ms:
                continue  # an ack of it may still be on its way through the timer
            # Whole: a checkpoint half put back when shutdown cancels the round would be put back in full again by
            # the next broker on the store (the bits of what went back are only in memory).
            await run_whole(self._revive_held(q, key, ck))

    async def _revive_held(self, q: ReviveQueue, key: str, ck: PopCheckPoint) -> None:
        re_put = await self._revive(q, ck)
        if re_put is None:
            return
        del q.held[key]
        oldest = next(iter(q.held.values()), None)  # (held in log order)
        if oldest is not None and oldest.revive_offset < ck.revive_offset:
            # Behind the committed revive offset's checkpoint: a restart would read this one again and put its
            # messages back a second time (after they were popped, and perhaps acked, from the retry topic). Not
            # the offsets re-put: the mark would ack the new checkpoint of the first one (the same key), read
            # after it when it is due at once; a restart re-puts them again at worst.
            done = BatchAckMsg(-1, ck.start_offset, ck.cid, ck.topic, ck.queue_id, ck.pop_time, ck.broker_name,
                               [ck.ack_offset_by_index(i) for i in range(ck.num) if not re_put >> i & 1])
            put = await self.controller.pop_message_processor.revive_log.append_ack(done, q.queue_id, ck.revive_time)
            if not put.is_ok:
                log.warning("revive of %s@%s queue %d: its done mark not written (%s); a restart may revive it "
                            "again", ck.topic, ck.cid, ck.queue_id, put.status.value)

    def _commit(self, q: ReviveQueue) -> None:
        if q.offset < 0:
            return
        # The last record processed, as RocketMQ 5 commits it: a RocketMQ 5 broker on the store reads on from the
        # next one, and would never see the held checkpoint were it committed (a message lost).
        upto = min((ck.revive_offset for ck in q.held.values()), default=q.offset) - 1
        c = self.controller
        if upto >= 0 and c.consumer_offset_manager.query_offset(REVIVE_GROUP, self.revive_topic, q.queue_id) != upto:
            c.consumer_offset_manager.commit_offset("revive", REVIVE_GROUP, self.revive_topic, q.queue_id, upto)

    async def _revive(self, q: ReviveQueue, ck: PopCheckPoint) -> int | None:
        """Put back every message of ``ck`` not acked, and hand each whose put fails to a checkpoint of its own
        (re_put_ck). The indexes so handed over, or None (``ck`` kept for the next round) when such a checkpoint
        could not be written."""
        if ck.cid not in self.controller.subscription_group_manager.subscription_group_table:
            # RocketMQ's revive skips a checkpoint of a group the broker does not hold (deleted, or named by a
            # CHANGE_INVISIBLE_TIME for any group): putting it back would make a retry topic for each such name.
            log.warning("revive of %s@%s queue %d: no such subscription group; skipped", ck.topic, ck.cid,
                        ck.queue_id)
            return 0
        re_put = 0
        for i in range(ck.num):
            if ck.is_acked(i):
                continue
            offset = ck.ack_offset_by_index(i)
            msg = await self._message_at(ck.topic, ck.queue_id, offset)
            if msg is None:
                log.info("revive of %s@%s queue %d offset %d: the message is gone", ck.topic, ck.cid, ck.queue_id,
                         offset)
                continue
            if await self._put_back(ck, msg):
                ck.bit_map |= 1 << i  # (not again if a later message of the checkpoint cannot be re-put)
                self.revived += 1
            elif await self.re_put_ck(q, ck, offset):
                re_put |= 1 << i
            else:
                return None
        return re_put

    async def re_put_ck(self, q: ReviveQueue, old: PopCheckPoint, offset: int) -> bool:
        """RocketMQ 5's rePutCK: the message at ``offset`` of ``old``, whose put failed, gets a checkpoint of its
        own in the same revive queue, rePutTimes + 1, due the next rewrite interval after ``old`` (the last one
        from then on); dropped once they are used up if skipWhenCKRePutReachMaxTimes. False when it could not be
        written (RocketMQ ignores that put's result and the message is lost; here ``old`` is kept instead)."""
        re_put_times = old.parse_re_put_times()
        intervals = self.ck_rewrite_intervals_ms
        if re_put_times >= len(intervals) and self.controller.broker_config.skip_when_ck_re_put_reach_max_times:
            log.warning("rePut CK reach max times, drop it. %s, %s, %s, %d-%d, %d, %d, %d", old.topic, old.cid,
                        old.broker_name, old.queue_id, offset, old.pop_time, old.invisible_time, re_put_times)
            return True
        new = PopCheckPoint(offset, old.pop_time, old.invisible_time, 1, old.queue_id, old.topic, old.cid,
                            old.broker_name, queue_offset_diff=[0], re_put_times=str(re_put_times + 1))
        if old.revive_time <= time.time_ns() // 1_000_000:
            # (RocketMQ: "never expect an ACK matched in the future", the new one is only there to try again)
            new.invisible_time += intervals[min(re_put_times, len(intervals) - 1)]
        put = await self.controller.pop_message_processor.revive_log.append_check_point(new, q.queue_id)
        if not put.is_ok:
            log.warning("revive of %s@%s queue %d offset %d: its checkpoint not re-put (%s); kept for the next "
                        "round", old.topic, old.cid, old.queue_id, offset, put.status.value)
            return False
        self.ck_re_puts += 1
        log.info("revive of %s@%s queue %d offset %d: re-put as rePutTimes %d, revive time %d", old.topic, old.cid,
                 old.queue_id, offset, re_put_times + 1, new.revive_time)
        return True

    async def _message_at(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        result = await self._read(topic, queue_id, offset, 1)
        try:
            msgs = decode_all(result.body) if result.message_count else []
        except CorruptRecordError:
            return None
        return msgs[0] if msgs and msgs[0].queue_offset == offset else None

    async def _put_back(self, ck: PopCheckPoint, msg: MessageExt) -> bool:
        c = self.controller
        sgc = c.subscription_group_manager.subscription_group_table.get(ck.cid)
        max_reconsume = sgc.retry_max_times if sgc is not None else 16
        if ck.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            retry_topic = ck.topic
        else:
            retry_topic = c.pop_message_processor.retry_topic(ck.topic, ck.cid)
        extra = {}
        if msg.reconsume_times == 0 or PROPERTY_FIRST_POP_TIME not in msg.properties:
            extra[PROPERTY_FIRST_POP_TIME] = str(ck.pop_time)
        sender = c.send_message_processor
        back = sender.build_send_back_message(msg, ck.cid, retry_topic, _RETRY_QUEUE_NUM, max_reconsume, None,
                                              extra_properties=extra)
        if isinstance(back, str):
            log.warning("revive of %s@%s: %s", ck.topic, ck.cid, back)
            return False
        result = await sender.put_message(back)
        if not result.is_ok:
            log.warning("revive of %s@%s offset %d: put failed (%s)", ck.topic, ck.cid, msg.queue_offset,
                        result.status)
        return result.is_ok

    async def _read(self, topic: str, queue_id: int, offset: int, n: int) -> GetMessageResult:
        # Not in getMissTps: reading every revive queue every second would make an idle broker's ~8 a second,
        # where RocketMQ 4.9's runtime info (no POP there) shows clients' reads alone.
        offsets = self.controller.pop_message_processor.offsets
        return await offsets.read(REVIVE_GROUP, topic, queue_id, offset, n, _ALL, counted=False)
