"""LitePullConsumer: RocketMQ's DefaultLitePullConsumer (and its Impl). Pull tasks fetch in the background;
the application polls.

    consumer = LitePullConsumer("CG", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "*")      # the group splits the topic's queues (rebalance) ...
    async with consumer:                      # ... or consumer.assign([...]) picks them
        while running:
            for msg in await consumer.poll(timeout=1.0):
                ...                           # auto commit: what poll returned is committed by a later poll

Each assigned queue has a pull task (an asyncio task; impl/consumer/lite_pull_task.py): flow control first
(messages waiting to be polled over every queue, cached count, size and span of the queue), then one long-polling
PULL_MESSAGE whose messages go to the queue's ProcessQueue and, as one consume request, to the poll cache.
``poll`` hands out the oldest request and moves the queue's consume offset past it; a commit stores consume
offsets (auto: at most every ``auto_commit_interval``, from ``poll``; manual: ``commit_sync``). ``seek`` drops
what was pulled and restarts the queue's task at the new offset; ``pause`` stops a queue's pulls (what was pulled
can still be polled).

In subscribe mode the group's members split each topic's queues as push consumers do (RebalanceImpl, on the
instance's rebalance service); a queue taken away is committed and persisted first. Not in 4.9.8 but done
here: a rebalance's queue commit (RocketMQ drops what was polled and not committed, so the next owner repeats
it) and ``commit_sync`` storing the offsets at the broker before it returns (RocketMQ leaves that to the next
periodic persist).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_CONSUMER_GROUP
from pocketmq.remoting.client_body import ConsumerData, MessageQueue, SubscriptionData
from pocketmq.remoting.errors import RemotingError

from ..client_config import ClientConfig
from ..exceptions import MQBrokerException, MQClientException
from ..filter_api import EXPRESSION_TYPE_TAG, build_subscription_data
from ..impl import mq_admin
from ..impl.consumer.assigned_message_queue import AssignedMessageQueue
from ..impl.consumer.lite_pull_offsets import LitePullOffsets
from ..impl.consumer.lite_pull_task import ConsumeRequest, LitePullTasks
from ..impl.consumer.mq_consumer_inner import RebalancedConsumerInner
from ..impl.consumer.pull_api import PullAPIWrapper
from ..impl.consumer.rebalance_lite_pull_impl import RebalanceLitePullImpl
from ..impl.consumer.topic_queue_watch import TopicMessageQueueChangeListener, TopicQueueWatch
from ..impl.mq_client_instance import MQClientInstance
from ..impl.mq_client_manager import MQClientManager
from ..impl.teardown import Teardown, undo_start
from ..trace.async_trace_dispatcher import AsyncTraceDispatcher
from ..trace.trace_context import ConsumeReturnType
from ..trace.trace_hooks import ConsumeMessageTraceHook
from ..validators import check_group, check_topic
from .allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from .consumer_enums import ConsumeFromWhere, ConsumeType, MessageModel
from .lite_pull_consumer_config import LitePullConsumerConfig
from .store.local_file_offset_store import LocalFileOffsetStore
from .store.offset_store import OffsetStore, RemoteBrokerOffsetStore

log = logging.getLogger(__name__)

_CONFIG_FIELDS = {f.name for f in fields(LitePullConsumerConfig)}
NOT_RUNNING = "The consumer not running, please start it first."
SUBSCRIPTION_CONFLICT = "Subscribe and assign are mutually exclusive."

class LitePullConsumer(LitePullOffsets, LitePullTasks, TopicQueueWatch, RebalancedConsumerInner):
    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        **options: Any,
    ) -> None:
        """``options`` are LitePullConsumerConfig fields (message_model, consume_from_where, auto_commit,
        auto_commit_interval, pull_batch_size, pull_threshold_for_queue, ... every time in seconds) and
        ClientConfig fields (instance_name, rebalance_interval, poll_name_server_interval, protocol, ...)."""
        config_options = {k: v for k, v in options.items() if k in _CONFIG_FIELDS}
        client_options = {k: v for k, v in options.items() if k not in _CONFIG_FIELDS}
        try:
            self.config = LitePullConsumerConfig(**config_options)
        except ValueError as e:
            raise MQClientException(f"bad lite pull consumer setting: {e}") from None
        self.group = group
        self.client_config = ClientConfig(namesrv_addr=namesrv_addr, **client_options)
        self.allocate_strategy = allocate_strategy or AllocateMessageQueueAveragely()
        self.subscription_type: str | None = None  # "SUBSCRIBE" or "ASSIGN", fixed by the first call
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.assigned_message_queue = AssignedMessageQueue()
        self.running = False
        self._shut_down = False  # (SHUTDOWN_ALREADY: a consumer is not started again)
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        self.trace_hook: ConsumeMessageTraceHook | None = None  # set while tracing (enable_msg_trace)
        self.consume_request_flow_control_times = 0
        self.queue_flow_control_times = 0
        self.queue_max_span_flow_control_times = 0
        self._assigned_before_start: list[MessageQueue] = []
        self._task_table: dict[MessageQueue, asyncio.Task[None]] = {}
        self._consume_request_cache: collections.deque[ConsumeRequest] = collections.deque()
        self._cache_not_empty: asyncio.Event | None = None
        self._next_auto_commit_deadline = -1.0
        self._topic_listeners: dict[str, TopicMessageQueueChangeListener] = {}
        self._queues_for_topic: dict[str, set[MessageQueue]] = {}
        self._monitor: asyncio.Task[None] | None = None
        self._instance: MQClientInstance | None = None
        self._offset_store: OffsetStore | None = None
        self._rebalance_impl: RebalanceLitePullImpl | None = None
        self._pull_api: PullAPIWrapper | None = None
        self._teardown = Teardown(f"lite pull consumer {group}")

    # --- state ---------------------------------------------------------------------------------------------

    @property
    def message_model(self) -> MessageModel:
        return self.config.message_model

    @property
    def consume_from_where(self) -> ConsumeFromWhere:
        return self.config.consume_from_where

    def consume_timestamp_ms(self) -> int:
        return self.config.consume_timestamp_ms()

    @property
    def instance(self) -> MQClientInstance:
        if self._instance is None:
            raise MQClientException(NOT_RUNNING)
        return self._instance

    @property
    def offset_store(self) -> OffsetStore:
        if self._offset_store is None:
            raise MQClientException(NOT_RUNNING)
        return self._offset_store

    @property
    def rebalance_impl(self) -> RebalanceLitePullImpl:
        if self._rebalance_impl is None:
            raise MQClientException(NOT_RUNNING)
        return self._rebalance_impl

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    def _check_running(self) -> None:
        if not self.running:
            raise MQClientException(NOT_RUNNING)

    def _set_subscription_type(self, kind: str) -> None:
        if self.subscription_type is None:
            self.subscription_type = kind
        elif self.subscription_type != kind:
            raise MQClientException(SUBSCRIPTION_CONFLICT)

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer reads now (its share of the split, or what ``assign`` gave it)."""
        return set(self.assigned_message_queue.message_queues())

    # --- subscribe or assign -------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | None = "*", expression_type: str = EXPRESSION_TYPE_TAG) -> None:
        """Read ``topic``'s messages that match ``expression`` (tags, or SQL92 with ``expression_type``), the
        group's members splitting its queues. Subscribing again replaces the expression."""
        check_topic(topic)
        self._set_subscription_type("SUBSCRIBE")
        data = build_subscription_data(topic, expression, expression_type)
        self.subscriptions[topic] = data
        if self._rebalance_impl is not None:
            self._rebalance_impl.subscription_inner[topic] = data
        if self.running:
            self._spawn(self._after_subscribe(topic))

    async def _after_subscribe(self, topic: str) -> None:
        instance = self.instance
        await instance.send_heartbeat_to_all_brokers()
        await instance.update_topic_route_info_from_name_server(topic)
        instance.rebalance_immediately()

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        if self._rebalance_impl is not None:
            self._rebalance_impl.subscription_inner.pop(topic, None)
        self._remove_pull_tasks([mq for mq in self._task_table if mq.topic == topic])
        self.assigned_message_queue.remove_assigned_message_queue(topic)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Read exactly these queues (no rebalance; every message of them, as with ``"*"``)."""
        mqs = list(mqs)
        if not mqs:
            raise MQClientException("Message queues can not be null or empty.")
        self._set_subscription_type("ASSIGN")
        if not self.running:
            self._assigned_before_start = mqs
            return
        self._update_assign(mqs)

    def _update_assign(self, mqs: list[MessageQueue]) -> None:
        dropped = self.assigned_message_queue.update_assigned_message_queue(mqs)
        self._remove_pull_tasks(dropped)
        self._start_pull_tasks(mqs)

    def message_queue_changed(self, topic: str, mq_all: list[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        """The rebalance's new split of ``topic`` (every queue, broadcasting)."""
        mqs = set(mq_all) if self.message_model is MessageModel.BROADCASTING else mq_divided
        r = self.rebalance_impl
        dropped = self.assigned_message_queue.update_assigned_message_queue(
            mqs, topic, r.process_queue_table, r.start_offsets
        )
        for mq in mqs:
            r.start_offsets.pop(mq, None)
        self._remove_pull_tasks(dropped)
        self._start_pull_tasks(mqs)

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self._instance is not None or self.running or self._shut_down:
            raise MQClientException("The PullConsumer service state not OK, maybe started once")
        check_group(self.group)
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise MQClientException(
                f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one."
            )
        local: LocalFileOffsetStore | None = None
        if self.message_model is MessageModel.BROADCASTING:
            name = f"{self.client_config.client_ip}@{self.client_config.instance_name or 'DEFAULT'}"
            local = LocalFileOffsetStore(self.config.offset_store_dir, name, self.group)
            await asyncio.to_thread(local.load)  # (before anything is set: a start cancelled here left it unstartable)
        else:
            self.client_config.change_instance_name_to_pid()  # (each one a member of its group of its own)
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        instance.register_consumer(self.group, self)
        self._instance = instance
        rebalance = RebalanceLitePullImpl(self)
        rebalance.subscription_inner.update(self.subscriptions)
        self._rebalance_impl = rebalance
        self._pull_api = PullAPIWrapper(instance, self.group)
        self._offset_store = RemoteBrokerOffsetStore(instance, self.group) if local is None else local
        self._cache_not_empty = asyncio.Event()
        self.running = True
        try:
            await self._start_services(instance)
        except BaseException as e:  # a failed or cancelled start: nothing of it goes on (and, shut down, no restart)
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise
        log.info("lite pull consumer %s started as %s", self.group, instance.client_id)

    async def _start_services(self, instance: MQClientInstance) -> None:  # (start() once registered)
        await instance.start()
        if self.config.enable_msg_trace:
            dispatcher = AsyncTraceDispatcher(self.group, self.client_config, self.config.custom_trace_topic)
            await dispatcher.start()
            self.trace_dispatcher = dispatcher
            self.trace_hook = ConsumeMessageTraceHook(dispatcher, self.group)
        for topic in list(self.subscriptions):
            await instance.update_topic_route_info_from_name_server(topic, unreachable_raises=True)
        await instance.check_client_in_broker(self.group, list(self.subscriptions.values()))
        if self.subscription_type == "ASSIGN":
            self._update_assign(self._assigned_before_start)
        for topic in self._topic_listeners:
            self._queues_for_topic[topic] = set(await self.fetch_message_queues(topic))
        self._monitor = asyncio.get_running_loop().create_task(self._monitor_topic_queues())
        await instance.send_heartbeat_to_all_brokers()
        instance.rebalance_immediately()

    async def shutdown(self) -> None:
        """Stop pulling, commit (auto commit) and persist the offsets, leave the group; a poll waiting returns [].
        In a task of its own (impl/teardown.py): a cancelled caller does not stop it, a second call waits for it."""
        self._begin_shutdown()
        await self._teardown.wait()

    def _begin_shutdown(self) -> None:
        instance = self._instance
        if self._teardown.active or instance is None or not self.running:
            return
        if self.config.auto_commit:
            self.commit_all()
        self.running = False
        self._shut_down = True
        if self._cache_not_empty is not None:
            self._cache_not_empty.set()  # (a poll waiting returns at once)
        self._teardown.begin(self._do_shutdown(instance))

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        await self.rebalance_impl.stop()
        tasks = [*self._task_table.values(), *([self._monitor] if self._monitor is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task_table.clear()
        await self.persist_consumer_offset()
        if self.trace_dispatcher is not None:
            dispatcher, self.trace_dispatcher, self.trace_hook = self.trace_dispatcher, None, None
            await dispatcher.shutdown()  # sends the records still queued
        await instance.unregister_consumer(self.group)
        self.assigned_message_queue.clear()
        self._consume_request_cache.clear()
        await instance.shutdown()
        self._instance = None
        log.info("lite pull consumer %s shut down", self.group)

    async def __aenter__(self) -> LitePullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(_log_failure)

    # --- poll ----------------------------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The messages of one pull, the oldest waiting, within ``timeout`` seconds (default ``poll_timeout``);
        [] when none came. With auto commit, what earlier polls returned is committed first (at most every
        ``auto_commit_interval``)."""
        self._check_running()
        timeout = self.config.poll_timeout if timeout is None else timeout
        if timeout < 0:
            raise MQClientException("Timeout must not be negative")
        if self.config.auto_commit:
            self._maybe_auto_commit()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        cache = self._consume_request_cache
        not_empty = self._cache_not_empty
        assert not_empty is not None
        while True:
            while cache:
                request = cache.popleft()
                if not cache:
                    not_empty.clear()
                if request.process_queue.dropped:
                    continue
                offset = request.process_queue.remove_message(request.messages)
                state = self.assigned_message_queue.get(request.message_queue)
                if state is not None and offset >= 0:
                    state.consume_offset = offset
                trace = self.trace_hook
                if trace is not None:  # as RocketMQ's poll: handed over counts as consumed, successfully
                    before = trace.consume_message_before(request.messages)
                    trace.consume_message_after(before, len(request.messages), True, ConsumeReturnType.SUCCESS)
                return request.messages
            remaining = deadline - loop.time()
            if remaining <= 0 or not self.running:
                return []
            try:
                async with asyncio.timeout(remaining):
                    await not_empty.wait()
            except TimeoutError:
                return []
            if not self.running:
                return []  # (shutdown wakes it)

    def _submit_consume_request(self, request: ConsumeRequest) -> None:
        self._consume_request_cache.append(request)
        assert self._cache_not_empty is not None
        self._cache_not_empty.set()

    def _clear_message_queue_in_cache(self, mq: MessageQueue) -> None:
        state = self.assigned_message_queue.get(mq)
        if state is not None:
            state.process_queue.clear()
        cache = self._consume_request_cache
        kept = [r for r in cache if r.message_queue != mq]
        if len(kept) != len(cache):
            cache.clear()
            cache.extend(kept)
            if not cache and self._cache_not_empty is not None:
                self._cache_not_empty.clear()

    # --- pause, resume (seek and the commits: lite_pull_offsets.py) ----------------------------------------

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues; what was pulled still comes out of ``poll``."""
        self.assigned_message_queue.pause(mqs)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        paused = [mq for mq in mqs if self.assigned_message_queue.is_paused(mq)]
        self.assigned_message_queue.resume(paused)
        for mq in paused:
            if mq in self._task_table:
                self._restart_pull_task(mq)  # at once, not after the rest of the pause's delay

    # --- lookups -------------------------------------------------------------------------------------------

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, from a name server (sorted)."""
        self._check_running()
        return await mq_admin.fetch_subscribe_message_queues(self.instance, topic)

    # --- ConsumerInner (called by MQClientInstance) --------------------------------------------------------

    def consumer_data(self) -> ConsumerData:
        subs = self._rebalance_impl.subscription_inner if self._rebalance_impl is not None else self.subscriptions
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_ACTIVELY.value,
            message_model=self.message_model.value,
            consume_from_where=self.consume_from_where.value,
            subscription_data_set=list(subs.values()),
        )

    async def persist_consumer_offset(self) -> None:
        if self._offset_store is not None:
            try:
                await self._offset_store.persist_all()
            except (RemotingError, MQClientException, MQBrokerException, OSError) as e:
                log.warning("%s: persisting offsets failed: %s", self.group, e)

    async def do_rebalance(self) -> None:
        if self.running and self.subscription_type == "SUBSCRIBE" and self._rebalance_impl is not None:
            await self._rebalance_impl.do_rebalance(False)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("lite pull consumer background step failed: %s", task.exception())
