"""SimpleConsumer: RocketMQ 5's simple consumer, over POP on the remoting protocol (both codecs).

    async with SimpleConsumer("CG", "127.0.0.1:9876", subscriptions={"Orders": "*"}) as consumer:
        for msg in await consumer.receive(16, invisible_duration=30):
            handle(msg)
            await consumer.ack(msg)

``receive`` pops from one broker of the subscribed topics at a time (round robin, every queue of the topic on
that broker), waiting up to ``await_duration`` for messages. What it returns is invisible to the group for
``invisible_duration``; not acked by then, it is delivered again with ``reconsume_times`` + 1 (the attempt is
``reconsume_times + 1``), and after the group's retry maximum it goes to %DLQ%group.
``change_invisible_duration`` gives a message more (or less) time and a new receipt handle. With
``fifo=True`` the pops are orderly: a queue's messages come in order, the next batch only after this one is
acked (or its invisible time is over), and attempts are counted in place. See docs/client.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_CONSUMER_GROUP
from pocketmq.common.pop_ack_constants import CONSUME_INIT_MODE_MAX
from pocketmq.remoting.client_body import MessageQueue, SubscriptionData

from ..client_config import ClientConfig
from ..exceptions import MQClientException
from ..filter_api import EXPRESSION_TYPE_TAG, build_subscription_data
from ..impl.consumer.mq_consumer_inner import SubscribedConsumerInner
from ..impl.consumer.pop_api_wrapper import MAX_POP_NUMS, PopAPIWrapper
from ..impl.mq_client_instance import MQClientInstance
from ..impl.mq_client_manager import MQClientManager
from ..impl.teardown import Teardown, undo_start
from ..validators import check_group

log = logging.getLogger(__name__)


class SimpleConsumer(SubscribedConsumerInner):
    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        subscriptions: Mapping[str, str] | None = None,
        await_duration: float = 20.0,
        fifo: bool = False,
        init_mode: int = CONSUME_INIT_MODE_MAX,
        **client_options: Any,
    ) -> None:
        """``subscriptions``: topic -> tag expression ("*", "TagA || TagB"); ``await_duration``: how long a
        receive waits at the broker for messages (seconds); ``init_mode``: where a group without an offset
        starts (0 the queue's first message, 1 its last one, or the first if still in memory);
        ``client_options``: ClientConfig fields."""
        self.group = group
        self.client_config = ClientConfig(namesrv_addr=namesrv_addr, **client_options)
        self.await_duration = await_duration
        self.fifo = fifo
        self.init_mode = init_mode
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info_table: dict[str, list[MessageQueue]] = {}
        self._turn = 0
        self._instance: MQClientInstance | None = None
        self._pop_api: PopAPIWrapper | None = None
        self._teardown = Teardown(f"simple consumer {group}")
        for topic, expression in (subscriptions or {}).items():
            self.subscribe(topic, expression)

    # --- lifecycle -----------------------------------------------------------------------------------------

    @property
    def instance(self) -> MQClientInstance:
        if self._instance is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._instance

    @property
    def pop_api(self) -> PopAPIWrapper:
        if self._pop_api is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._pop_api

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self._instance is not None:
            raise MQClientException("The consumer service state not OK, maybe started once")
        check_group(self.group)
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise MQClientException(f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}")
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        instance.register_consumer(self.group, self)
        self._instance = instance
        self._pop_api = PopAPIWrapper(instance, self.group)
        try:
            await instance.start()
            for topic in self.subscriptions:
                await instance.update_topic_route_info_from_name_server(topic)
            await instance.send_heartbeat_to_all_brokers()
        except BaseException as e:  # (a failed or cancelled start leaves nothing running; it may be started again)
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise

    async def shutdown(self) -> None:
        """Leave the group and release the instance, in a task of its own (impl/teardown.py): a cancelled caller
        does not stop it half-way, a second call waits for it."""
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
        self._instance = self._pop_api = None
        await instance.unregister_consumer(self.group)
        await instance.shutdown()

    async def __aenter__(self) -> SimpleConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # --- subscriptions -------------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | None = "*", expression_type: str = EXPRESSION_TYPE_TAG) -> None:
        self.subscriptions[topic] = build_subscription_data(topic, expression, expression_type)
        if self._instance is not None:
            self._instance.rebalance_immediately()

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        self.topic_subscribe_info_table.pop(topic, None)

    # --- receive, ack, change invisible duration -----------------------------------------------------------

    async def receive(self, max_message_num: int = 16, invisible_duration: float = 30.0,
                      await_duration: float | None = None) -> list[MessageExt]:
        """Up to ``max_message_num`` (1..32) messages of one broker, invisible to the group for
        ``invisible_duration`` seconds; [] when none came within ``await_duration`` (default the consumer's)."""
        if not 1 <= max_message_num <= MAX_POP_NUMS:
            raise MQClientException(f"maxMessageNum {max_message_num} is not 1..{MAX_POP_NUMS}")
        if invisible_duration < 0:
            raise MQClientException("invisibleDuration must be >= 0")
        wait = self.await_duration if await_duration is None else await_duration
        topic, broker_name = await self._next_target(wait)
        sub = self.subscriptions[topic]
        result = await self.pop_api.pop(
            topic, broker_name, max_message_num, round(invisible_duration * 1000), round(wait * 1000),
            sub.sub_string, sub.expression_type, self.fifo, self.init_mode,
            wait + self.client_config.mq_client_api_timeout,
        )
        return result.msg_found_list

    async def ack(self, msg: MessageExt) -> None:
        """Done with ``msg``: it is not delivered to the group again."""
        await self.pop_api.ack(msg, self.client_config.mq_client_api_timeout)

    async def ack_batch(self, msgs: list[MessageExt]) -> None:
        """Ack several messages with one request per broker (BATCH_ACK_MESSAGE)."""
        if msgs:
            await self.pop_api.ack_batch(msgs, self.client_config.mq_client_api_timeout)

    async def change_invisible_duration(self, msg: MessageExt, invisible_duration: float) -> str:
        """``msg`` becomes visible again ``invisible_duration`` seconds from now (unless acked before); returns
        its new receipt handle, which ``msg`` now carries (ack it with that)."""
        if invisible_duration < 0:
            raise MQClientException("invisibleDuration must be >= 0")
        return await self.pop_api.change_invisible_time(
            msg, round(invisible_duration * 1000), self.client_config.mq_client_api_timeout)

    async def _next_target(self, wait: float) -> tuple[str, str]:
        """The next (topic, broker name) in turn over the subscribed topics' brokers; a topic without a route yet
        (just created: the name servers learn it a moment later) is looked up again for up to ``wait``."""
        if not self.subscriptions:
            raise MQClientException("no subscription: subscribe to a topic first")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        targets = self._targets()
        while not targets:
            for topic in self.subscriptions:
                await self.instance.update_topic_route_info_from_name_server(topic, unreachable_raises=True)
            targets = self._targets()
            if not targets and loop.time() >= deadline:
                raise MQClientException(f"no route for {sorted(self.subscriptions)}: do the topics exist?")
            if not targets:
                await asyncio.sleep(0.05)
        self._turn += 1
        return targets[self._turn % len(targets)]

    def _targets(self) -> list[tuple[str, str]]:
        return sorted({(t, mq.broker_name) for t in self.subscriptions
                       for mq in self.topic_subscribe_info_table.get(t, [])})

    # --- ConsumerInner (called by MQClientInstance; the rest in SubscribedConsumerInner) ---------------------

    async def persist_consumer_offset(self) -> None:
        """The broker keeps a popping group's offsets: nothing to persist."""

    async def do_rebalance(self) -> None:
        """The broker decides who gets what: nothing to rebalance."""
