"""PopMessageProcessor: POP_MESSAGE (200050), RocketMQ 5's consumption without client-side rebalance.

A pop reads from the group's offset in each queue it visits (queue id -1: every queue of the topic, downwards from a
random one, a PRIORITY topic's from its highest queue, its highest priority; with ``popFromRetryProbability`` percent
the group's pop retry topic first, else after the topic when the batch is not full), commits the offset past what it
read at once and writes a checkpoint of it to the revive log. What is not acked before the checkpoint's invisible
time runs out the revive service gives back through the retry topic (PopReviveService). An orderly pop
(``order=true``) writes no checkpoint: the queue stays blocked for the group until the batch is acked
(ConsumerOrderInfoManager). A pop that finds nothing is parked for its poll time
(PopLongPollingService).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.codec import decode_all, encode
from pocketmq.common.extra_info_util import build_extra_info, build_msg_offset_info, build_start_offset_info
from pocketmq.common.pop_ack_constants import (
    POP_ORDER_REVIVE_QUEUE,
    PROPERTY_POP_CK,
    build_pop_retry_topic,
)
from pocketmq.common.topic_attributes import TopicMessageType, topic_message_type
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.pop_header import PopMessageRequestHeader, PopMessageResponseHeader
from pocketmq.remoting.tasks import run_whole
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter, TagsFilter
from pocketmq.storage.pop import PopCheckPoint
from pocketmq.storage.results import GetMessageResult, GetMessageStatus

from ..filter import (
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionParseError,
    build_subscription_data,
    message_filter_for,
)
from ..longpolling.pop_long_polling_service import (
    PollingResult,
    PopLongPollingService,
    all_queues_below_zero,
    born_time_of,
    poll_deadline,
    timeout_too_much,
)
from ..pop import PopBufferMergeService, QueueLockManager, ReviveLog
from ..pop.pop_offsets import PopOffsets
from ..stats.broker_metrics import POP, POP_RETRY
from .abstract_send_message_processor import AbstractSendMessageProcessor
from .base import BrokerProcessor, log, response
from .pop_answers import group_not_exist, topic_not_exist, with_blank_header

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

MAX_POP_NUMS = 32  # RocketMQ refuses more per pop
_BLANK = PopMessageResponseHeader(0, 0, 0, 0)
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


class PopMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.POP_MESSAGE] = self.pop_message
        bc = controller.broker_config
        self.queue_lock_manager = QueueLockManager()
        self.revive_log = ReviveLog(controller)
        self.buffer_merge = PopBufferMergeService(controller, self.revive_log)
        self.offsets = PopOffsets(controller, self.buffer_merge)
        self.long_polling = PopLongPollingService(
            self.execute_request_when_wakeup, controller.tasks, bc.pop_polling_size,
            on_park=controller.store.reput_service.hurry, max_polling_size=bc.max_pop_polling_size,
        )
        self._random = random.Random()

    def retry_topic(self, topic: str, group: str) -> str:
        return build_pop_retry_topic(topic, group, self.controller.broker_config.enable_retry_topic_v2)

    async def pop_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return await self._process(channel, request, None)

    async def execute_request_when_wakeup(self, channel: Channel, request: RemotingCommand, deadline: float) -> None:
        """Run a parked pop again (it may park again until ``deadline``) and write its answer to the channel; on a
        connection whose writes are paused, answer that nothing was found instead of popping a batch its peer
        does not take (an arrival wakes only a request whose connection reads: a paused one is woken by its timer,
        or by an arrival an instant before its connection paused again)."""
        resp: RemotingCommand | None
        try:
            if channel.write_paused:
                resp = response(request, ResponseCode.POLLING_TIMEOUT, GetMessageStatus.NO_MESSAGE_IN_QUEUE.value)
                # (woken by a drain that another writer undid: the arrival it carried goes to the next one)
                header = request.decode_header(PopMessageRequestHeader)
                self.long_polling.notify_message_arriving(header.topic, header.queue_id, header.consumer_group)
            else:
                resp = await self._process(channel, request, deadline)
        except HeaderError as e:  # cannot happen for a request that was parked, but never leave it hanging
            resp = response(request, ResponseCode.SYSTEM_ERROR, f"bad request: {e}")
        except Exception as e:
            log.exception("re-executing a parked pop failed")
            resp = response(request, ResponseCode.SYSTEM_ERROR, str(e) or type(e).__name__)
        if resp is not None and not request.is_oneway:
            resp.opaque = request.opaque
            channel.send_response(resp)

    async def _process(self, channel: Channel, request: RemotingCommand, deadline: float | None
                       ) -> RemotingCommand | None:
        header = request.decode_header(PopMessageRequestHeader)
        header.queue_id = all_queues_below_zero(header.queue_id)
        checked = self._check(channel, request, header, first_run=deadline is None)
        if isinstance(checked, RemotingCommand):
            return with_blank_header(checked, _BLANK)
        tc, message_filter = checked
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = poll_deadline(loop, header.born_time, header.poll_time)
        revive_qid = POP_ORDER_REVIVE_QUEUE if header.order else self.revive_log.next_revive_qid()
        ctx = PopContext(header, channel, now_ms(), revive_qid, message_filter)
        await self._pop(ctx, tc)
        if ctx.count:
            if ctx.rest_num > 0:  # more than this batch could carry: the next parked pop may take it
                self.long_polling.notify_message_arriving(header.topic, header.queue_id, header.consumer_group)
            return self._found(request, ctx)
        wake_at = None if ctx.unblock_at is None else loop.time() + max(0, ctx.unblock_at - now_ms()) / 1000
        polled = self.long_polling.polling(channel, request, header.topic, header.consumer_group, header.queue_id,
                                           deadline, wake_at)
        if polled is PollingResult.POLLING_SUC:
            if ctx.rest_num > 0 and ctx.skipped:
                # A read window of messages the filter left out, and more behind it: run again at once, as
                # RocketMQ's PopMessageProcessor does (rather than a whole poll per 800 entries skipped). Only
                # after a skip, which moved an offset: a pop that could take nothing (a locked queue, a
                # checkpoint not written) would run again and again until its poll time.
                self.long_polling.notify_message_arriving(header.topic, header.queue_id, header.consumer_group)
            return None
        code = ResponseCode.POLLING_FULL if polled is PollingResult.POLLING_FULL else ResponseCode.POLLING_TIMEOUT
        return response(request, code, GetMessageStatus.NO_MESSAGE_IN_QUEUE.value, ext_fields=self._header(ctx))

    def _check(self, channel: Channel, request: RemotingCommand, header: PopMessageRequestHeader, first_run: bool
               ) -> RemotingCommand | tuple[TopicConfig, MessageFilter]:
        c = self.controller
        bc = c.broker_config
        now = now_ms()
        if first_run and timeout_too_much(born_time_of(header.born_time, now), header.poll_time, now):
            return response(request, ResponseCode.POLLING_TIMEOUT,
                            f"the broker[{bc.broker_ip1}] pop message is timeout too much")
        if not PermName.is_readable(bc.broker_permission):
            return response(request, ResponseCode.NO_PERMISSION,
                            f"the broker[{bc.broker_ip1}] pop message is forbidden")
        if header.max_msg_nums > MAX_POP_NUMS:
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"the broker[{bc.broker_ip1}] pop message's num is greater than {MAX_POP_NUMS}")
        if not bc.timer_wheel_enable:  # (checkpoints and acks are timer messages: revive_log.py)
            return response(request, ResponseCode.SYSTEM_ERROR,
                            f"the broker[{bc.broker_ip1}] pop message is forbidden because timerWheelEnable is false")
        error = self.check_topic_and_group(channel, request, header.topic, header.queue_id, header.consumer_group)
        if isinstance(error, RemotingCommand):
            return error
        flt = self.message_filter(request, header.topic, header.exp, header.exp_type)
        if isinstance(flt, RemotingCommand):
            return flt
        # pocketmq's own refusals (docs/compatibility.md, "a bad pop request") come where 5.5.0 fails or parks on
        # these values, after its checks of the topic, the queue, the group and the filter: a pop of a topic that
        # does not exist is TOPIC_NOT_EXIST whatever its counts and times, on both.
        if header.max_msg_nums <= 0:
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"the broker[{bc.broker_ip1}] pop message's num {header.max_msg_nums} is not 1..32")
        if header.invisible_time < 0 or header.poll_time < 0:
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"invisibleTime {header.invisible_time} and pollTime {header.poll_time} must be >= 0")
        if header.invisible_time > bc.timer_max_delay_sec * 1000:
            # (its checkpoint is a timer message, which the timer would refuse: the message would never come back)
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"invisibleTime {header.invisible_time} is past timerMaxDelaySec "
                            f"({bc.timer_max_delay_sec} s)")
        return error, flt

    def notify_queue_free(self, topic: str, queue_id: int, group: str) -> None:
        """An orderly batch acked, or its invisible time changed: the group's parked pops and notifications of
        the queue check again (Apache's ConsumerOrderInfoLockManager notifies both)."""
        self.long_polling.notify_message_arriving(topic, queue_id, group)
        self.controller.notification_processor.long_polling.notify_message_arriving(topic, queue_id, group)

    def check_topic_and_group(self, channel: Channel, request: RemotingCommand, topic: str, queue_id: int,
                              group: str) -> RemotingCommand | TopicConfig:
        """The checks pop, peek and notification share: the topic, the queue id (below 0: all) and the group."""
        c = self.controller
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return topic_not_exist(request, topic)
        if not PermName.is_readable(tc.perm):
            return response(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden")
        if queue_id >= tc.read_queue_nums:
            return response(request, ResponseCode.INVALID_PARAMETER,
                            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                            f"[{tc.read_queue_nums}] consumer:[/{channel.remote_address}]")
        sgc = c.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return group_not_exist(request, group)
        if not sgc.consume_enable:
            return response(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        return tc

    def message_filter(self, request: RemotingCommand, topic: str, exp: str | None, exp_type: str | None
                       ) -> MessageFilter | RemotingCommand:
        # As RocketMQ 5's PopMessageProcessor: no expression at all is TAG "*" whatever the type says, and SQL92
        # is served whether or not enablePropertyFilter is set (only pulls and CHECK_CLIENT_CONFIG look at it).
        if not exp:
            exp, exp_type = SUB_ALL, EXPRESSION_TYPE_TAG
        try:
            return message_filter_for(build_subscription_data(topic, exp, exp_type))
        except SubscriptionParseError as e:
            # (5.5.0's remark names no cause: the cause goes to the log)
            log.info("pop of %s: subscription %r (%s) does not parse: %s", topic, exp, exp_type, e)
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")

    # --- reading ---

    async def _pop(self, ctx: PopContext, tc: TopicConfig) -> None:
        header = ctx.header
        bc = self.controller.broker_config
        draw = self._random.randrange(100)
        # (a group's priority.factor, 5.5.0's percent of priority-ordered pops, is always its default 100 here:
        # pocketmq keeps no group attributes)
        priority_mode = not ctx.order and topic_message_type(tc.attributes) is TopicMessageType.PRIORITY
        probability = bc.pop_from_retry_probability_for_priority if priority_mode else bc.pop_from_retry_probability
        need_retry = not ctx.order and draw < probability
        # After a switch to retry topic v2, every other pop reads the v1 topic instead, as RocketMQ does, so that
        # what was revived there before the switch is not left behind.
        v1 = bc.enable_retry_topic_v2 and bc.retrieve_message_from_pop_retry_topic_v1 and draw % 2 == 0
        retry_topic = build_pop_retry_topic(header.topic, header.consumer_group, bc.enable_retry_topic_v2 and not v1)
        start = 0 if priority_mode else draw
        if need_retry:
            await self._pop_from_topic(ctx, retry_topic, True, start)
        if header.queue_id < 0:
            await self._pop_from_topic(ctx, tc.topic_name, False, start)
        else:
            await self._pop_from_queue(ctx, tc.topic_name, header.queue_id, False)
        if not need_retry and not ctx.order and ctx.count < header.max_msg_nums:
            await self._pop_from_topic(ctx, retry_topic, True, start)

    async def _pop_from_topic(self, ctx: PopContext, topic: str, is_retry: bool, start: int) -> None:
        """Every queue of ``topic`` once, as 5.5.0 walks them: with priorityOrderAsc from the highest down, shifted
        by ``start`` (a random one; 0 for a priority pop, which so reads the highest priority first)."""
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None or tc.read_queue_nums <= 0:
            return
        n = tc.read_queue_nums
        descending = self.controller.broker_config.priority_order_asc
        for i in range(n):
            await self._pop_from_queue(ctx, topic, ((n - 1 - i if descending else i) + start) % n, is_retry)

    async def _pop_from_queue(self, ctx: PopContext, topic: str, queue_id: int, is_retry: bool) -> None:
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

    def _found(self, request: RemotingCommand, ctx: PopContext) -> RemotingCommand:
        return response(request, ResponseCode.SUCCESS, GetMessageStatus.FOUND.value, ext_fields=self._header(ctx),
                        body=b"".join(ctx.buffers))

    @staticmethod
    def _header(ctx: PopContext) -> PopMessageResponseHeader:
        return PopMessageResponseHeader(
            ctx.pop_time, ctx.header.invisible_time, ctx.revive_qid, ctx.rest_num,
            ";".join(ctx.start_offset_info), ";".join(ctx.msg_offset_info),
            ";".join(ctx.order_count_info) if ctx.order else None,
        )
