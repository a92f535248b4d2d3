"""What the messages of a batch may not carry (CommitLog.put_messages): RocketMQ's batch put reads neither a
message's DELAY nor its timer properties, and stores the messages undelayed. pocketmq refuses a batch that asks
for a delay rather than drop what was asked for silently. A DELAY of 0 or less asks for none (as
Message.getDelayTimeLevel() > 0 reads it, in the clients' batch checks and the broker's), nor does a timer due
now or earlier (a single message with it is stored as an ordinary one)."""

from __future__ import annotations

from time import time_ns

from pocketmq.common.constants import PROPERTY_DELAY_TIME_LEVEL
from pocketmq.common.message import (
    TIMER_PROPERTIES,
    asks_for_a_timer,
    delay_time_level,
    raw_property,
    string_to_properties,
)

_DELAY = b"DELAY\x01"
TIMER_REFUSAL = "a batch cannot carry a timer (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)"
_TIMERS = tuple(key.encode() + b"\x01" for key in TIMER_PROPERTIES)


def batch_refusal(props: list[bytes]) -> str | None:
    """Why a batch whose messages have these encoded properties cannot be stored, or None."""
    joined = b"".join(props)
    # (A name found across two properties costs a look at each.)
    if _DELAY in joined:
        for p in props:
            value = raw_property(p, _DELAY)
            if value is not None and _asks_for_a_level(value):
                return "a batch cannot carry a delay level"
    if any(key in joined for key in _TIMERS):
        now_ms = time_ns() // 1_000_000
        for p in props:
            if any(key in p for key in _TIMERS) and asks_for_a_timer(_decoded(p), now_ms):
                return TIMER_REFUSAL
    return None


def _decoded(props: bytes) -> dict[str, str]:
    return string_to_properties(props.decode(errors="replace"))


def _asks_for_a_level(value: bytes) -> bool:
    try:
        return delay_time_level({PROPERTY_DELAY_TIME_LEVEL: value.decode(errors="replace")}) > 0
    except ValueError:
        return True  # (no level a put can read: a single message with it is refused too)
