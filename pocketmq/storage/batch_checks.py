"""What the messages of a batch may not carry (CommitLog.put_messages): RocketMQ's batch put reads neither a
message's DELAY nor its timer properties, and stores the messages undelayed. pocketmq refuses a batch that asks
for a delay rather than drop what was asked for silently; a DELAY of 0 or less asks for none (as
Message.getDelayTimeLevel() > 0 reads it, in the clients' batch checks and the broker's)."""

from __future__ import annotations

from pocketmq.common.constants import PROPERTY_DELAY_TIME_LEVEL
from pocketmq.common.message import delay_time_level, raw_property

_DELAY = b"DELAY\x01"


def batch_refusal(props: list[bytes]) -> str | None:
    """Why a batch whose messages have these encoded properties cannot be stored, or None."""
    # (A DELAY\x01 found across two properties costs a look at each.)
    if _DELAY in b"".join(props):
        for p in props:
            value = raw_property(p, _DELAY)
            if value is not None and _asks_for_a_level(value):
                return "a batch cannot carry a delay level"
    return None


def _asks_for_a_level(value: bytes) -> bool:
    try:
        return delay_time_level({PROPERTY_DELAY_TIME_LEVEL: value.decode(errors="replace")}) > 0
    except ValueError:
        return True  # (no level a put can read: a single message with it is refused too)
