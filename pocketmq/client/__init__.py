"""pocketmq's client: an asyncio producer, pull consumer and push consumer speaking RocketMQ's protocol
(see docs/client.md).

Rooms, as in RocketMQ's client module (docs/architecture.md): ``producer/`` and ``consumer/`` (the user API),
``impl/`` (``mq_client_api``: one method per request; ``mq_client_instance``: connections, routes,
heartbeats, the pull and rebalance services shared per client id; ``impl/consumer/``: the push consumer's
machinery, rebalancing, process queues and consume services), ``admin/`` (MQAdminExt) and ``trace/``. The
shared vocabulary (messages, exceptions, config, validators) sits at this root, with ``sync`` (blocking
wrappers). Never imports ``broker`` or ``namesrv``.

The names below are loaded on first use (PEP 562): a process that needs one room (the gRPC endpoint needs
``impl/mq_client_api`` and the consumer's ``pop_result``) does not load the rest, and ``from pocketmq.client
import Producer`` loads the producer's modules only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pocketmq.common.message import MessageExt
    from pocketmq.remoting.client_body import MessageQueue

    from .batch import MessageBatch
    from .consumer.allocate import (
        AllocateMessageQueueAveragely,
        AllocateMessageQueueAveragelyByCircle,
        AllocateMessageQueueStrategy,
    )
    from .consumer.consumer_enums import ConsumeFromWhere, MessageModel
    from .consumer.lite_pull_consumer import LitePullConsumer
    from .consumer.message_listener import (
        ConsumeConcurrentlyContext,
        ConsumeConcurrentlyStatus,
        ConsumeOrderlyContext,
        ConsumeOrderlyStatus,
    )
    from .consumer.pop_result import PopResult, PopStatus
    from .consumer.pull_consumer import PullConsumer
    from .consumer.push_consumer import PushConsumer
    from .consumer.simple_consumer import SimpleConsumer
    from .exceptions import (
        ClientErrorCode,
        MQBrokerException,
        MQClientException,
        NameServerAddressError,
        NameServerProtocolError,
        RemotingException,
        RequestTimeoutException,
    )
    from .message import Message, PullResult, PullStatus, SendResult, SendStatus
    from .message_util import MessageUtil, create_reply_message
    from .producer.producer import Producer, SendCallback
    from .producer.request_future_holder import RequestCallback
    from .producer.selector import MessageQueueSelector, select_message_queue_by_hash, select_message_queue_by_random
    from .producer.transaction_producer import (
        LocalTransactionState,
        TransactionListener,
        TransactionMQProducer,
        TransactionProducer,
        TransactionSendResult,
    )
    from .sync import SyncProducer, SyncPullConsumer, SyncPushConsumer, SyncSimpleConsumer
    from .sync_transaction_producer import SyncTransactionProducer

__all__ = [
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueStrategy",
    "ClientErrorCode",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "MQBrokerException",
    "LitePullConsumer",
    "MQClientException",
    "Message",
    "MessageBatch",
    "MessageExt",
    "MessageQueue",
    "MessageModel",
    "MessageQueueSelector",
    "MessageUtil",
    "NameServerAddressError",
    "NameServerProtocolError",
    "PopResult",
    "PopStatus",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "RemotingException",
    "RequestCallback",
    "RequestTimeoutException",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "SyncProducer",
    "SyncPullConsumer",
    "SyncPushConsumer",
    "SyncSimpleConsumer",
    "create_reply_message",
    "SyncTransactionProducer",
    "LocalTransactionState",
    "TransactionListener",
    "TransactionMQProducer",
    "TransactionProducer",
    "TransactionSendResult",
    "select_message_queue_by_hash",
    "select_message_queue_by_random",
]

_MODULES = {
    "AllocateMessageQueueAveragely": ".consumer.allocate",
    "AllocateMessageQueueAveragelyByCircle": ".consumer.allocate",
    "AllocateMessageQueueStrategy": ".consumer.allocate",
    "ClientErrorCode": ".exceptions",
    "ConsumeConcurrentlyContext": ".consumer.message_listener",
    "ConsumeConcurrentlyStatus": ".consumer.message_listener",
    "ConsumeFromWhere": ".consumer.consumer_enums",
    "ConsumeOrderlyContext": ".consumer.message_listener",
    "ConsumeOrderlyStatus": ".consumer.message_listener",
    "MQBrokerException": ".exceptions",
    "LitePullConsumer": ".consumer.lite_pull_consumer",
    "MQClientException": ".exceptions",
    "Message": ".message",
    "MessageBatch": ".batch",
    "MessageExt": "pocketmq.common.message",
    "MessageQueue": "pocketmq.remoting.client_body",
    "MessageModel": ".consumer.consumer_enums",
    "MessageQueueSelector": ".producer.selector",
    "MessageUtil": ".message_util",
    "NameServerAddressError": ".exceptions",
    "NameServerProtocolError": ".exceptions",
    "PopResult": ".consumer.pop_result",
    "PopStatus": ".consumer.pop_result",
    "Producer": ".producer.producer",
    "PullConsumer": ".consumer.pull_consumer",
    "PullResult": ".message",
    "PullStatus": ".message",
    "PushConsumer": ".consumer.push_consumer",
    "RemotingException": ".exceptions",
    "RequestCallback": ".producer.request_future_holder",
    "RequestTimeoutException": ".exceptions",
    "SendCallback": ".producer.producer",
    "SendResult": ".message",
    "SendStatus": ".message",
    "SimpleConsumer": ".consumer.simple_consumer",
    "SyncProducer": ".sync",
    "SyncPullConsumer": ".sync",
    "SyncPushConsumer": ".sync",
    "SyncSimpleConsumer": ".sync",
    "create_reply_message": ".message_util",
    "SyncTransactionProducer": ".sync_transaction_producer",
    "LocalTransactionState": ".producer.transaction_producer",
    "TransactionListener": ".producer.transaction_producer",
    "TransactionMQProducer": ".producer.transaction_producer",
    "TransactionProducer": ".producer.transaction_producer",
    "TransactionSendResult": ".producer.transaction_producer",
    "select_message_queue_by_hash": ".producer.selector",
    "select_message_queue_by_random": ".producer.selector",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
