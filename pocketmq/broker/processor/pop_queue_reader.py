"""A pop's reads, queue by queue: RocketMQ 5's PopMessageProcessor.popMsgFromTopic, popMsgFromQueue and
appendCheckPoint. Each queue is locked for the group while it is read; what is read is handed to the pop with a
checkpoint in the revive log (or, orderly, the group's order info) and the group's offset committed past it, and
what a pop retry topic held goes out under the topic the consumer popped. PopContext gathers what the answer
carries (pop_answers.pop_found)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pocketmq.common.codec import decode_all, encode
from pocketmq.common.extra_info_util import build_extra_info, build_msg_offset_info, build_start_offset_info
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.remoting.pop_header import PopMessageRequestHeader
from pocketmq.remoting.tasks import run_whole
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter, TagsFilter
from pocketmq.storage.pop import PopCheckPoint
from pocketmq.storage.results import GetMessageResult, GetMessageStatus

from ..pop import PopBufferMergeService, QueueLockManager, ReviveLog
from ..pop.pop_offsets import PopOffsets
from ..stats.broker_metrics import POP, POP_RETRY
from .abstract_send_message_processor import AbstractSendMessageProcessor
from .base import log

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

_MATCH_ALL = TagsFilter(None)  # a pop retry topic holds only what the group's filter once matched
_RE_READ = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
            GetMessageStatus.OFFSET_FOUND_NULL)
_SKIP = (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.OFFSET_FOUND_NULL,
         GetMessageStatus.MESSAGE_WAS_REMOVING)


@dataclass(slots=True)
class PopContext:
    """One pop's progress over the queues it visits."""

    header: PopMessageRequestHeader
    channel: Channel
    pop_time: int
    revive_qid: int
    message_filter: MessageFilter
    buffers: list[bytes] = field(default_factory=list)
    count: int = 0
    rest_num: int = 0
    start_offset_info: list[str] = field(default_factory=list)
    msg_offset_info: list[str] = field(default_factory=list)
    order_count_info: list[str] = field(default_factory=list)
    unblock_at: int | None = None  # ms: when the first blocked orderly queue frees up
    skipped: bool = False  # moved a queue's offset past messages its filter left out

    @property
    def order(self) -> bool:
        return bool(self.header.order)


class PopQueueReader:
    """Made once with its PopMessageProcessor, whose lock manager, offsets and revive log it shares: a queue's read
    costs no more than when these were the processor's own methods."""

    __slots__ = ("controller", "queue_lock_manager", "offsets", "buffer_merge", "revive_log")

    def __init__(self, controller: BrokerController, queue_lock_manager: QueueLockManager, offsets: PopOffsets,
                 buffer_merge: PopBufferMergeService, revive_log: ReviveLog) -> None:
        self.controller = controller
        self.queue_lock_manager = queue_lock_manager
        self.offsets = offsets
        self.buffer_merge = buffer_merge
        self.revive_log = revive_log

    async def pop_from_topic(self, ctx: PopContext, topic: str, is_retry: bool, start: int) -> None:
        """Every queue of ``topic`` once, as 5.5.0 walks them: with priorityOrderAsc from the highest down, shifted
        by ``start`` (a random one; 0 for a priority pop, which so reads the highest priority first)."""
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None or tc.read_queue_nums <= 0:
            return
        n = tc.read_queue_nums
        descending = self.controller.broker_config.priority_order_asc
        for i in range(n):
            await self.pop_from_queue(ctx, topic, ((n - 1 - i if descending else i) + start) % n, is_retry)

    async def pop_from_queue(self, ctx: PopContext, topic: str, queue_id: int, is_retry: bool) -> None:
        group = ctx.header.consumer_group
        # A full batch still locks the queue, takes an admin's reset of it and initialises its offset (counting
        # what is left towards restNum in _pop_locked), as RocketMQ 5's popMsgFromQueue.
        key = self.queue_lock_manager.build_lock_key(topic, group, queue_id)
        if not self.queue_lock_manager.try_lock(key):
            # Another pop of this group reads the queue right now.
            if not ctx.order:
                ctx.rest_num += max(0, self.controller.store.get_max_offset_in_queue(topic, queue_id)
                                    - self.offsets.pop_offset(group, topic, queue_id, ctx.header.init_mode, init=False))
            return
        try:
            await self._pop_locked(ctx, topic, queue_id, is_retry)
        finally:
            self.queue_lock_manager.unlock(key)

    async def _pop_locked(self, ctx: PopContext, topic: str, queue_id: int, is_retry: bool) -> None:
        c = self.controller
        header = ctx.header
        group = header.consumer_group
        offset = None
        if c.consumer_offset_manager.reset_offset_table:  # (nearly always empty: no key built then)
            offset = self.offsets.reset_pop_offset(group, topic, queue_id)
        if offset is None:
            offset = self.offsets.pop_offset(group, topic, queue_id, header.init_mode)
        if ctx.order and c.consumer_order_info_manager.check_block(header.attempt_id, topic, group, queue_id):
            free = c.consumer_order_info_manager.lock_free_timestamp(topic, group, queue_id)
            if free is not None and (ctx.unblock_at is None or free < ctx.unblock_at):
                ctx.unblock_at = free
            return
        need = header.max_msg_nums - ctx.count
        if need <= 0:
            ctx.rest_num += max(0, c.store.get_max_offset_in_queue(topic, queue_id) - offset)
            return
        flt = _MATCH_ALL if is_retry else ctx.message_filter
        result = await self.offsets.read(group, topic, queue_id, offset, need, flt)
        if result.status in _RE_READ:
            # The stored offset is outside the queue (expired files, a reset): go on from where the queue is.
            self.offsets.commit_offset(ctx.channel, group, topic, queue_id, result.next_begin_offset)
            offset = result.next_begin_offset
            result = await self.offsets.read(group, topic, queue_id, offset, need, flt)
        if result.message_count:
            if not await self._take(ctx, topic, queue_id, offset, result, is_retry):
                ctx.rest_num += result.max_offset - offset
                return
        elif result.status in _SKIP and result.next_begin_offset > offset:
            self._skip(ctx, topic, queue_id, offset, result.next_begin_offset)  # filtered out
        ctx.rest_num += max(0, result.max_offset - result.next_begin_offset)

    async def _take(self, ctx: PopContext, topic: str, queue_id: int, offset: int, result: GetMessageResult,
                    is_retry: bool) -> bool:
        """Hand the messages read to this pop: record them (order info, or a checkpoint), commit the offset and
        add them to the answer. False when the checkpoint could not be written (nothing is handed out)."""
        c = self.controller
        header = ctx.header
        group = header.consumer_group
        if ctx.order:
            c.consumer_order_info_manager.update(header.attempt_id, topic, group, queue_id, ctx.pop_time,
                                                 header.invisible_time, result.queue_offsets, ctx.order_count_info)
            self.offsets.commit_offset(ctx.channel, group, topic, queue_id, offset)
        else:
            ck = PopCheckPoint(offset, ctx.pop_time, header.invisible_time, result.message_count, queue_id, topic,
                               group, c.broker_config.broker_name,
                               queue_offset_diff=[o - offset for o in result.queue_offsets])
            if self.buffer_merge.enabled:
                self.buffer_merge.add_ck(ck, ctx.revive_qid, result.next_begin_offset)
            elif not await run_whole(self._write_check_point(ctx, ck, result.next_begin_offset)):
                return False
        build_start_offset_info(ctx.start_offset_info, topic, queue_id, offset)
        build_msg_offset_info(ctx.msg_offset_info, topic, queue_id, result.queue_offsets)
        if is_retry:
            ctx.buffers.append(self._as_original_topic(ctx, offset, result))
        else:
            ctx.buffers.extend(result.buffers)
        ctx.count += result.message_count
        c.broker_stats_manager.inc_get(group, header.topic, result.message_count, result.buffer_total_size)
        c.broker_stats_manager.metrics.get(group, header.topic, result.message_count, result.buffer_total_size,
                                           POP_RETRY if is_retry else POP)
        return True

    async def _write_check_point(self, ctx: PopContext, ck: PopCheckPoint, next_begin_offset: int) -> bool:
        """The checkpoint, then the offset past its messages; run whole (a handler cancelled between the two, as
        the server's stop does, would leave the messages both revived and popped again)."""
        put = await self.revive_log.append_check_point(ck, ctx.revive_qid)
        if not put.is_ok:
            log.warning("pop of %s@%s queue %d: checkpoint not written (%s)", ck.topic, ck.cid, ck.queue_id,
                        put.status)
            return False
        self.offsets.commit_offset(ctx.channel, ck.cid, ck.topic, ck.queue_id, next_begin_offset)
        return True

    def _skip(self, ctx: PopContext, topic: str, queue_id: int, offset: int, next_begin: int) -> None:
        """Move past messages the filter left out; behind buffered pops of the queue, in their order."""
        group = ctx.header.consumer_group
        ctx.skipped = True
        if ctx.order or not self.buffer_merge.has_pending(topic, group, queue_id):
            self.offsets.commit_offset(ctx.channel, group, topic, queue_id, next_begin)
            return
        mock = PopCheckPoint(offset, ctx.pop_time, ctx.header.invisible_time, 0, queue_id, topic, group)
        self.buffer_merge.add_ck(mock, ctx.revive_qid, next_begin)

    def _as_original_topic(self, ctx: PopContext, offset: int, result: GetMessageResult) -> bytes:
        """Messages of a pop retry topic as RocketMQ answers them: under the topic the consumer popped, each with
        its receipt handle in POP_CK (the offset infos only describe the retry topic's queue)."""
        header = ctx.header
        broker_name = self.controller.broker_config.broker_name
        out = []
        for m in decode_all(result.body):
            m.put_property(PROPERTY_POP_CK, build_extra_info(offset, ctx.pop_time, header.invisible_time,
                                                             ctx.revive_qid, m.topic, broker_name, m.queue_id,
                                                             m.queue_offset))
            host = AbstractSendMessageProcessor.host_bytes
            out.append(encode(
                topic=header.topic, body=m.body, properties=m.properties_string, queue_id=m.queue_id, flag=m.flag,
                queue_offset=m.queue_offset, physical_offset=m.commit_log_offset, sys_flag=m.sys_flag,
                born_timestamp=m.born_timestamp, born_host=host(m.born_host), store_timestamp=m.store_timestamp,
                store_host=host(m.store_host), reconsume_times=m.reconsume_times,
                prepared_transaction_offset=m.prepared_transaction_offset,
            ))
        return b"".join(out)
