"""pocketmq's client: an asyncio producer, pull consumer and push consumer speaking RocketMQ's protocol
(see docs/client.md).

Rooms, as in RocketMQ's client module (docs/architecture.md): ``producer/`` and ``consumer/`` (the user API),
``impl/`` (``mq_client_api``: one method per request; ``mq_client_instance``: connections, routes,
heartbeats, the pull and rebalance services shared per client id; ``impl/consumer/``: the push consumer's
machinery, rebalancing, process queues and consume services), ``admin/`` (MQAdminExt) and ``trace/``. The
shared vocabulary (messages, exceptions, config, validators) sits at this root, with ``sync`` (blocking
wrappers). Never imports ``broker`` or ``namesrv``.
"""

from __future__ import annotations

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
