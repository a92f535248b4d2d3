"""pocketmq's storage engine: RocketMQ's commit log, consume queues and index files, in Python.

No sockets and no asyncio here: background work runs on threads, as RocketMQ's service threads do. The
message model and the record codec it stores are in `pocketmq.common`.
"""

from .config import FlushDiskType, MessageStoreConfig
from .message_filter import MessageFilter, TagsFilter
from .message_store import DefaultMessageStore
from .results import (
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from .store_lock import StoreLockedError

__all__ = [
    "DefaultMessageStore", "FlushDiskType", "GetMessageResult", "GetMessageStatus", "MessageFilter",
    "MessageStoreConfig", "PutMessageResult", "PutMessageStatus", "QueryMessageResult", "StoreLockedError",
    "TagsFilter",
]
