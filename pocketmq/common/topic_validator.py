"""RocketMQ's TopicValidator: the system topics, the topics producers may not send to, the remark a bad name gets,
and which names are the broker's own (the one place the rule is written; broker, client, console, CLI and the
Spark layer all ask it)."""

from __future__ import annotations

import re

from .constants import MESSAGE_MAGIC_CODE_V2, TOPIC_MAX_LENGTH
from .mix_all import is_retry_or_dlq_topic, is_retry_topic
from .record_layout import message_magic
from .validators import topic_error

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RMQ_SYS_WHEEL_TIMER = SYSTEM_TOPIC_PREFIX + "wheel_timer"  # RocketMQ 5's timer wheel topic

DLQ_NUMS_PER_GROUP = 1
CHARACTER_MAX_LENGTH = 255  # Validators.CHARACTER_MAX_LENGTH: group names
VALID_PATTERN_STR = "^[%|a-zA-Z0-9_-]+$"
_NAME_RE = re.compile(VALID_PATTERN_STR[1:-1])

SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)


def validate_topic(topic: str) -> str | None:
    """TopicValidator.validateTopic: None when valid, else RocketMQ's remark."""
    reason = topic_error(topic)  # (remembers the names that passed)
    if reason is None:
        return None
    if not topic:
        return "The specified topic is blank."
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN_STR}"


def long_topic_error(topic: str, auto_message_version: bool = True) -> str | None:
    """Why a store refuses ``topic`` of more than 127 UTF-8 bytes, or None (its length is checked against 255
    with the record's shape). RocketMQ 5 takes one only as a retry topic (HookUtils.checkBeforePutMessage), in
    a version 2 record (autoMessageVersionOnTopicLen). A topic of at most 127 characters gets a version 1
    record, whose one-byte TOPICLENGTH RocketMQ reads signed: more bytes than that (not ASCII) are refused."""
    if not is_retry_topic(topic):
        return f"topic name longer than {TOPIC_MAX_LENGTH} bytes (only a retry topic may be)"
    if not auto_message_version:
        return (f"topic name longer than {TOPIC_MAX_LENGTH} bytes, and autoMessageVersionOnTopicLen is false "
                "(a version 1 record cannot hold it)")
    if message_magic(topic) != MESSAGE_MAGIC_CODE_V2:
        return f"topic name of at most {TOPIC_MAX_LENGTH} characters but more bytes"
    return None


def is_valid_name(name: str) -> bool:
    """Whether ``name`` has only the characters topics and groups may have."""
    return _NAME_RE.fullmatch(name) is not None


def is_group_illegal(group: str) -> bool:
    """Group names share the topic character set and may be up to 255 characters long."""
    return not group or len(group) > CHARACTER_MAX_LENGTH or not is_valid_name(group)


def is_system_topic(topic: str) -> bool:
    """A topic the broker and name server make for themselves: TopicValidator's names, the retry and dead-letter
    topics of groups, and anything under the system prefixes (RocketMQ 5's ``rmq_sys_``, older ``RMQ_SYS_``)."""
    return topic in SYSTEM_TOPICS or is_retry_or_dlq_topic(topic) or topic.startswith((SYSTEM_TOPIC_PREFIX, "RMQ_SYS_"))
