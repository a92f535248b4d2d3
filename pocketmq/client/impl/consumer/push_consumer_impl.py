"""DefaultMQPushConsumerImpl: the push consumer's machinery, behind the PushConsumer facade.

    RebalanceService ─► RebalanceImpl ─► PullMessageService ─► pull_message ─► ProcessQueue
                                              ▲                      │
                                              └── next PullRequest ◄─┴─► ConsumeMessage*Service ─► listener

``pull_message`` (push_consumer_pull.py) is DefaultMQPushConsumerImpl.pullMessage: flow control first (cached
count, size, span; orderly: the queue must be locked), then one long-polling PULL_MESSAGE whose answer feeds the
ProcessQueue and the consume service and queues the next PullRequest. The consumer registers with its
MQClientInstance, which heartbeats its subscriptions, persists its offsets and wakes its rebalance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from pocketmq.common.java_numbers import INT_MAX
from pocketmq.common.mix_all import DEFAULT_CONSUMER_GROUP
from pocketmq.remoting.client_body import ConsumerData, MessageQueue, SubscriptionData
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.tasks import TaskTracker

from ...client_config import ClientConfig
from ...consumer.allocate import AllocateMessageQueueStrategy
from ...consumer.consumer_enums import ConsumeType, MessageModel
from ...consumer.push_consumer_config import PushConsumerConfig
from ...consumer.store.local_file_offset_store import LocalFileOffsetStore
from ...consumer.store.offset_store import OffsetStore, RemoteBrokerOffsetStore
from ...exceptions import MQBrokerException, MQClientException
from ...filter_api import build_subscription_data
from ...trace.async_trace_dispatcher import AsyncTraceDispatcher
from ...trace.trace_hooks import ConsumeMessageTraceHook
from ...validators import check_group, check_topic
from ..mq_client_instance import MQClientInstance
from ..mq_client_manager import MQClientManager
from ..teardown import Teardown, undo_start
from .consume_message_concurrently_service import ConsumeMessageConcurrentlyService
from .consume_message_orderly_service import ConsumeMessageOrderlyService
from .consume_message_service import ConsumeMessageService
from .mq_consumer_inner import RebalancedConsumerInner
from .pull_api import PullAPIWrapper
from .push_consumer_admin import PushConsumerAdmin
from .push_consumer_pull import PushConsumerPull
from .push_consumer_retry import PushConsumerRetry, retry_topic
from .rebalance_push_impl import RebalancePushImpl

log = logging.getLogger(__name__)

MAX_RECONSUME_TIMES_CONCURRENTLY = 16
MAX_RECONSUME_TIMES_ORDERLY = INT_MAX



def _closed(coro: Coroutine[Any, Any, Any]) -> None:
    coro.close()  # never started: no "coroutine was never awaited" warning


class DefaultMQPushConsumerImpl(PushConsumerAdmin, PushConsumerRetry, PushConsumerPull, RebalancedConsumerInner):
    def __init__(
        self,
        group: str,
        client_config: ClientConfig,
        config: PushConsumerConfig,
        allocate_strategy: AllocateMessageQueueStrategy,
    ) -> None:
        self.group = group
        self.client_config = client_config
        self.config = config
        self.allocate_strategy = allocate_strategy
        self.subscriptions: dict[str, SubscriptionData] = {}  # what the user subscribed to
        self.listener: Any = None
        self.consume_orderly = False
        self.pull_threshold_for_queue = config.pull_threshold_for_queue
        self.pull_threshold_size_for_queue = config.pull_threshold_size_for_queue
        self.pause = False
        self.running = False
        self.start_timestamp = 0  # epoch ms of the last start (ConsumerRunningInfo's PROP_CONSUMER_START_TIMESTAMP)
        self.queue_flow_control_times = 0  # pulls put off by the count, size or span limits (observability)
        self.queue_max_span_flow_control_times = 0
        self._instance: MQClientInstance | None = None
        self._offset_store: OffsetStore | None = None
        self._rebalance_impl: RebalancePushImpl | None = None
        self._pull_api: PullAPIWrapper | None = None
        self.consume_message_service: ConsumeMessageService | None = None
        self._tasks = TaskTracker(log)
        self._teardown = Teardown(f"push consumer {group}")
        self._learning_routes = False
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        self.trace_hook: ConsumeMessageTraceHook | None = None  # set while tracing (enable_msg_trace)

    # --- state ---------------------------------------------------------------------------------------------

    def _state_error(self) -> MQClientException:
        return MQClientException("The consumer service state not OK, maybe started once or not started yet")

    @property
    def instance(self) -> MQClientInstance:
        if self._instance is None:
            raise self._state_error()
        return self._instance

    @property
    def offset_store(self) -> OffsetStore:
        if self._offset_store is None:
            raise self._state_error()
        return self._offset_store

    @property
    def rebalance_impl(self) -> RebalancePushImpl:
        if self._rebalance_impl is None:
            raise self._state_error()
        return self._rebalance_impl

    def max_reconsume_times(self) -> int:
        if self.config.max_reconsume_times != -1:
            return self.config.max_reconsume_times
        return MAX_RECONSUME_TIMES_ORDERLY if self.consume_orderly else MAX_RECONSUME_TIMES_CONCURRENTLY

    # --- configuration before start ------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | None, expression_type: str) -> None:
        check_topic(topic)
        data = build_subscription_data(topic, expression, expression_type)
        self.subscriptions[topic] = data
        if self._rebalance_impl is not None:
            self._rebalance_impl.subscription_inner[topic] = data
            self.instance.rebalance_service.wakeup()
            self.spawn(self.instance.send_heartbeat_to_all_brokers())

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        if self._rebalance_impl is not None:
            self._rebalance_impl.subscription_inner.pop(topic, None)

    def register_message_listener(self, listener: Any, orderly: bool) -> None:
        if not callable(listener):
            raise MQClientException("messageListener must be callable")
        if self.running:
            raise MQClientException("register the message listener before start()")
        self.listener = listener
        self.consume_orderly = orderly

    # --- lifecycle -----------------------------------------------------------------------------------------

    def _check_config(self) -> None:
        check_group(self.group)
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise MQClientException(
                f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one."
            )
        if self.listener is None:
            raise MQClientException("messageListener is null; register_message_listener() first")
        if not self.subscriptions:
            raise MQClientException("no subscription; subscribe() to a topic first")

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self._instance is not None or self.running:
            raise MQClientException("The PushConsumer service state not OK, maybe started once")
        self._check_config()
        cfg = self.config
        offset_store: OffsetStore | None = None
        if cfg.message_model is MessageModel.BROADCASTING:
            instance_name = self.client_config.instance_name or "DEFAULT"
            local = LocalFileOffsetStore(cfg.offset_store_dir, f"{self.client_config.client_ip}@{instance_name}",
                                         self.group)
            await asyncio.to_thread(local.load)  # (before anything is set: a start cancelled here left it unstartable)
            offset_store = local
        else:
            self.client_config.change_instance_name_to_pid()  # (each one a member of its group of its own)
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        self._instance = instance
        rebalance = RebalancePushImpl(self)
        rebalance.subscription_inner.update(self.subscriptions)
        if cfg.message_model is MessageModel.CLUSTERING:
            # Failed messages come back through the group's retry topic; every consumer reads it.
            rt = retry_topic(self.group)
            rebalance.subscription_inner[rt] = build_subscription_data(rt, "*")
        self._rebalance_impl = rebalance
        self._pull_api = PullAPIWrapper(instance, self.group)
        self._offset_store = RemoteBrokerOffsetStore(instance, self.group) if offset_store is None else offset_store
        if self.consume_orderly:
            self.consume_message_service = ConsumeMessageOrderlyService(self, self.listener)
        else:
            self.consume_message_service = ConsumeMessageConcurrentlyService(self, self.listener)
        try:
            instance.register_consumer(self.group, self)
        except MQClientException:
            self._instance = self._offset_store = self._rebalance_impl = self._pull_api = None
            self.consume_message_service = None
            raise
        self.running = True
        self.start_timestamp = int(time.time() * 1000)
        self._tasks = TaskTracker(log)
        try:
            await self._start_services(instance, rebalance)
        except BaseException as e:
            # Whatever stopped it (a wrong name server address, a cancelled start), nothing of it may go on in the
            # background: a consumer whose start() was cancelled went on consuming, and could not be started again.
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise
        log.info("push consumer %s started as %s", self.group, instance.client_id)

    async def _start_services(self, instance: MQClientInstance, rebalance: RebalancePushImpl) -> None:
        """start()'s part after the consumer is registered with its instance."""
        if self.config.enable_msg_trace:
            dispatcher = AsyncTraceDispatcher(self.group, self.client_config, self.config.custom_trace_topic)
            await dispatcher.start()
            self.trace_dispatcher = dispatcher
            self.trace_hook = ConsumeMessageTraceHook(dispatcher, self.group)
        assert self.consume_message_service is not None
        self.consume_message_service.start()
        await instance.start()
        # A wrong name server address fails start() at once; a topic without a route yet does not.
        for topic in list(rebalance.subscription_inner):
            await instance.update_topic_route_info_from_name_server(topic, unreachable_raises=True)
        await instance.check_client_in_broker(self.group, list(self.subscriptions.values()))
        await instance.send_heartbeat_to_all_brokers()
        self.learn_missing_routes()
        instance.rebalance_service.wakeup()

    async def shutdown(self) -> None:
        """Stop pulling and consuming, persist offsets, leave the group (the others take its queues over).

        The teardown runs in a task of its own (impl/teardown.py): a caller cancelled meanwhile does not stop it,
        a second call waits for it, and a listener may call this (the consume worker it runs on is left alone;
        the batch it is consuming is not committed, so it is delivered again)."""
        self._begin_shutdown()
        await self._teardown.wait()

    def _begin_shutdown(self) -> None:
        if self._teardown.active:
            return
        instance = self._instance
        if instance is None or not self.running:
            return
        self.running = False
        self._teardown.begin(self._do_shutdown(instance))

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        # A round already running (a peer's departure wakes it at any moment) would go on taking and dropping
        # queues while the table below is walked: let it finish, and start none after it.
        await self.rebalance_impl.stop()
        stuck = await self._tasks.close(timeout=5.0)
        if stuck:
            log.warning("%s: %d background tasks ignored cancellation", self.group, stuck)
        assert self.consume_message_service is not None
        await self.consume_message_service.shutdown(self.config.await_termination_when_shutdown,
                                                    self._teardown.waiters)
        if self.trace_dispatcher is not None:
            dispatcher, self.trace_dispatcher, self.trace_hook = self.trace_dispatcher, None, None
            await dispatcher.shutdown()  # sends the records still queued
        await self.persist_consumer_offset()
        await instance.unregister_consumer(self.group)
        for pq in self.rebalance_impl.process_queue_table.values():
            pq.dropped = True
        self.rebalance_impl.process_queue_table.clear()
        self.rebalance_impl.settled_queues = []
        await instance.shutdown()
        self._instance = None
        log.info("push consumer %s shut down", self.group)

    def learn_missing_routes(self) -> None:
        """Ask the name servers again, with a growing pause, for subscribed topics that have no route yet,
        until they have one or a name-server poll period has passed.

        A new group's %RETRY% topic above all: the heartbeat start() sends creates it, and it reaches the name
        servers with the broker's registration a moment later, after the start-up lookup and rebalance. RocketMQ
        learns it at the next poll and takes its queues at the rebalance after that (the first retry of a new
        group came ~20 s late); here the route change wakes the rebalance (MQClientInstance.apply_topic_route).
        """
        if not self._learning_routes:
            self._learning_routes = True
            if self.spawn(self._learn_missing_routes()) is None:
                self._learning_routes = False

    async def _learn_missing_routes(self) -> None:
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.client_config.poll_name_server_interval
            pause = 0.01
            while self.running:
                r = self.rebalance_impl
                missing = [t for t in r.subscription_inner if not r.topic_subscribe_info_table.get(t)]
                if not missing or loop.time() + pause > deadline:
                    return
                await asyncio.sleep(pause)
                for topic in missing:
                    await self.instance.update_topic_route_info_from_name_server(topic)
                pause = min(pause * 2, 1.0)
        finally:
            self._learning_routes = False

    # --- background work, all cancelled by shutdown --------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        if self.running:
            return self._tasks.spawn(coro)
        _closed(coro)
        return None

    def schedule(self, delay: float, fn: Callable[[], object]) -> None:
        if self.running:
            self._tasks.schedule(delay, fn)

    def periodic(self, first: float, period: float, job: Callable[[], Awaitable[object]]) -> None:
        if self.running:
            name = f"{self.group}-{getattr(job, '__name__', 'job')}"
            self._tasks.periodic(name, period, job, first, (RemotingError, MQClientException, MQBrokerException))

    # --- ConsumerInner (called by MQClientInstance) --------------------------------------------------------

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY.value,
            message_model=self.config.message_model.value,
            consume_from_where=self.config.consume_from_where.value,
            subscription_data_set=list(self.rebalance_impl.subscription_inner.values()),
        )

    async def persist_consumer_offset(self) -> None:
        if self._offset_store is not None:
            try:
                await self._offset_store.persist_all()
            except OSError as e:
                log.warning("%s: persisting offsets failed: %s", self.group, e)

    async def persist_offset(self, mq: MessageQueue) -> None:
        try:
            await self.offset_store.persist(mq)
        except (RemotingError, MQClientException, MQBrokerException, OSError) as e:
            log.warning("%s: persisting the offset of %s failed: %s", self.group, mq, e)

    async def do_rebalance(self) -> None:
        if self.running and not self.pause:
            await self.rebalance_impl.do_rebalance(self.consume_orderly)
