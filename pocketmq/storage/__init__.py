"""pocketmq's storage engine: RocketMQ's commit log, consume queues and index files, in Python.

No sockets and no asyncio here: background work runs on threads, as RocketMQ's service threads do.
"""

from .codec import decode, decode_all, decode_message_id, encode, iter_records
from .config import FlushDiskType, MessageStoreConfig
from .message import (
    Message,
    MessageExt,
    create_message_id,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)
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
from .validators import InvalidTopicError, check_topic, topic_error

__all__ = [
    "DefaultMessageStore", "FlushDiskType", "GetMessageResult", "GetMessageStatus", "InvalidTopicError",
    "Message", "MessageExt", "MessageFilter", "MessageStoreConfig", "PutMessageResult", "PutMessageStatus",
    "QueryMessageResult", "StoreLockedError", "TagsFilter", "check_topic", "create_message_id", "decode",
    "decode_all", "decode_message_id", "encode", "iter_records", "pack_host", "properties_to_string",
    "string_to_properties", "topic_error", "unpack_host",
]
