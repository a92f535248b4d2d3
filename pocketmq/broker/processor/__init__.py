"""Request processors, one per RocketMQ processor class."""

from .admin_broker_processor import AdminBrokerProcessor
from .client_manage_processor import ClientManageProcessor
from .consumer_manage_processor import ConsumerManageProcessor
from .pull_message_processor import PullMessageProcessor
from .query_message_processor import QueryMessageProcessor
from .send_message_processor import SendMessageProcessor

__all__ = [
    "AdminBrokerProcessor",
    "ClientManageProcessor",
    "ConsumerManageProcessor",
    "PullMessageProcessor",
    "QueryMessageProcessor",
    "SendMessageProcessor",
]
