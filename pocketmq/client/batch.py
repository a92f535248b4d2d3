"""MessageBatch: several messages of one topic sent as one SEND_BATCH_MESSAGE request (§9.3).

Body = the messages one after another, each in common.record_layout's BATCH_MESSAGE layout, as
common.message_batch encodes them (MessageDecoder.encodeMessage, MAGICCODE and BODYCRC written as 0); the
broker re-encodes each into a commit-log record.
"""

from __future__ import annotations

from collections.abc import Iterable
from time import time_ns

from pocketmq.common.constants import MAX_PROPERTIES_LENGTH
from pocketmq.common.message import asks_for_a_timer, properties_to_string
from pocketmq.common.message_batch import FIXED as _FIXED
from pocketmq.common.message_batch import HEAD as _HEAD
from pocketmq.common.message_batch import PROPERTIES_LENGTH as _SHORT
from pocketmq.common.message_batch import batch_message_parts

from .exceptions import MQClientException
from .message import Message
from .message_const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
)
from .message_id import uniq_id_maker
from .validators import check_body, check_message


class MessageBatch(Message):
    """A Message whose body is the encoded batch; ``messages`` keeps the originals (for their ids)."""

    __slots__ = ("messages",)

    def __init__(self, messages: list[Message], body: bytes | None = None) -> None:
        first = messages[0]
        super().__init__(first.topic, b"", wait_store_msg_ok=first.wait_store_msg_ok)
        self.messages = messages
        self.body = encode_messages(messages) if body is None else body

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
    return batch_message_parts(msg.flag, bytes(msg.body), props)


def generate_from_list(msgs: Iterable[Message], max_message_size: int) -> MessageBatch:
    """Check the batch rules, validate, stamp and encode every message (MessageBatch.generateFromList).

    One pass per message: a batch send spends most of its client time here (32 messages a request).
    """
    messages = list(msgs)
    if not messages:
        raise MQClientException("Failed to initiate the MessageBatch: no messages")
    first = messages[0]
    _check_batchable(first)
    topic = first.topic
    if isinstance(topic, str) and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        raise MQClientException("Retry Group is not supported for batching")
    # Every message has the first one's topic (checked below): validate it once, then each body.
    check_message(first, max_message_size)
    wait = first.properties.get(PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"
    uniq_ids = uniq_id_maker()
    parts: list[bytes] = []
    # A message with no property but WAIT (no tags, keys or user properties) is the common one: its
    # properties are WAIT's pair and the new UNIQ_KEY's, put together without properties_to_string.
    wait_value = "true" if wait else "false"
    wait_pair = f"{PROPERTY_WAIT_STORE_MSG_OK}\x01{wait_value}\x02{PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX}\x01"
    pack_head, pack_short = _HEAD.pack, _SHORT.pack
    for m in messages:
        if type(m) is not Message:
            _check_batchable(m)
        props = m.properties
        if len(props) == 1 and props.get(PROPERTY_WAIT_STORE_MSG_OK) == wait_value and m.topic == topic:
            body = m.body
            if type(body) is not bytes or not 0 < len(body) <= max_message_size:
                check_body(body, max_message_size)
            uid = props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = next(uniq_ids)
            encoded = f"{wait_pair}{uid}\x02".encode()
            # (batch_message_parts inlined: this loop is most of a batch send's client time)
            parts += (pack_head(_FIXED + len(body) + len(encoded), 0, 0, m.flag, len(body)), body,
                      pack_short(len(encoded)), encoded)
            continue
        _check_not_delayed(m)
        if props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
            # A batch is sent without the prepared flag: the message would be stored as an ordinary one.
            raise MQClientException("Transactional messages are not supported for batching")
        if m.topic != topic:
            raise MQClientException("The topic of the messages in one batch should be the same")
        if (props.get(PROPERTY_WAIT_STORE_MSG_OK, "true") != "false") != wait:
            raise MQClientException("The waitStoreMsgOK of the messages in one batch should the same")
        body = m.body
        if type(body) is not bytes or not 0 < len(body) <= max_message_size:
            check_body(body, max_message_size)
        if PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in props:
            props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = next(uniq_ids)
        parts += _message_parts(m)
    return MessageBatch(messages, b"".join(parts))


def _check_not_delayed(m: Message) -> None:
    if PROPERTY_DELAY_TIME_LEVEL in m.properties and m.delay_time_level > 0:
        raise MQClientException("TimeDelayLevel is not supported for batching")
    if asks_for_a_timer(m.properties, time_ns() // 1_000_000):
        # RocketMQ's broker would store it undelayed, its timer ignored; pocketmq's refuses it.
        raise MQClientException("A timer (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS) is not supported "
                                "for batching")


def _check_batchable(m: object) -> None:
    if not isinstance(m, Message) or isinstance(m, MessageBatch):
        raise MQClientException(f"Failed to initiate the MessageBatch: {type(m).__name__} is not a Message")
