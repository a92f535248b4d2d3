"""What both sides of the wire need, as RocketMQ's `common` module has it.

The message model (`MessageExtBrokerInner`, what the store takes in, and `MessageExt`), the commit-log record
codec, RocketMQ's constants (MessageConst, MixAll, TopicValidator, PullSysFlag), FilterAPI's rule, the batch codec,
Java's `String.hashCode` and the SQL92 filter compiler. The storage engine, the broker and the client all build on
this package; it imports none of them, nor asyncio or sockets.
"""

from .codec import decode, decode_all, decode_message_id, encode, iter_records
from .message import (
    MessageExt,
    MessageExtBrokerInner,
    create_message_id,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)
from .validators import InvalidTopicError, check_topic, topic_error

__all__ = [
    "InvalidTopicError", "MessageExt", "MessageExtBrokerInner", "check_topic", "create_message_id", "decode",
    "decode_all",
    "decode_message_id", "encode", "iter_records", "pack_host", "properties_to_string", "string_to_properties",
    "topic_error", "unpack_host",
]
