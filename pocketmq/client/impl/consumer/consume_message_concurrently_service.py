"""ConsumeMessageConcurrentlyService: pulled messages consumed in parallel, in batches, on a bounded pool.

Each pulled run is cut into batches of ``consume_message_batch_max_size`` (1 by default); each batch is one
call of the listener. CONSUME_SUCCESS removes the batch from its ProcessQueue; RECONSUME_LATER (or an
exception, or no status) sends each failed message back to the broker (CONSUMER_SEND_MSG_BACK → %RETRY%group
after a delay, or the DLQ after max reconsume times); if even that fails the message is consumed again here
after ``local_retry_delay``. The offset the group commits is always the smallest offset still in the
ProcessQueue, so a slow or failing message holds the offset back rather than being skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from time import time_ns as _time_ns
from typing import TYPE_CHECKING, Any

from pocketmq.common.message import MessageExt, properties_to_string
from pocketmq.remoting.client_body import MessageQueue

from ...consumer.consumer_enums import MessageModel
from ...consumer.message_listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    call_listener,
    is_async_listener,
)
from ...trace.trace_context import ConsumeReturnType
from .consume_message_service import ConsumeExecutor, cancelled_here
from .process_queue import CONSUME_START_TIME, ProcessQueue, now_ms
from .push_consumer_retry import retry_topic

if TYPE_CHECKING:
    from .push_consumer_impl import DefaultMQPushConsumerImpl

log = logging.getLogger(__name__)

SEND_BACK_DELAY_LEVEL_WHEN_EXPIRED = 3  # a message stuck in the listener goes back with delay level 3
# (Enum members read once: each read off the class runs Python code in 3.11, and these are read per batch)
_SUCCESS, _LATER = ConsumeConcurrentlyStatus.CONSUME_SUCCESS, ConsumeConcurrentlyStatus.RECONSUME_LATER
_RAISED = object()  # the listener raised (told apart from returning None for the trace's ConsumeReturnType)


class ConsumeMessageConcurrentlyService:
    def __init__(self, consumer: DefaultMQPushConsumerImpl, listener: Any) -> None:
        self.consumer = consumer
        self.listener = listener
        self._is_async = is_async_listener(listener)
        cfg = consumer.config
        self.executor = ConsumeExecutor(cfg.consume_thread_max, f"ConsumeMessageThread_{consumer.group}")
        self.consumed_ok = 0  # listener calls that succeeded / failed (observability)
        self.consumed_failed = 0
        self._start_ms, self._start_pair = 0, ""
        self._offset_store = consumer.offset_store  # (made before this service, and kept as long)
        self._retry_topic = retry_topic(consumer.group)

    def start(self) -> None:
        self.executor.start()
        timeout = self.consumer.config.consume_timeout
        self.consumer.periodic(timeout, timeout, self.clean_expire_msg)

    async def shutdown(self, await_termination: float, spare: Collection[asyncio.Task[Any]] = ()) -> None:
        await self.executor.shutdown(await_termination, spare)

    def submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None:
        size = self.consumer.config.consume_message_batch_max_size
        consume = self._consume
        if size == 1:  # RocketMQ's default: a call a message (a one-element list, without a slice)
            self.executor.submit_all([(consume, ([msg], pq, mq)) for msg in msgs])
        else:
            self.executor.submit_all([(consume, (msgs[i : i + size], pq, mq)) for i in range(0, len(msgs), size)])

    def _submit_consume_request_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        self.consumer.schedule(
            self.consumer.config.local_retry_delay, lambda: self.submit_consume_request(msgs, pq, mq, True)
        )

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """ConsumeRequest.run: one listener call and what follows from its answer."""
        if pq.dropped:
            return
        ms = _time_ns() // 1_000_000  # (now_ms, without a call a message)
        if ms != self._start_ms:  # CONSUME_START_TIME's pair is encoded once per millisecond, not per batch
            self._start_ms, self._start_pair = ms, properties_to_string({CONSUME_START_TIME: str(ms)})
        consumer = self.consumer
        start, rt = self._start_pair, self._retry_topic
        for msg in msgs:
            if msg.topic == rt:  # (reset_retry_topic's own test first: it is what almost every message fails)
                consumer.reset_retry_topic([msg])
            msg.put_encoded_properties(start)
        context = ConsumeConcurrentlyContext(mq)
        status: Any = None
        trace = consumer.trace_hook
        before = trace.consume_message_before(msgs) if trace is not None else None
        try:
            if self._is_async:
                status = await self.listener(msgs, context)
            else:
                status = await call_listener(self.listener, False, self.executor.run_sync, msgs, context)
        except Exception:
            log.warning("consumeMessage exception, group %s, %s; reconsume later", consumer.group, mq,
                        exc_info=True)
            status = _RAISED
        except asyncio.CancelledError:
            if cancelled_here():
                raise
            # Something the listener awaited was cancelled, not this worker: a failure to retry, as RocketMQ's
            # catch (Throwable) makes of it, or the batch would stay in the ProcessQueue and hold the offset.
            log.warning("consumeMessage cancelled, group %s, %s; reconsume later", consumer.group, mq,
                        exc_info=True)
            status = _RAISED
        if before is not None:
            self._trace_after(before, msgs, status, ms)
        if status is _RAISED:
            status = None
        if status is _SUCCESS and context.ack_index is None and not pq.dropped:
            # The common case, without a coroutine per result: the whole batch is done.
            self.consumed_ok += 1
            offset = pq.remove_message(msgs)
            if offset >= 0:
                self._offset_store.update_offset(mq, offset, True)
            return
        if not isinstance(status, ConsumeConcurrentlyStatus):
            if status is not None:
                log.warning("listener of %s returned %r, not a ConsumeConcurrentlyStatus", self.consumer.group, status)
            status = _LATER
        if pq.dropped:
            # The queue went to another consumer meanwhile: it will deliver these again, this one must not
            # commit or send anything back.
            log.info("%s dropped while consuming; result of %d messages ignored", mq, len(msgs))
            return
        await self.process_consume_result(status, context, msgs, pq, mq)

    def _trace_after(self, before: Any, msgs: list[MessageExt], status: Any, begin_ms: int) -> None:
        """The SubAfter record of a traced listener call, with how it ended (ConsumeReturnType)."""
        if status is _RAISED:
            kind = ConsumeReturnType.EXCEPTION
        elif status is None:
            kind = ConsumeReturnType.RETURNNULL
        elif now_ms() - begin_ms >= self.consumer.config.consume_timeout * 1000:
            kind = ConsumeReturnType.TIME_OUT
        elif status is _SUCCESS:
            kind = ConsumeReturnType.SUCCESS
        else:
            kind = ConsumeReturnType.FAILED
        trace = self.consumer.trace_hook
        if trace is not None:
            trace.consume_message_after(before, len(msgs), status is _SUCCESS, kind)

    async def process_consume_result(
        self,
        status: ConsumeConcurrentlyStatus,
        context: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        if not msgs:
            return
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            # (Below -1 means none succeeded: a negative index would slice from the end and drop the rest.)
            ack_index = len(msgs) - 1 if context.ack_index is None else max(-1, min(context.ack_index, len(msgs) - 1))
            self.consumed_ok += 1
        else:
            ack_index = -1
            self.consumed_failed += 1
        failed = msgs[ack_index + 1 :]
        done = msgs
        consumer = self.consumer
        if failed:
            if consumer.config.message_model is MessageModel.BROADCASTING:
                for msg in failed:
                    log.warning("BROADCASTING, the message %s consume failed, drop it", msg.msg_id)
            else:
                back_failed = []
                for msg in failed:
                    if not await consumer.send_message_back(msg, context.delay_level_when_next_consume, mq):
                        msg.reconsume_times += 1
                        back_failed.append(msg)
                if back_failed:
                    kept = {id(m) for m in back_failed}
                    done = [m for m in msgs if id(m) not in kept]
                    self._submit_consume_request_later(back_failed, pq, mq)
        offset = pq.remove_message(done)
        if offset >= 0 and not pq.dropped:
            consumer.offset_store.update_offset(mq, offset, increase_only=True)

    async def clean_expire_msg(self) -> None:
        """Send back messages whose listener call has run longer than ``consume_timeout``; their queue's
        offset can move on while the listener is still busy."""
        consumer = self.consumer
        for mq, pq in list(consumer.rebalance_impl.process_queue_table.items()):
            if pq.dropped:
                continue
            for msg in pq.expired_messages(consumer.config.consume_timeout):
                log.warning("%s: message %s consumed for too long; sending it back", consumer.group, msg.msg_id)
                if not await consumer.send_message_back(msg, SEND_BACK_DELAY_LEVEL_WHEN_EXPIRED, mq):
                    break
                if pq.dropped:
                    break  # the queue went to another consumer during the send: its offset is not ours to move
                if pq.first_offset() == msg.queue_offset:
                    # RocketMQ leaves the offset for the next result to move; moving it now lets an idle
                    # queue's offset pass the message that went back.
                    offset = pq.remove_message([msg])
                    if offset >= 0:
                        consumer.offset_store.update_offset(mq, offset, increase_only=True)
