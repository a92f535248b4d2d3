"""Client bookkeeping: producer and consumer groups, their channels, and channel expiry."""

from .client_channel_info import ClientChannelInfo
from .client_housekeeping_service import ClientHousekeepingService
from .consumer_ids_change_listener import ConsumerGroupEvent, DefaultConsumerIdsChangeListener
from .consumer_manager import ConsumerGroupInfo, ConsumerManager
from .producer_manager import ProducerManager

__all__ = [
    "ClientChannelInfo",
    "ClientHousekeepingService",
    "ConsumerGroupEvent",
    "ConsumerGroupInfo",
    "ConsumerManager",
    "DefaultConsumerIdsChangeListener",
    "ProducerManager",
]
