"""The push consumer's pulls: DefaultMQPushConsumerImpl.pullMessage (flow control, then one long-polling
PULL_MESSAGE) and its PullCallback (onSuccess: the messages to the ProcessQueue and the consume service, the next
PullRequest queued; onException: the same request again, later)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.errors import RemotingError

from ...consumer.consumer_enums import MessageModel
from ...consumer.store.offset_store import OffsetStore, ReadOffsetType
from ...exceptions import MQBrokerException, MQClientException
from ...message import PullResult, PullStatus
from .consume_message_service import ConsumeMessageService
from .pull_api import PullAPIWrapper, build_sys_flag
from .pull_request import PullRequest
from .push_consumer_state import PushConsumerState

if TYPE_CHECKING:
    import asyncio

# (the consumer's logger, as before the pulls had a module of their own: log settings name it)
log = logging.getLogger("pocketmq.client.impl.consumer.push_consumer_impl")

MIB = 1024 * 1024


class PushConsumerPull(PushConsumerState):
    """The pulls of DefaultMQPushConsumerImpl (a mixin: the state is the consumer's)."""

    running: bool
    pause: bool
    consume_orderly: bool
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    queue_flow_control_times: int
    queue_max_span_flow_control_times: int
    consume_message_service: ConsumeMessageService | None
    _pull_api: PullAPIWrapper | None

    if TYPE_CHECKING:
        @property
        def offset_store(self) -> OffsetStore: ...

        def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None: ...

        def schedule(self, delay: float, fn: Callable[[], object]) -> None: ...

    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        if self.running:
            self.instance.pull_message_service.execute_pull_request_immediately(request)

    def execute_pull_request_later(self, request: PullRequest, delay: float) -> None:
        if self.running:
            self.instance.pull_message_service.execute_pull_request_later(request, delay)

    def pull_message(self, request: PullRequest) -> None:
        """Start one pull for ``request`` (PullMessageService calls this; it returns at once)."""
        pq = request.process_queue
        if pq.dropped or not self.running:
            return
        # Stamped here, before flow control sends the request back (as the Java client does): a queue held back
        # for longer than pull_max_idle_time while its listener is slow is not "not pulled" (the rebalance
        # dropped it, threw the slow batch's result away and took the queue again at the same offset, for good).
        pq.last_pull_timestamp = time.monotonic()
        cfg = self.config
        if self.pause:
            self.execute_pull_request_later(request, cfg.pull_time_delay_when_suspend)
            return
        if pq.msg_count > self.pull_threshold_for_queue or pq.msg_size > self.pull_threshold_size_for_queue * MIB:
            self.queue_flow_control_times += 1
            self.execute_pull_request_later(request, cfg.pull_time_delay_when_flow_control)
            return
        if not self.consume_orderly and pq.get_max_span() > cfg.consume_concurrently_max_span:
            self.queue_max_span_flow_control_times += 1
            self.execute_pull_request_later(request, cfg.pull_time_delay_when_flow_control)
            return
        if self.consume_orderly and cfg.message_model is MessageModel.CLUSTERING and not pq.locked:
            self.execute_pull_request_later(request, cfg.pull_time_delay_when_exception)
            return
        subscription = self.rebalance_impl.subscription_inner.get(request.message_queue.topic)
        if subscription is None:
            self.execute_pull_request_later(request, cfg.pull_time_delay_when_exception)
            return
        self.spawn(self._pull(request, subscription))

    async def _pull(self, request: PullRequest, subscription: SubscriptionData) -> None:
        cfg = self.config
        mq, pq = request.message_queue, request.process_queue
        try:
            if self.consume_orderly and cfg.message_model is MessageModel.CLUSTERING and not request.previously_locked:
                # First pull since the lock was taken: start from what the previous owner committed.
                offset = await self.rebalance_impl.compute_pull_from_where(mq)
                if offset < 0:
                    self.execute_pull_request_later(request, cfg.pull_time_delay_when_exception)
                    return
                request.previously_locked = True
                request.next_offset = offset
            commit_offset = 0
            if cfg.message_model is MessageModel.CLUSTERING and not self.consume_orderly:
                # The offset rides along on the pull (FLAG_COMMIT_OFFSET). Not for orderly consumers: a pull
                # the broker finishes after a handoff's persist would move the offset back, and the queue's
                # next owner would consume messages again, out of order.
                commit_offset = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
            post = cfg.post_subscription_when_pull and not subscription.class_filter_mode
            sys_flag = build_sys_flag(
                commit_offset=commit_offset > 0, suspend=True, subscription=post,
                class_filter=subscription.class_filter_mode,
            )
            assert self._pull_api is not None
            raw = await self._pull_api.pull_kernel_impl(
                mq, subscription, request.next_offset, cfg.pull_batch_size, sys_flag, max(commit_offset, 0),
                cfg.broker_suspend_max_time, cfg.consumer_timeout_when_suspend, subscription.sub_version,
            )
            result = self._pull_api.process_pull_result(mq, raw, subscription)
        except (RemotingError, MQClientException, MQBrokerException) as e:
            self._on_pull_exception(request, e)
            return
        if not pq.dropped:
            self._on_pull_success(request, subscription, result)

    def _on_pull_exception(self, request: PullRequest, e: Exception) -> None:
        """RocketMQ's PullCallback.onException: pull again later, later still when the broker is busy."""
        cfg = self.config
        if isinstance(e, MQBrokerException) and e.code == ResponseCode.FLOW_CONTROL:
            delay = cfg.pull_time_delay_when_broker_flow_control
        else:
            delay = cfg.pull_time_delay_when_exception
            # (a subscription the broker has not heard of yet is the heartbeat's lag, not worth a warning)
            if not (isinstance(e, MQBrokerException) and e.code == ResponseCode.SUBSCRIPTION_NOT_LATEST):
                log.warning("%s: pull of %s failed: %s", self.group, request.message_queue, e)
        self.execute_pull_request_later(request, delay)

    def _on_pull_success(self, request: PullRequest, subscription: SubscriptionData, result: PullResult) -> None:
        """RocketMQ's PullCallback.onSuccess: hand what was found to the consume service, and pull again."""
        cfg = self.config
        mq, pq = request.message_queue, request.process_queue
        status = result.pull_status
        if status is PullStatus.FOUND:
            request.next_offset = result.next_begin_offset
            # Tags were re-checked by process_pull_result; a SQL92 expression is the broker's alone (as in
            # RocketMQ's client): here the properties also carry MIN_OFFSET/MAX_OFFSET, which the broker's did not.
            msgs = result.msg_found_list
            if not msgs:
                self.execute_pull_request_immediately(request)
                return
            dispatch = pq.put_message(msgs)
            assert self.consume_message_service is not None
            self.consume_message_service.submit_consume_request(msgs, pq, mq, dispatch)
            if cfg.pull_interval > 0:
                self.execute_pull_request_later(request, cfg.pull_interval)
            else:
                self.execute_pull_request_immediately(request)
        elif status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            request.next_offset = result.next_begin_offset
            self._correct_tags_offset(request)
            self.execute_pull_request_immediately(request)
        else:  # OFFSET_ILLEGAL
            log.warning("%s: offset of %s illegal, moving to %d", self.group, mq, result.next_begin_offset)
            request.next_offset = result.next_begin_offset
            pq.dropped = True
            self.schedule(cfg.offset_illegal_delay, lambda: self.spawn(self._fix_illegal_offset(request)))

    def _correct_tags_offset(self, request: PullRequest) -> None:
        """Nothing cached: everything up to the next offset was filtered out or consumed, so commit it."""
        if request.process_queue.msg_count == 0:
            self.offset_store.update_offset(request.message_queue, request.next_offset, increase_only=True)

    async def _fix_illegal_offset(self, request: PullRequest) -> None:
        mq = request.message_queue
        self.offset_store.update_offset(mq, request.next_offset, increase_only=False)
        await self.offset_store.persist(mq)
        await self.rebalance_impl.remove_process_queue(mq)
        self.instance.rebalance_service.wakeup()  # take it again at the corrected offset
