"""PopMessageProcessor: POP_MESSAGE (200050), RocketMQ 5's consumption without client-side rebalance.

A pop reads from the group's offset in each queue it visits (queue id -1: every queue of the topic, downwards from a
random one, a PRIORITY topic's from its highest queue, its highest priority; with ``popFromRetryProbability`` percent
the group's pop retry topic first, else after the topic when the batch is not full), commits the offset past what it
read at once and writes a checkpoint of it to the revive log. What is not acked before the checkpoint's invisible
time runs out the revive service gives back through the retry topic (PopReviveService). An orderly pop
(``order=true``) writes no checkpoint: the queue stays blocked for the group until the batch is acked
(ConsumerOrderInfoManager). A pop that finds nothing is parked for its poll time
(PopLongPollingService).

This module takes a pop from its request to its answer or its parking; the request's checks are in
pop_request_checks.py, the reads of each queue with their checkpoints in pop_queue_reader.py, the answer in
pop_answers.py.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.pop_ack_constants import POP_ORDER_REVIVE_QUEUE, build_pop_retry_topic
from pocketmq.common.topic_attributes import TopicMessageType, topic_message_type
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.pop_header import PopMessageRequestHeader, PopMessageResponseHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import GetMessageStatus

from ..longpolling.pop_long_polling_service import (
    PollingResult,
    PopLongPollingService,
    all_queues_below_zero,
    poll_deadline,
)
from ..pop import PopBufferMergeService, QueueLockManager, ReviveLog
from ..pop.pop_offsets import PopOffsets
from .base import BrokerProcessor, log, response
from .pop_answers import pop_found, pop_response_header, with_blank_header
from .pop_queue_reader import PopContext, PopQueueReader
from .pop_request_checks import check_pop_request

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

_BLANK = PopMessageResponseHeader(0, 0, 0, 0)


class PopMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.POP_MESSAGE] = self.pop_message
        bc = controller.broker_config
        self.queue_lock_manager = QueueLockManager()
        self.revive_log = ReviveLog(controller)
        self.buffer_merge = PopBufferMergeService(controller, self.revive_log)
        self.offsets = PopOffsets(controller, self.buffer_merge)
        self.reader = PopQueueReader(controller, self.queue_lock_manager, self.offsets, self.buffer_merge,
                                     self.revive_log)
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
        checked = check_pop_request(self.controller, channel, request, header, first_run=deadline is None)
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
            return pop_found(request, ctx)
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
        return response(request, code, GetMessageStatus.NO_MESSAGE_IN_QUEUE.value,
                        ext_fields=pop_response_header(ctx))

    def notify_queue_free(self, topic: str, queue_id: int, group: str) -> None:
        """An orderly batch acked, or its invisible time changed: the group's parked pops and notifications of
        the queue check again (Apache's ConsumerOrderInfoLockManager notifies both)."""
        self.long_polling.notify_message_arriving(topic, queue_id, group)
        self.controller.notification_processor.long_polling.notify_message_arriving(topic, queue_id, group)

    async def _pop(self, ctx: PopContext, tc: TopicConfig) -> None:
        """Which topics and queues the pop reads, in which order; one draw of the processor's random decides."""
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
        reader = self.reader
        if need_retry:
            await reader.pop_from_topic(ctx, retry_topic, True, start)
        if header.queue_id < 0:
            await reader.pop_from_topic(ctx, tc.topic_name, False, start)
        else:
            await reader.pop_from_queue(ctx, tc.topic_name, header.queue_id, False)
        if not need_retry and not ctx.order and ctx.count < header.max_msg_nums:
            await reader.pop_from_topic(ctx, retry_topic, True, start)
