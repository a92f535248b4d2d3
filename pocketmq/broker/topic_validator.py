"""TopicValidator / MixAll names: system topics, topics producers may not send to, retry and DLQ names."""

from __future__ import annotations

import re

from pocketmq.common.pop_ack_constants import CID_RMQ_SYS_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.pop_ack_constants import SYSTEM_TOPIC_PREFIX as SYSTEM_TOPIC_PREFIX
from pocketmq.common.validators import topic_error
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC as RMQ_SYS_WHEEL_TIMER  # noqa: F401 (a name of here)

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"

DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
DLQ_NUMS_PER_GROUP = 1
CHARACTER_MAX_LENGTH = 255  # Validators.CHARACTER_MAX_LENGTH: group names
_NAME_RE = re.compile(r"[%|a-zA-Z0-9_-]+")

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
    if len(topic) > 127:
        return "The specified topic is longer than topic max length."
    return f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"


def is_group_illegal(group: str) -> bool:
    """Group names share the topic character set and may be up to 255 characters long."""
    return not group or len(group) > CHARACTER_MAX_LENGTH or _NAME_RE.fullmatch(group) is None


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)
