"""PushConsumer: RocketMQ's DefaultMQPushConsumer. Subscribe, register a listener, and messages arrive.

    async def on_messages(msgs, context):
        for msg in msgs:
            print(msg.topic, msg.tags, msg.body)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("my-consumers", "127.0.0.1:9876")
    consumer.subscribe("Orders", "created || paid")
    consumer.register_message_listener(on_messages)
    async with consumer:
        ...  # messages are consumed while the block runs

The consumers of one group share the topic's queues (CLUSTERING, the default: each message to one of
them, offsets stored by the brokers) or each read them all (BROADCASTING: offsets in a local file). A failed
message (RECONSUME_LATER, or an exception) comes back later through the group's %RETRY% topic, after the
delay of its retry level, up to ``max_reconsume_times``, then goes to %DLQ%group. With
``client_rebalance=False`` the consumers pop instead (RocketMQ 5's POP: the broker decides who gets what, acks
and retries go through POP; impl/consumer/pop_push_consumer_impl.py). See docs/client.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pocketmq.remoting.client_body import MessageQueue

from ..client_config import ClientConfig
from ..exceptions import MQClientException
from ..filter_api import EXPRESSION_TYPE_TAG
from ..impl.consumer.pop_push_consumer_impl import PopPushConsumerImpl
from ..impl.consumer.push_consumer_impl import DefaultMQPushConsumerImpl
from ..impl.mq_client_instance import MQClientInstance
from .allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from .consumer_enums import ConsumeFromWhere, MessageModel
from .message_listener import MessageListenerConcurrently, MessageListenerOrderly
from .push_consumer_config import PushConsumerConfig

_CONSUMER_FIELDS = {f.name for f in dataclasses.fields(PushConsumerConfig)}


class PushConsumer:
    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        **options: Any,
    ) -> None:
        """``options`` are PushConsumerConfig fields (consume_thread_max, pull_batch_size, max_reconsume_times,
        consume_timeout, pull_threshold_for_queue, lock_interval, ... every time in seconds) and ClientConfig
        fields (instance_name, rebalance_interval, heartbeat_broker_interval, poll_name_server_interval,
        persist_consumer_offset_interval, ...)."""
        consumer_options = {k: v for k, v in options.items() if k in _CONSUMER_FIELDS}
        client_options = {k: v for k, v in options.items() if k not in _CONSUMER_FIELDS}
        try:
            config = PushConsumerConfig(
                message_model=MessageModel(message_model),
                consume_from_where=ConsumeFromWhere(consume_from_where),
                **consumer_options,
            )
        except ValueError as e:
            raise MQClientException(f"bad push consumer setting: {e}") from None
        self.group = group
        self.client_config = ClientConfig(namesrv_addr=namesrv_addr, **client_options)
        self.config = config
        self.impl: DefaultMQPushConsumerImpl | PopPushConsumerImpl
        if config.client_rebalance:
            self.impl = DefaultMQPushConsumerImpl(
                group, self.client_config, config, allocate_strategy or AllocateMessageQueueAveragely()
            )
        else:
            self.impl = PopPushConsumerImpl(group, self.client_config, config)

    # --- configuration -------------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | None = "*", expression_type: str = EXPRESSION_TYPE_TAG) -> None:
        """``expression``: ``"*"``, tags (``"TagA || TagB"``) or, with ``expression_type="SQL92"``, a SQL92
        condition on message properties. Subscribing again replaces the topic's expression."""
        self.impl.subscribe(topic, expression, expression_type)

    def unsubscribe(self, topic: str) -> None:
        self.impl.unsubscribe(topic)

    def register_message_listener(self, listener: MessageListenerConcurrently) -> None:
        """``listener(msgs, context) -> ConsumeConcurrentlyStatus``, ``async def`` or plain (run on threads)."""
        self.impl.register_message_listener(listener, orderly=False)

    def register_message_listener_orderly(self, listener: MessageListenerOrderly) -> None:
        """``listener(msgs, context) -> ConsumeOrderlyStatus``: each queue's messages in order, one batch at a
        time, and (clustering) each queue consumed by one consumer of the group at a time."""
        self.impl.register_message_listener(listener, orderly=True)

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.impl.start()

    async def shutdown(self) -> None:
        await self.impl.shutdown()

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def suspend(self) -> None:
        """Stop pulling (messages already pulled are still consumed) until ``resume()``."""
        self.impl.pause = True

    def resume(self) -> None:
        self.impl.pause = False
        if self.impl.running and isinstance(self.impl, DefaultMQPushConsumerImpl):
            self.impl.instance.rebalance_immediately()

    # --- state ---------------------------------------------------------------------------------------------

    @property
    def client_id(self) -> str:
        return self.impl.instance.client_id

    @property
    def instance(self) -> MQClientInstance:
        return self.impl.instance

    @property
    def message_model(self) -> MessageModel:
        return self.config.message_model

    def assigned_queues(self) -> list[MessageQueue]:
        """The queues this consumer holds (its share as the last finished rebalance left it), sorted.

        Never half a round: a rebalance in progress may have taken some of its new queues and not yet dropped
        the old ones, and a test that waits for a split must not see that as settled. A consumer that pops
        (``client_rebalance=False``) holds every queue of each broker: (topic, broker, -1) each."""
        if isinstance(self.impl, PopPushConsumerImpl):
            return self.impl.popped_queues()
        return list(self.impl.rebalance_impl.settled_queues)
