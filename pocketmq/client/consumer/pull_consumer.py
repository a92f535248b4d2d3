"""PullConsumer: RocketMQ's DefaultMQPullConsumer. The application picks queues and offsets itself.

    async with PullConsumer("CG", "127.0.0.1:9876") as consumer:
        for mq in await consumer.fetch_subscribe_message_queues("TopicTest"):
            offset = max(await consumer.fetch_consume_offset(mq), 0)
            result = await consumer.pull(mq, "TagA || TagB", offset, 32)
            ...
            await consumer.update_consume_offset(mq, result.next_begin_offset)

Offsets live on the queue's master broker (clustering model). The consumer's group is reported in
heartbeats as a pull consumer (CONSUME_ACTIVELY), subscribed to "*" of every topic it pulled from.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.mix_all import DEFAULT_CONSUMER_GROUP
from pocketmq.remoting.client_body import MessageQueue, SubscriptionData

from ..client_config import ClientConfig
from ..exceptions import MQClientException
from ..filter_api import EXPRESSION_TYPE_TAG, SUB_ALL, build_subscription_data
from ..impl import mq_admin
from ..impl.consumer.mq_consumer_inner import SubscribedConsumerInner
from ..impl.consumer.pull_api import PullAPIWrapper, build_sys_flag
from ..impl.mq_admin import fetch_all_topic_list
from ..impl.mq_client_instance import MQClientInstance
from ..impl.mq_client_manager import MQClientManager
from ..impl.teardown import Teardown, undo_start
from ..message import PullResult
from ..validators import check_group
from .store.offset_store import ReadOffsetType, RemoteBrokerOffsetStore, clone_offset_table

log = logging.getLogger(__name__)


def _build_subscription(key: tuple[str, str | None, str]) -> SubscriptionData:
    topic, expression, expression_type = key
    return build_subscription_data(topic, expression, expression_type)


class PullConsumer(SubscribedConsumerInner):
    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        broker_suspend_max_time: float = 20.0,
        consumer_timeout_when_suspend: float = 30.0,
        consumer_pull_timeout: float = 10.0,
        **client_options: Any,
    ) -> None:
        """``client_options`` are ClientConfig fields (instance_name, persist_consumer_offset_interval, ...).

        ``broker_suspend_max_time``: how long a broker holds a ``pull_blocking`` with no message;
        ``consumer_timeout_when_suspend``: the RPC timeout of such a pull (it must outlast the hold);
        ``consumer_pull_timeout``: the RPC timeout of a plain ``pull``.
        """
        self.group = group
        self.client_config = ClientConfig(namesrv_addr=namesrv_addr, **client_options)
        self.broker_suspend_max_time = broker_suspend_max_time
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self.consumer_pull_timeout = consumer_pull_timeout
        self.topic_subscribe_info_table: dict[str, list[MessageQueue]] = {}
        self.subscriptions: dict[str, SubscriptionData] = {}  # topics pulled from, reported in heartbeats
        # What each pull posts, parsed once per (topic, expression, type): a loop pulls with the same one.
        self._pull_subscriptions: BoundedCache[tuple[str, str | None, str], SubscriptionData] = BoundedCache(
            _build_subscription, 1024
        )
        self._instance: MQClientInstance | None = None
        self._offset_store: RemoteBrokerOffsetStore | None = None
        self._pull_api: PullAPIWrapper | None = None
        self._teardown = Teardown(f"pull consumer {group}")

    # --- lifecycle -----------------------------------------------------------------------------------------

    @property
    def instance(self) -> MQClientInstance:
        return self.make_sure_state_ok()

    def make_sure_state_ok(self) -> MQClientInstance:
        if self._instance is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._instance

    @property
    def offset_store(self) -> RemoteBrokerOffsetStore:
        if self._offset_store is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._offset_store

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        """MQClientInstance.getConsumerStatus of a pull consumer: its offset store's offsets of ``topic``."""
        store = self._offset_store
        return clone_offset_table(store, topic) if store is not None else {}

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self._instance is not None:
            raise MQClientException("The consumer service state not OK, maybe started once")
        check_group(self.group)
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise MQClientException(
                f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one."
            )
        self.client_config.change_instance_name_to_pid()  # (DefaultMQPullConsumerImpl.start, clustering)
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        instance.register_consumer(self.group, self)
        self._instance = instance
        self._offset_store = RemoteBrokerOffsetStore(instance, self.group)
        self._pull_api = PullAPIWrapper(instance, self.group)
        try:
            await instance.start()
        except BaseException as e:
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise

    async def shutdown(self) -> None:
        """Persist changed offsets, unregister the group from the brokers, release the instance; in a task of its
        own (impl/teardown.py): a cancelled caller does not stop it half-way, a second call waits for it."""
        self._begin_shutdown()
        await self._teardown.wait()

    def _begin_shutdown(self) -> None:
        if self._teardown.active:
            return
        instance = self._instance
        if instance is None:
            return
        self._teardown.begin(self._do_shutdown(instance))

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        await self.persist_consumer_offset()
        self._instance = self._offset_store = self._pull_api = None
        await instance.unregister_consumer(self.group)
        await instance.shutdown()

    async def __aenter__(self) -> PullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # --- queues --------------------------------------------------------------------------------------------

    async def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, straight from a name server (sorted by broker name, queue id)."""
        return await mq_admin.fetch_subscribe_message_queues(self.instance, topic)

    async def fetch_topic_list(self) -> list[str]:
        """Every topic the name servers know, system topics included (MQAdminExt.fetchAllTopicList)."""
        return await fetch_all_topic_list(self.instance)

    # --- pulling -------------------------------------------------------------------------------------------

    def pull(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int = 32,
        *,
        expression_type: str = EXPRESSION_TYPE_TAG,
        timeout: float | None = None,
    ) -> Coroutine[Any, Any, PullResult]:
        """Messages of ``mq`` from ``offset`` on that match ``sub_expression`` ("*", "TagA || TagB" or SQL92
        with ``expression_type="SQL92"``); answers at once, NO_NEW_MSG when there is nothing yet. (A coroutine
        to await, as an ``async def``'s: _pull_sync_impl's own, one frame less on every pull.)"""
        return self._pull_sync_impl(
            mq, sub_expression, expression_type, offset, max_nums, False,
            self.consumer_pull_timeout if timeout is None else timeout,
        )

    async def pull_blocking(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int = 32,
        timeout: float | None = None,
        *,
        expression_type: str = EXPRESSION_TYPE_TAG,
    ) -> PullResult:
        """Long polling (pullBlockIfNotFound): with nothing at ``offset`` the broker holds the request until a
        message arrives or ``timeout`` (default ``broker_suspend_max_time``) passes, then answers NO_NEW_MSG.
        The broker checks held requests on its own schedule, so the answer may come a little later."""
        suspend = self.broker_suspend_max_time if timeout is None else timeout
        margin = max(self.consumer_timeout_when_suspend - self.broker_suspend_max_time, 1.0)
        return await self._pull_sync_impl(
            mq, sub_expression, expression_type, offset, max_nums, True, suspend + margin, suspend
        )

    async def _pull_sync_impl(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str,
        offset: int,
        max_nums: int,
        block: bool,
        timeout: float,
        suspend: float | None = None,
    ) -> PullResult:
        self.make_sure_state_ok()
        if mq is None:
            raise MQClientException("mq is null")
        if offset < 0:
            raise MQClientException("offset < 0")
        if max_nums <= 0:
            raise MQClientException("maxNums <= 0")
        self._subscribe_automatically(mq.topic)
        subscription = self._pull_subscriptions[(mq.topic, sub_expression, expression_type)]
        assert self._pull_api is not None
        # An offset cached by update_consume_offset(flush=False) rides along (FLAG_COMMIT_OFFSET), as the push
        # consumer's does: the broker stores it with the pull, with no request of its own. It stays marked
        # unsent, so persist() still sends it (a slave, which stores no offsets, would drop it).
        commit_offset = self.offset_store.unsent_offset(mq)
        result = await self._pull_api.pull_kernel_impl(
            mq,
            subscription,
            offset,
            max_nums,
            build_sys_flag(commit_offset=commit_offset > 0, suspend=block, subscription=True),
            max(commit_offset, 0),
            self.broker_suspend_max_time if suspend is None else suspend,
            timeout,
        )
        return self._pull_api.process_pull_result(mq, result, subscription)

    def _subscribe_automatically(self, topic: str) -> None:
        if topic not in self.subscriptions:
            self.subscriptions[topic] = build_subscription_data(topic, SUB_ALL)

    # --- offsets -------------------------------------------------------------------------------------------

    async def fetch_consume_offset(self, mq: MessageQueue, from_store: bool = False) -> int:
        """The group's next offset for ``mq`` (this client's cache first unless ``from_store``); -1 if none."""
        kind = ReadOffsetType.READ_FROM_STORE if from_store else ReadOffsetType.MEMORY_FIRST_THEN_STORE
        return await self.offset_store.read_offset(mq, kind)

    async def update_consume_offset(self, mq: MessageQueue, offset: int, *, flush: bool = True) -> None:
        """Record the group's next offset. With ``flush`` (default) the broker stores it before this returns;
        without, it rides on the queue's next pull and goes with the next ``persist()`` (every
        ``persist_consumer_offset_interval`` and on shutdown)."""
        self.offset_store.update_offset(mq, offset)
        if flush:
            await self.offset_store.persist(mq)

    async def persist(self) -> None:
        """Send every offset updated since the last persist to its broker."""
        await self.offset_store.persist_all()

    async def seek_by_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        return await mq_admin.search_offset(self.instance, mq, timestamp_ms, self.client_config.mq_client_api_timeout)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await mq_admin.min_offset(self.instance, mq, self.client_config.mq_client_api_timeout)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The offset the next message will get: one past the last stored."""
        return await mq_admin.max_offset(self.instance, mq, self.client_config.mq_client_api_timeout)

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return await mq_admin.earliest_msg_store_time(self.instance, mq, self.client_config.mq_client_api_timeout)


    # --- ConsumerInner (called by MQClientInstance; the rest in SubscribedConsumerInner) ---------------------

    async def persist_consumer_offset(self) -> None:
        if self._offset_store is not None:
            await self._offset_store.persist_all()

    async def do_rebalance(self) -> None:
        """The application picks its queues itself: nothing to rebalance."""
