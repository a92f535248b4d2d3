"""pocketmq's client: an asyncio producer and pull consumer speaking RocketMQ's protocol (see docs/client.md).

Layers, bottom up: ``mq_client_api`` (one method per request), ``mq_client_instance`` (connections, routes,
heartbeats shared per client id), ``producer`` / ``pull_consumer`` (the user API), ``sync`` (blocking
wrappers). Never imports ``broker`` or ``namesrv``.
"""

from __future__ import annotations

from remoting.client_body import MessageQueue
from storage.message import MessageExt

from .batch import MessageBatch
from .exceptions import ClientErrorCode, MQBrokerException, MQClientException, RemotingException
from .message import Message, PullResult, PullStatus, SendResult, SendStatus
from .producer import Producer, SendCallback
from .pull_consumer import PullConsumer
from .selector import MessageQueueSelector, select_message_queue_by_hash, select_message_queue_by_random
from .sync import SyncProducer, SyncPullConsumer

__all__ = [
    "ClientErrorCode",
    "MQBrokerException",
    "MQClientException",
    "Message",
    "MessageBatch",
    "MessageExt",
    "MessageQueue",
    "MessageQueueSelector",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "RemotingException",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "SyncProducer",
    "SyncPullConsumer",
    "select_message_queue_by_hash",
    "select_message_queue_by_random",
]
