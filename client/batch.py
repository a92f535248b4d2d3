"""MessageBatch: several messages of one topic sent as one SEND_BATCH_MESSAGE request (§9.3).

Body = the messages one after another, each as
``TOTALSIZE i | MAGICCODE i (0) | BODYCRC i (0) | FLAG i | BODY len i + bytes | PROPERTIES len h + bytes``
(MessageDecoder.encodeMessage); the broker re-encodes each into a commit-log record.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from storage.constants import MAX_PROPERTIES_LENGTH
from storage.message import properties_to_string

from .exceptions import MQClientException
from .message import Message
from .message_const import RETRY_GROUP_TOPIC_PREFIX
from .message_id import set_uniq_id
from .validators import check_body, check_message

_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY length
_SHORT = struct.Struct(">h")
_FIXED = _HEAD.size + _SHORT.size


class MessageBatch(Message):
    """A Message whose body is the encoded batch; ``messages`` keeps the originals (for their ids)."""

    __slots__ = ("messages",)

    def __init__(self, messages: list[Message]) -> None:
        first = messages[0]
        super().__init__(first.topic, b"", wait_store_msg_ok=first.wait_store_msg_ok)
        self.messages = messages
        self.body = encode_messages(messages)

    def uniq_ids(self) -> str:
        return ",".join(m.uniq_key or "" for m in self.messages)


def encode_message(msg: Message) -> bytes:
    return b"".join(_message_parts(msg))


def encode_messages(msgs: Iterable[Message]) -> bytes:
    parts: list[bytes] = []
    for m in msgs:
        parts += _message_parts(m)
    return b"".join(parts)  # one copy of every body, not two


def _message_parts(msg: Message) -> tuple[bytes, bytes, bytes, bytes]:
    props = properties_to_string(msg.properties).encode()
    if len(props) > MAX_PROPERTIES_LENGTH:
        raise MQClientException(f"the properties of a batched message exceed {MAX_PROPERTIES_LENGTH} bytes")
    body = bytes(msg.body)
    size = _FIXED + len(body) + len(props)
    return _HEAD.pack(size, 0, 0, msg.flag, len(body)), body, _SHORT.pack(len(props)), props


def generate_from_list(msgs: Iterable[Message], max_message_size: int) -> MessageBatch:
    """Check the batch rules, validate and stamp every message, and encode (MessageBatch.generateFromList)."""
    messages = list(msgs)
    if not messages:
        raise MQClientException("Failed to initiate the MessageBatch: no messages")
    first = messages[0]
    for m in messages:
        if not isinstance(m, Message) or isinstance(m, MessageBatch):
            raise MQClientException(f"Failed to initiate the MessageBatch: {type(m).__name__} is not a Message")
        if m.delay_time_level > 0:
            raise MQClientException("TimeDelayLevel is not supported for batching")
        if isinstance(m.topic, str) and m.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise MQClientException("Retry Group is not supported for batching")
        if m.topic != first.topic:
            raise MQClientException("The topic of the messages in one batch should be the same")
        if m.wait_store_msg_ok != first.wait_store_msg_ok:
            raise MQClientException("The waitStoreMsgOK of the messages in one batch should the same")
    # Every message has the first one's topic (checked above): validate it once, then each body.
    check_message(first, max_message_size)
    for m in messages:
        check_body(m.body, max_message_size)
        set_uniq_id(m)
    return MessageBatch(messages)
