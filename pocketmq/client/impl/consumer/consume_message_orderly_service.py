"""ConsumeMessageOrderlyService: each queue consumed by one consumer at a time, one batch after another.

The three locks of seed 003, coarsest first:

1. the broker's queue lock (LOCK_BATCH_MQ): a clustering consumer pulls and consumes a queue only while the
   broker says the queue is its own; it renews every lock every ``lock_interval`` and stops trusting a lock
   not renewed for ``lock_max_live_time`` (shorter than the broker's expiry, so it stops before the broker
   can hand the queue to someone else);
2. the per-queue local lock (``message_queue_lock``): one consume request per queue at a time in this client;
3. the ProcessQueue's ``consume_lock``: held while a batch is in the listener, so a rebalance that takes the
   queue away waits for the batch to finish before it persists the offset and gives the broker lock back.
   A plain listener's thread that shutdown leaves behind keeps it until the thread returns.

SUSPEND_CURRENT_QUEUE_A_MOMENT puts the batch back at the head of the queue and retries it after
``suspend_current_queue_time``; a message that reached max reconsume times goes to the DLQ (via the retry
topic) instead of blocking the queue forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue

from ...consumer.consumer_enums import MessageModel
from ...consumer.message_listener import ConsumeOrderlyContext, ConsumeOrderlyStatus, is_async_listener
from ...message_const import PROPERTY_RECONSUME_TIME
from ...trace.trace_context import ConsumeReturnType
from .consume_message_service import ConsumeExecutor, cancelled_here
from .process_queue import ProcessQueue, now_ms

if TYPE_CHECKING:
    from .push_consumer_impl import DefaultMQPushConsumerImpl

log = logging.getLogger(__name__)
_RAISED = object()  # the listener raised (told apart from returning None for the trace's ConsumeReturnType)

MIN_SUSPEND, MAX_SUSPEND = 0.01, 30.0  # a context's suspend time is clamped to this range


def _release_when_done(call: asyncio.Future[Any], lock: asyncio.Lock) -> None:
    call.add_done_callback(lambda _: lock.release())


class ConsumeMessageOrderlyService:
    def __init__(self, consumer: DefaultMQPushConsumerImpl, listener: Any) -> None:
        self.consumer = consumer
        self.listener = listener
        self._is_async = is_async_listener(listener)
        self.executor = ConsumeExecutor(consumer.config.consume_thread_max, f"ConsumeMessageThread_{consumer.group}")
        self.message_queue_lock: dict[MessageQueue, asyncio.Lock] = {}
        self._holders: dict[MessageQueue, asyncio.Task[Any] | None] = {}  # the task holding a queue's consume_lock
        self.stopped = False
        self.consumed_ok = 0
        self.consumed_suspended = 0

    @property
    def _clustering(self) -> bool:
        return self.consumer.config.message_model is MessageModel.CLUSTERING

    def start(self) -> None:
        self.executor.start()
        if self._clustering:
            interval = self.consumer.config.lock_interval
            self.consumer.periodic(min(1.0, interval), interval, self.lock_mq_periodically)

    async def lock_mq_periodically(self) -> None:
        if not self.stopped:
            await self.consumer.rebalance_impl.lock_all()

    async def shutdown(self, await_termination: float, spare: Collection[asyncio.Task[Any]] = ()) -> None:
        """Stop taking batches, let the ones in flight finish, persist, then give the broker locks back.

        RocketMQ unlocks first and persists after; here the next owner, who can lock only after the unlock,
        always finds the offset this consumer reached, so it neither skips nor repeats a message.

        A batch still in the listener after ``max(await_termination, remove_queue_lock_wait)`` is given up
        on, as RocketMQ's shutdown returns after awaitTerminateMillis whatever its threads do: its answer is
        dropped, so the queue's offset stays at the batch's first message and the next owner consumes the batch
        again, once the broker lock (not given back) has expired. So is at once the batch of a worker in ``spare``
        (its listener called the consumer's shutdown and waits for this).
        """
        self.stopped = True
        consumer = self.consumer
        table = consumer.rebalance_impl.process_queue_table
        for pq in table.values():
            pq.dropped = True
        wait = max(await_termination, consumer.config.remove_queue_lock_wait)
        busy = []
        for mq, pq in list(table.items()):
            if self._holders.get(mq) in spare or not await pq.try_consume_lock(wait):
                busy.append(mq)
                continue
            pq.consume_lock.release()
        await self.executor.shutdown(0, spare)
        if not self._clustering:
            return
        # A queue whose batch is still in the listener keeps its broker lock until it expires there:
        # unlocking it now would let the next owner start while the batch runs.
        for mq in busy:
            log.warning("%s: %s still consuming at shutdown; its broker lock is left to expire", consumer.group, mq)
            table.pop(mq, None)
        for mq in list(table):  # the rebalance is stopped by now; a snapshot all the same, as this awaits
            await consumer.persist_offset(mq)
        await consumer.rebalance_impl.unlock_all(oneway=False)

    # --- submission ----------------------------------------------------------------------------------------

    def submit_consume_request(
        self, msgs: list[MessageExt] | None, pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None:
        if dispatch_to_consume and not self.stopped:
            self.executor.submit(self._consume, pq, mq)

    def submit_consume_request_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        self.consumer.schedule(delay, lambda: self.submit_consume_request(None, pq, mq, True))

    def try_lock_later_and_reconsume(self, mq: MessageQueue, pq: ProcessQueue, delay: float) -> None:
        async def lock_and_reconsume() -> None:
            cfg = self.consumer.config
            locked = await self.consumer.rebalance_impl.lock(mq)
            delay = cfg.retry_consume_delay if locked else cfg.not_locked_consume_delay
            self.submit_consume_request_later(pq, mq, delay)

        self.consumer.schedule(delay, lambda: self.consumer.spawn(lock_and_reconsume()))

    # --- ConsumeRequest.run --------------------------------------------------------------------------------

    def _lock_ok(self, pq: ProcessQueue) -> bool:
        return not self._clustering or (pq.locked and not pq.is_lock_expired(self.consumer.config.lock_max_live_time))

    async def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        cfg = self.consumer.config
        lock = self.message_queue_lock.setdefault(mq, asyncio.Lock())
        async with lock:
            if not self._lock_ok(pq):
                if not pq.dropped:
                    self.try_lock_later_and_reconsume(mq, pq, cfg.retry_lock_delay)
                return
            loop = asyncio.get_running_loop()
            begin = loop.time()
            while not pq.dropped and not self.stopped:
                if not self._lock_ok(pq):
                    self.try_lock_later_and_reconsume(mq, pq, cfg.retry_consume_delay)
                    return
                if loop.time() - begin > cfg.max_time_consume_continuously:
                    self.submit_consume_request_later(pq, mq, cfg.retry_consume_delay)  # let other queues in
                    return
                msgs = pq.take_messages(cfg.consume_message_batch_max_size)
                if not msgs:
                    return
                self.consumer.reset_retry_topic(msgs)
                context = ConsumeOrderlyContext(mq)
                consume_lock = pq.consume_lock
                await consume_lock.acquire()
                unfinished: list[asyncio.Future[Any]] = []
                self._holders[mq] = asyncio.current_task()
                try:
                    if pq.dropped:
                        return
                    trace = self.consumer.trace_hook
                    before = trace.consume_message_before(msgs) if trace is not None else None
                    begin_ms = now_ms()
                    status, answered = await self._call_listener(msgs, context, unfinished)
                    if before is not None and trace is not None:
                        ok = status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
                        trace.consume_message_after(before, len(msgs), ok,
                                                    self._return_type(answered, ok, now_ms() - begin_ms))
                    go_on = await self.process_consume_result(msgs, status, context, pq, mq)
                finally:
                    del self._holders[mq]
                    if unfinished:
                        # The batch is still in the listener on its thread: until that returns the queue is
                        # still being consumed, so nothing that waits on the lock may persist, unlock or
                        # consume it.
                        _release_when_done(unfinished[0], consume_lock)
                    else:
                        consume_lock.release()
                if not go_on:
                    return

    def _return_type(self, answered: Any, ok: bool, elapsed_ms: int) -> ConsumeReturnType:
        """How a listener call ended, for its SubAfter record (ConsumeMessageOrderlyService's returnType)."""
        if answered is _RAISED:
            return ConsumeReturnType.EXCEPTION
        if answered is None:
            return ConsumeReturnType.RETURNNULL
        if elapsed_ms >= self.consumer.config.consume_timeout * 1000:
            return ConsumeReturnType.TIME_OUT
        return ConsumeReturnType.SUCCESS if ok else ConsumeReturnType.FAILED

    async def _call_listener(
        self, msgs: list[MessageExt], context: ConsumeOrderlyContext, unfinished: list[asyncio.Future[Any]]
    ) -> tuple[ConsumeOrderlyStatus, Any]:
        """The listener's answer for the batch, and what it gave (_RAISED when it raised). Should this worker be
        cancelled (shutdown) while a plain listener's thread still runs the batch, the call's future is put in
        ``unfinished`` and the cancellation goes on at once: waiting for the thread held shutdown up for as long as
        the listener ran."""
        status: Any = None
        try:
            if self._is_async:
                status = await self.listener(msgs, context)
            else:
                # Shielded: cancelling this worker cannot stop the thread, and the future is what tells when the
                # thread is done with the batch.
                call = self.executor.call_sync(self.listener, msgs, context)
                try:
                    status = await asyncio.shield(call)
                except asyncio.CancelledError:
                    if cancelled_here() and not call.done():
                        unfinished.append(call)
                    raise
        except Exception:
            log.warning("consumeMessage exception, group %s, %s; suspending the queue a moment",
                        self.consumer.group, context.message_queue, exc_info=True)
            status = _RAISED
        except asyncio.CancelledError:
            if cancelled_here():
                raise
            # Something the listener awaited was cancelled, not this worker: a failed call (RocketMQ catches
            # Throwable). Let through, it would leave the batch taken and the queue marked consuming forever.
            log.warning("consumeMessage cancelled, group %s, %s; suspending the queue a moment",
                        self.consumer.group, context.message_queue, exc_info=True)
            status = _RAISED
        answered = status
        if not isinstance(status, ConsumeOrderlyStatus):
            if status is not None and status is not _RAISED:
                log.warning("orderly listener of %s returned %r, not a ConsumeOrderlyStatus",
                            self.consumer.group, status)
            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return status, answered

    async def process_consume_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus,
        context: ConsumeOrderlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> bool:
        """True when the queue may go on with its next batch."""
        go_on = True
        commit_offset = -1
        if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
            self.consumed_suspended += 1
            if await self.check_reconsume_times(msgs, mq):
                pq.make_message_to_consume_again(msgs)
                self._suspend(pq, mq, context)
                go_on = False
            elif context.auto_commit:
                commit_offset = pq.commit()  # every message of the batch went to the DLQ
        elif status is ConsumeOrderlyStatus.ROLLBACK and not context.auto_commit:
            self.consumed_suspended += 1
            pq.rollback()
            self._suspend(pq, mq, context)
            go_on = False
        else:
            self.consumed_ok += 1
            if context.auto_commit or status is ConsumeOrderlyStatus.COMMIT:
                commit_offset = pq.commit()
        if commit_offset >= 0:
            # Recorded even when the queue was dropped during the batch: the batch did finish, and the
            # rebalance that dropped the queue persists the offset only after this (it waits on consume_lock).
            self.consumer.offset_store.update_offset(mq, commit_offset, increase_only=False)
        return go_on

    def _suspend(self, pq: ProcessQueue, mq: MessageQueue, context: ConsumeOrderlyContext) -> None:
        suspend = context.suspend_current_queue_time
        if suspend is None:
            suspend = self.consumer.config.suspend_current_queue_time
        self.submit_consume_request_later(pq, mq, min(max(suspend, MIN_SUSPEND), MAX_SUSPEND))

    async def check_reconsume_times(self, msgs: list[MessageExt], mq: MessageQueue) -> bool:
        """True when the batch is to be retried in place; messages out of retries go to the DLQ instead."""
        suspend = False
        max_times = self.consumer.max_reconsume_times()
        for msg in msgs:
            if msg.reconsume_times >= max_times:
                msg.properties[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times)
                if not await self.consumer.send_to_retry_topic(msg, msg.reconsume_times, mq):
                    suspend = True
                    msg.reconsume_times += 1
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend
