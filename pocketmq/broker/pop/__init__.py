"""RocketMQ 5's POP inside the broker: the revive log (checkpoints and acks), queue locks, the revive service and
the groups' pop offsets (pop_offsets.py).
The request processors are in ``processor/`` (pop, ack, change invisible time, peek, notification, polling info)."""

from .pop_buffer_merge_service import PopBufferMergeService
from .pop_revive_service import PopReviveService
from .queue_lock_manager import QueueLockManager
from .revive_log import ReviveLog

__all__ = ["PopBufferMergeService", "PopReviveService", "QueueLockManager", "ReviveLog"]
