"""Validators (RocketMQ's client Validators and TopicValidator): names and messages, before any I/O."""

from __future__ import annotations

import re

from pocketmq.common.constants import TOPIC_MAX_LENGTH
from pocketmq.common.validators import topic_error
from pocketmq.remoting.codes import ResponseCode

from .exceptions import MQClientException

VALID_PATTERN_STR = "^[%|a-zA-Z0-9_-]+$"
_VALID = re.compile(r"[%|a-zA-Z0-9_-]+")
CHARACTER_MAX_LENGTH = 255  # groups
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"

# TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


def check_topic(topic: object) -> None:
    if topic_error(topic) is None:  # the same rule as the broker's (cached there); the messages below are the client's
        return
    if not isinstance(topic, str) or not topic.strip():
        raise MQClientException("The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MQClientException(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _VALID.fullmatch(topic):
        raise MQClientException(
            f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )


def check_group(group: object) -> None:
    if not isinstance(group, str) or not group.strip():
        raise MQClientException("the specified group is blank")
    if len(group) > CHARACTER_MAX_LENGTH:
        raise MQClientException(f"the specified group is longer than group max length {CHARACTER_MAX_LENGTH}.")
    if not _VALID.fullmatch(group):
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
