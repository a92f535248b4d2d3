"""What a consumer group tells the brokers about itself: MessageModel, ConsumeType, ConsumeFromWhere, and
CONSUME_FROM_TIMESTAMP's start as both consumer configs hold it."""

from __future__ import annotations

import enum
import time

_TIMESTAMP_FORMAT = "%Y%m%d%H%M%S"  # RocketMQ's yyyyMMddHHmmss, local time


class MessageModel(enum.StrEnum):
    """CLUSTERING: each message goes to one consumer of the group; BROADCASTING: to every consumer."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeType(enum.StrEnum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull consumer
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push consumer


class ConsumeFromWhere(enum.StrEnum):
    """Where a queue starts when the group has no stored offset for it (a stored offset always wins)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


def half_an_hour_ago() -> str:
    """The default consumeTimestamp of RocketMQ's consumers."""
    return time.strftime(_TIMESTAMP_FORMAT, time.localtime(time.time() - 30 * 60))


def check_consume_timestamp(timestamp: str) -> None:
    try:
        time.strptime(timestamp, _TIMESTAMP_FORMAT)
    except ValueError:
        raise ValueError(f"consume_timestamp {timestamp!r} is not yyyyMMddHHmmss") from None


def consume_timestamp_ms(timestamp: str) -> int:
    """A yyyyMMddHHmmss local time as epoch milliseconds."""
    return int(time.mktime(time.strptime(timestamp, _TIMESTAMP_FORMAT)) * 1000)
