"""What a consumer group tells the brokers about itself: MessageModel, ConsumeType, ConsumeFromWhere."""

from __future__ import annotations

import enum


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
