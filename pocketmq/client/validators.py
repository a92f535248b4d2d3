"""Validators (RocketMQ's client Validators and TopicValidator): names and messages, before any I/O."""

from __future__ import annotations

from pocketmq.common.constants import TOPIC_MAX_LENGTH
from pocketmq.common.topic_validator import (
    CHARACTER_MAX_LENGTH,
    NOT_ALLOWED_SEND_TOPICS,
    VALID_PATTERN_STR,
    is_valid_name,
)
from pocketmq.common.validators import topic_error
from pocketmq.remoting.codes import ResponseCode

from .exceptions import MQClientException


def check_topic(topic: object) -> None:
    if topic_error(topic) is None:  # the same rule as the broker's (cached there); the messages below are the client's
        return
    if not isinstance(topic, str) or not topic.strip():
        raise MQClientException("The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MQClientException(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not is_valid_name(topic):
        raise MQClientException(
            f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )


def check_group(group: object) -> None:
    if not isinstance(group, str) or not group.strip():
        raise MQClientException("the specified group is blank")
    if len(group) > CHARACTER_MAX_LENGTH:
        raise MQClientException(f"the specified group is longer than group max length {CHARACTER_MAX_LENGTH}.")
    if not is_valid_name(group):
        raise MQClientException(
            f"the specified group[{group}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )


def check_message(msg: object, max_message_size: int) -> None:
    """Validators.checkMessage: topic valid and sendable, body present, non-empty and within the limit."""
    if msg is None:
        raise MQClientException("the message is null", response_code=ResponseCode.MESSAGE_ILLEGAL)
    topic = getattr(msg, "topic", None)
    check_topic(topic)
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientException(
            f"Sending message to topic[{topic}] is forbidden.", response_code=ResponseCode.NO_PERMISSION
        )
    check_body(getattr(msg, "body", None), max_message_size)


def check_body(body: object, max_message_size: int) -> None:
    """The body half of check_message."""
    if body is None:
        raise MQClientException("the message body is null", response_code=ResponseCode.MESSAGE_ILLEGAL)
    if not isinstance(body, bytes | bytearray | memoryview):
        raise MQClientException(
            f"the message body must be bytes, not {type(body).__name__}", response_code=ResponseCode.MESSAGE_ILLEGAL
        )
    if len(body) == 0:
        raise MQClientException("the message body length is zero", response_code=ResponseCode.MESSAGE_ILLEGAL)
    if len(body) > max_message_size:
        raise MQClientException(
            f"the message body size over max value, MAX: {max_message_size}",
            response_code=ResponseCode.MESSAGE_ILLEGAL,
        )
