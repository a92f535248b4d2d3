"""Where a put sends a timer message (RocketMQ 5's HookUtils.checkIfTimerMessage / transformTimerMessage).

A message with TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS (or ``__STARTDELIVERTIME``, pocketmq's
addition) due later than now is stored in rmq_sys_wheel_timer queue 0 instead, its real topic and queue kept in
REAL_TOPIC / REAL_QID and the wheel slot it goes to in TIMER_OUT_MS: the last slot that starts before its
delivery time, so that it is delivered no earlier than that time and within one precision after it. One due now
or earlier is an ordinary message. A delay level wins over a timer: the timer properties are dropped.
"""

from __future__ import annotations

from pocketmq.common.constants import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_START_DELIVER_TIME,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
)
from pocketmq.common.message import MessageExtBrokerInner, delay_time_level
from pocketmq.common.message import timer_deliver_ms as deliver_ms
from pocketmq.common.topic_validator import RMQ_SYS_WHEEL_TIMER

from ..config import MessageStoreConfig
from ..results import PutMessageResult, PutMessageStatus

TIMER_TOPIC = RMQ_SYS_WHEEL_TIMER
_TIMER_KEYS = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS)
# Any of these makes a put look closer (CommitLog.put_message): delay levels and timers.
ROUTED_KEYS = frozenset((PROPERTY_DELAY_TIME_LEVEL, *_TIMER_KEYS, PROPERTY_START_DELIVER_TIME))


def delay_level(props: dict[str, str]) -> int:
    """The message's delay level, 0 for a DELAY that is no int (the broker refuses those before they get here)."""
    try:
        return delay_time_level(props)
    except ValueError:
        return 0


def is_timer_message(msg: MessageExtBrokerInner) -> bool:
    """checkIfTimerMessage (which also drops the timer properties of a message with a delay level)."""
    props = msg.properties
    if delay_level(props) > 0:
        if any(key in props for key in _TIMER_KEYS):
            msg.properties = {k: v for k, v in props.items() if k not in _TIMER_KEYS}
            msg.properties_string = None
        return False
    return msg.topic != TIMER_TOPIC and asks_for_the_wheel(props)


def asks_for_the_wheel(props: dict[str, str]) -> bool:
    """Timer properties that a put reads: none once routed (a rolled message going round again, or one
    delivered, has TIMER_OUT_MS), none under a delay level."""
    if PROPERTY_TIMER_OUT_MS in props or delay_level(props) > 0:
        return False
    return any(key in props for key in _TIMER_KEYS) or PROPERTY_START_DELIVER_TIME in props


def timer_slot(props: dict[str, str], config: MessageStoreConfig, now_ms: int) -> PutMessageResult | int | None:
    """For properties that ask for the wheel: why the put is refused, the slot the message is parked in, or None
    when it is due already (an ordinary message)."""
    if not config.timer_wheel_enable:
        return PutMessageResult(PutMessageStatus.WHEEL_TIMER_NOT_ENABLE)
    try:
        deliver = deliver_ms(props, now_ms)
    except ValueError:
        return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)  # (not a number)
    if deliver <= now_ms:
        if PROPERTY_TIMER_DEL_UNIQKEY in props:
            return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)  # (a deletion in the past)
        return None
    if deliver - now_ms > config.timer_max_delay_sec * 1000:
        return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)  # (too far ahead)
    return slot_time(deliver, config.timer_precision_ms)


def slot_time(deliver: int, precision_ms: int) -> int:
    """The wheel slot a message due at ``deliver`` goes to (an exact multiple goes one slot earlier)."""
    if deliver % precision_ms == 0:
        return deliver - precision_ms
    return deliver // precision_ms * precision_ms


def route_timer_message(msg: MessageExtBrokerInner, config: MessageStoreConfig, now_ms: int) -> PutMessageResult | None:
    """Reroute a timer message to the wheel's topic (in place); a refusal, or None. A refusal carries no remark:
    the broker answers with RocketMQ's own text for each status."""
    if not is_timer_message(msg):
        return None
    slot = timer_slot(msg.properties, config, now_ms)
    if slot is None or isinstance(slot, PutMessageResult):
        return slot
    props = dict(msg.properties)
    props[PROPERTY_TIMER_OUT_MS] = str(slot)
    props[PROPERTY_REAL_TOPIC] = msg.topic
    props[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties = props
    msg.properties_string = None
    msg.topic = TIMER_TOPIC
    msg.queue_id = 0
    return None
