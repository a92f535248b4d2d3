"""pocketmq's client: an asyncio producer, pull consumer and push consumer speaking RocketMQ's protocol
(see docs/client.md).

Layers, bottom up: ``mq_client_api`` (one method per request), ``mq_client_instance`` (connections, routes,
heartbeats, the pull and rebalance services shared per client id), ``producer`` / ``pull_consumer`` /
``lite_pull_consumer`` / ``push_consumer`` (the user API; the push consumer's machinery is
``push_consumer_impl``, ``rebalance_impl``,
``pull_message_service``, ``process_queue`` and ``consume_message_*_service``), ``sync`` (blocking
wrappers). Never imports ``broker`` or ``namesrv``.
"""

from __future__ import annotations

from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue

from .allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueStrategy,
)
from .batch import MessageBatch
from .consumer_enums import ConsumeFromWhere, MessageModel
from .exceptions import (
    ClientErrorCode,
    MQBrokerException,
    MQClientException,
    NameServerAddressError,
    RemotingException,
    RequestTimeoutException,
)
from .lite_pull_consumer import LitePullConsumer
from .message import Message, PullResult, PullStatus, SendResult, SendStatus
from .message_listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from .message_util import MessageUtil, create_reply_message
from .producer import Producer, SendCallback
from .pull_consumer import PullConsumer
from .push_consumer import PushConsumer
from .request_future_holder import RequestCallback
from .selector import MessageQueueSelector, select_message_queue_by_hash, select_message_queue_by_random
from .sync import SyncProducer, SyncPullConsumer, SyncPushConsumer
from .sync_transaction_producer import SyncTransactionProducer
from .transaction_producer import (
    LocalTransactionState,
    TransactionListener,
    TransactionMQProducer,
    TransactionProducer,
    TransactionSendResult,
)

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
    "SyncProducer",
    "SyncPullConsumer",
    "SyncPushConsumer",
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
