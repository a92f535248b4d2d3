"""The lite pull consumer's pull tasks (RocketMQ's DefaultLitePullConsumerImpl.PullTaskImpl): one asyncio task per
assigned queue, flow control first (messages waiting to be polled over every queue; the queue's cached count, size
and span), then one long-polling PULL_MESSAGE whose messages go to the queue's ProcessQueue and, as one consume
request, to the poll cache."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from pocketmq.common.filter_api import EXPRESSION_TYPE_TAG, SUB_ALL
from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue, SubscriptionData
from pocketmq.remoting.errors import RemotingError

from ...consumer.lite_pull_consumer_config import LitePullConsumerConfig
from ...exceptions import MQBrokerException, MQClientException
from ...filter_api import build_subscription_data
from ...message import PullStatus
from .assigned_message_queue import AssignedMessageQueue, MessageQueueState
from .process_queue import ProcessQueue
from .pull_api import PullAPIWrapper, build_sys_flag
from .rebalance_lite_pull_impl import RebalanceLitePullImpl

log = logging.getLogger("pocketmq.client.consumer.lite_pull_consumer")  # (the consumer's log, as before the split)

MIB = 1024 * 1024


@dataclass(slots=True)
class ConsumeRequest:
    """One pull's messages, waiting in the poll cache."""

    messages: list[MessageExt]
    message_queue: MessageQueue
    process_queue: ProcessQueue


class LitePullTasks:
    """Mixed into LitePullConsumer, whose state these tasks read and update (declared here for the type checker)."""

    group: str
    running: bool
    config: LitePullConsumerConfig
    subscription_type: str | None
    assigned_message_queue: AssignedMessageQueue
    consume_request_flow_control_times: int
    queue_flow_control_times: int
    queue_max_span_flow_control_times: int
    _task_table: dict[MessageQueue, asyncio.Task[None]]
    _consume_request_cache: collections.deque[ConsumeRequest]
    _pull_api: PullAPIWrapper | None

    @property
    def rebalance_impl(self) -> RebalanceLitePullImpl:
        raise NotImplementedError

    def _submit_consume_request(self, request: ConsumeRequest) -> None:
        raise NotImplementedError

    def _start_pull_tasks(self, mqs: Iterable[MessageQueue]) -> None:
        if not self.running:
            return
        loop = asyncio.get_running_loop()
        for mq in mqs:
            if mq not in self._task_table:
                self._task_table[mq] = loop.create_task(self._pull_task(mq), name=f"{self.group}-pull-{mq}")

    def _remove_pull_tasks(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in list(mqs):
            task = self._task_table.pop(mq, None)
            if task is not None:
                task.cancel()

    def _restart_pull_task(self, mq: MessageQueue) -> None:
        """Cancel the queue's task (a pull in flight is abandoned, its answer dropped) and start a new one."""
        self._remove_pull_tasks([mq])
        self._start_pull_tasks([mq])

    async def _pull_task(self, mq: MessageQueue) -> None:
        cfg = self.config
        assigned = self.assigned_message_queue
        while self.running:
            state = assigned.get(mq)
            if state is None or state.process_queue.dropped:
                return
            pq = state.process_queue
            delay = 0.0
            if state.paused:
                delay = cfg.pull_time_delay_when_pause
            elif len(self._consume_request_cache) * cfg.pull_batch_size > cfg.pull_threshold_for_all:
                self.consume_request_flow_control_times += 1
                delay = cfg.pull_time_delay_when_flow_control
            elif pq.msg_count > cfg.pull_threshold_for_queue or pq.msg_size > cfg.pull_threshold_size_for_queue * MIB:
                self.queue_flow_control_times += 1
                delay = cfg.pull_time_delay_when_flow_control
            elif pq.get_max_span() > cfg.consume_max_span:
                self.queue_max_span_flow_control_times += 1
                delay = cfg.pull_time_delay_when_flow_control
            else:
                try:
                    delay = await self._pull_once(mq, state)
                except Exception:  # a bug must not end the queue's pulls for good
                    log.exception("%s: pull task of %s failed", self.group, mq)
                    delay = cfg.pull_time_delay_when_exception
            if delay > 0:
                await asyncio.sleep(delay)

    async def _next_pull_offset(self, mq: MessageQueue) -> int:
        state = self.assigned_message_queue.get(mq)
        assert state is not None
        if state.seek_offset != -1:
            offset, state.seek_offset = state.seek_offset, -1
            state.consume_offset = offset
            state.pull_offset = offset
            return offset
        if state.pull_offset == -1:
            offset = await self.rebalance_impl.compute_pull_from_where(mq)
            if offset >= 0 and state is self.assigned_message_queue.get(mq):
                state.pull_offset = offset
                if state.consume_offset < 0:
                    state.consume_offset = offset
            return offset
        if state.consume_offset < 0:
            state.consume_offset = state.pull_offset
        return state.pull_offset

    def _subscription(self, topic: str) -> SubscriptionData:
        if self.subscription_type == "SUBSCRIBE":
            sub = self.rebalance_impl.subscription_inner.get(topic)
            if sub is not None:
                return sub
        return build_subscription_data(topic, SUB_ALL)

    async def _pull_once(self, mq: MessageQueue, state: MessageQueueState) -> float:
        """One pull of ``mq``; the delay before the next."""
        cfg = self.config
        try:
            offset = await self._next_pull_offset(mq)
            if offset < 0:
                return cfg.pull_time_delay_when_exception
            subscription = self._subscription(mq.topic)
            assert self._pull_api is not None
            raw = await self._pull_api.pull_kernel_impl(
                mq, subscription, offset, cfg.pull_batch_size,
                build_sys_flag(commit_offset=False, suspend=True, subscription=True),
                0, cfg.broker_suspend_max_time, cfg.consumer_timeout_when_suspend,
                0 if subscription.expression_type == EXPRESSION_TYPE_TAG else subscription.sub_version,
            )
            result = self._pull_api.process_pull_result(mq, raw, subscription)
        except (RemotingError, MQClientException, MQBrokerException) as e:
            log.warning("%s: pull of %s failed: %s", self.group, mq, e)
            return cfg.pull_time_delay_when_exception
        # (nothing awaited from here on: a seek cannot come between this check and the updates below)
        current = self.assigned_message_queue.get(mq)
        if current is not state or state.process_queue.dropped:
            return 0.0
        if result.pull_status is PullStatus.FOUND and state.seek_offset == -1:
            msgs = result.msg_found_list  # no SQL92 re-check at the client, as in RocketMQ (push_consumer_impl)
            if msgs:
                state.process_queue.put_message(msgs)
                self._submit_consume_request(ConsumeRequest(msgs, mq, state.process_queue))
        elif result.pull_status is PullStatus.OFFSET_ILLEGAL:
            log.warning("%s: pull offset of %s illegal, moving to %d", self.group, mq, result.next_begin_offset)
        if state.seek_offset == -1:
            state.pull_offset = result.next_begin_offset
        return 0.0
