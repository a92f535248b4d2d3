"""What both sides of the wire need, as RocketMQ's `common` module has it.

The message model (`Message`, `MessageExt`), the commit-log record codec, RocketMQ's constants, the topic
validators, Java's `String.hashCode` and the SQL92 filter compiler. The storage engine, the broker and the
client all build on this package; it imports none of them, nor asyncio or sockets.
"""

from .codec import decode, decode_all, decode_message_id, encode, iter_records
from .message import (
    Message,
    MessageExt,
    create_message_id,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)
from .validators import InvalidTopicError, check_topic, topic_error

__all__ = [
    "InvalidTopicError", "Message", "MessageExt", "check_topic", "create_message_id", "decode", "decode_all",
    "decode_message_id", "encode", "iter_records", "pack_host", "properties_to_string", "string_to_properties",
    "topic_error", "unpack_host",
]
