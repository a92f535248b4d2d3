"""RocketMQ 5's topic attributes (common.TopicAttributes) and message types (common.attribute.TopicMessageType).

A topic's ``message.type`` says which messages it takes; a message's type follows from its properties
(``TopicMessageType.parseFromMessageProperty``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from .attribute import Attribute, EnumAttribute, LongRangeAttribute
from .constants import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_LITE_TOPIC,
    PROPERTY_PRIORITY,
    PROPERTY_SHARDING_KEY,
    PROPERTY_START_DELIVER_TIME,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TRANSACTION_PREPARED,
)
from .java_numbers import INT_MAX, INT_MIN, LONG_MAX
from .java_text import parse_integer


class TopicMessageType(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    PRIORITY = "PRIORITY"
    LITE = "LITE"
    MIXED = "MIXED"


QUEUE_TYPE_ATTRIBUTE = EnumAttribute("queue.type", False, frozenset({"BatchCQ", "SimpleCQ"}), "SimpleCQ")
CLEANUP_POLICY_ATTRIBUTE = EnumAttribute("cleanup.policy", False, frozenset({"DELETE", "COMPACTION"}), "DELETE")
TOPIC_MESSAGE_TYPE_ATTRIBUTE = EnumAttribute(
    "message.type", True, frozenset(t.value for t in TopicMessageType), TopicMessageType.NORMAL.value
)
TOPIC_RESERVE_TIME_ATTRIBUTE = LongRangeAttribute("reserve.time", True, -1, LONG_MAX, -1)

ALL: dict[str, Attribute] = {
    a.name: a
    for a in (
        QUEUE_TYPE_ATTRIBUTE, CLEANUP_POLICY_ATTRIBUTE, TOPIC_MESSAGE_TYPE_ATTRIBUTE, TOPIC_RESERVE_TIME_ATTRIBUTE
    )
}

_DELAY_PROPERTIES = (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_START_DELIVER_TIME,
)


# TopicMessageType.getMetricsValue(): the message_type label of RocketMQ 5's metrics.
METRICS_NORMAL, METRICS_FIFO, METRICS_DELAY, METRICS_TRANSACTION = "normal", "fifo", "delay", "transaction"
METRICS_MESSAGE_TYPES = (METRICS_NORMAL, METRICS_FIFO, METRICS_DELAY, METRICS_TRANSACTION)
_TYPED = frozenset({PROPERTY_TRANSACTION_PREPARED, PROPERTY_SHARDING_KEY, *_DELAY_PROPERTIES})


def metrics_message_type(properties: Mapping[str, str]) -> str:
    """BrokerMetricsManager.getMessageType: a message's type as RocketMQ 5's metrics label it, which looks for a
    sharding key before the delay properties (``message_type_of`` below, the proxy's rule, the other way round)."""
    if properties.keys().isdisjoint(_TYPED):  # a normal message: one call on the send path
        return METRICS_NORMAL
    if properties.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        return METRICS_TRANSACTION
    if PROPERTY_SHARDING_KEY in properties:
        return METRICS_FIFO
    if any(key in properties for key in _DELAY_PROPERTIES):
        return METRICS_DELAY
    return METRICS_NORMAL


def topic_message_type(attributes: Mapping[str, str] | None) -> TopicMessageType:
    """A topic's type (TopicConfig.getTopicMessageType): NORMAL when it has none."""
    value = (attributes or {}).get(TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
    try:
        return TopicMessageType(value) if value else TopicMessageType.NORMAL
    except ValueError:
        return TopicMessageType.NORMAL


def message_type_of(properties: Mapping[str, str]) -> TopicMessageType:
    """A message's type from its properties (TopicMessageType.parseFromMessageProperty; ``__STARTDELIVERTIME``
    counts as a delay as BrokerMetricsManager.getMessageType has it)."""
    if properties.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return TopicMessageType.TRANSACTION
    if any(properties.get(key) is not None for key in _DELAY_PROPERTIES):
        return TopicMessageType.DELAY
    if properties.get(PROPERTY_SHARDING_KEY) is not None:
        return TopicMessageType.FIFO
    if properties.get(PROPERTY_PRIORITY) is not None:
        return TopicMessageType.PRIORITY
    if properties.get(PROPERTY_LITE_TOPIC) is not None:
        return TopicMessageType.LITE
    return TopicMessageType.NORMAL


def message_priority(properties: Mapping[str, str]) -> int:
    """Message.getPriority: the priority property as NumberUtils.toInt reads it, -1 when absent or not an int."""
    value = properties.get(PROPERTY_PRIORITY)
    if value is None:
        return -1
    try:
        return parse_integer(value, INT_MIN, INT_MAX)
    except ValueError:
        return -1


def type_conflict(expected: TopicMessageType, actual: TopicMessageType) -> str | None:
    """Why a message of type ``actual`` does not fit a topic of type ``expected`` (the proxy's
    DefaultTopicMessageTypeValidator), or None."""
    if actual is TopicMessageType.UNSPECIFIED or (actual is not expected and expected is not TopicMessageType.MIXED):
        return (f"TopicMessageType validate failed, the expected type is {expected.value}, "
                f"but actual type is {actual.value}")
    return None
