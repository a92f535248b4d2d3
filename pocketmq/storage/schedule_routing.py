"""Where a put sends a scheduled message before it is appended (RocketMQ's HookUtils.handleScheduleMessage): a
timer message to the wheel's topic (timer/timer_routing.py), a delay level to SCHEDULE_TOPIC_XXXX queue level - 1,
its real topic and queue kept in REAL_TOPIC / REAL_QID for the schedule service to put it back."""

from __future__ import annotations

from time import time_ns

from pocketmq.common.constants import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.message import MessageExtBrokerInner, delay_time_level
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC as SCHEDULE_TOPIC
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC

from .config import MessageStoreConfig
from .results import PutMessageResult
from .timer.timer_routing import TIMER_TOPIC, route_timer_message

_NOT_COUNTED = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)


def handle_schedule_message(msg: MessageExtBrokerInner, config: MessageStoreConfig,
                            delay_levels: list[int]) -> PutMessageResult | None:
    """Reroutes ``msg`` in place, or answers why it is refused (a timer beyond the wheel's reach).

    Prepared and rolled-back transaction records stay where they are. A half message (and the check's renewed copy
    of it) stays in the half topic too, its delay or timer kept for the committed message, which is delayed then.
    RocketMQ reroutes it: 4.9.7's schedule service then drops it and 5.x's check asks about it for ever, so a
    committed delayed message is never delivered."""
    if msg.sys_flag & TRANSACTION_TYPE_MASK in _NOT_COUNTED or msg.topic == RMQ_SYS_TRANS_HALF_TOPIC:
        return None
    if msg.topic != TIMER_TOPIC:
        refused = route_timer_message(msg, config, time_ns() // 1_000_000)
        if refused is not None:
            return refused
    if PROPERTY_DELAY_TIME_LEVEL in msg.properties:
        route_delay_message(msg, delay_levels)
    return None


def route_delay_message(msg: MessageExtBrokerInner, delay_levels: list[int]) -> None:
    """A message with DELAY > 0 goes to SCHEDULE_TOPIC_XXXX, queue level - 1; its real address is kept."""
    try:
        level = delay_time_level(msg.properties)
    except ValueError:
        return  # (the broker refuses such a message; a direct put stores it undelayed)
    if level <= 0 or msg.sys_flag & TRANSACTION_TYPE_MASK in _NOT_COUNTED or msg.topic == SCHEDULE_TOPIC:
        return  # (already rerouted: a caller retrying the same Message must not nest it twice)
    props = dict(msg.properties)
    if level > len(delay_levels):  # (rewritten only when capped, as 4.9.7: "+1" stays as sent)
        level = len(delay_levels)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
    props[PROPERTY_REAL_TOPIC] = msg.topic
    props[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties = props
    msg.properties_string = None
    msg.topic = SCHEDULE_TOPIC
    msg.queue_id = level - 1
