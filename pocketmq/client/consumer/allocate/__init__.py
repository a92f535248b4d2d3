"""Queue allocation strategies of the push consumer's rebalance (RocketMQ's client/consumer/rebalance)."""

from .averagely import AllocateMessageQueueAveragely
from .averagely_by_circle import AllocateMessageQueueAveragelyByCircle
from .by_config import AllocateMessageQueueByConfig
from .by_machine_room import AllocateMessageQueueByMachineRoom
from .consistent_hash import AllocateMessageQueueConsistentHash, ConsistentHashRouter
from .machine_room_nearby import AllocateMachineRoomNearby, MachineRoomResolver
from .strategy import AllocateMessageQueueStrategy, check_allocate_args

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "ConsistentHashRouter",
    "MachineRoomResolver",
    "check_allocate_args",
]
