"""PopResult, PopStatus: what a pop (RocketMQ 5's POP_MESSAGE) brought (client.consumer.PopResult, PopStatus)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pocketmq.common.message import MessageExt


class PopStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # the poll time ran out
    POLLING_FULL = "POLLING_FULL"  # too many pops parked at the broker: try again later
    POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


@dataclass(slots=True)
class PopResult:
    """RocketMQ's PopResult: what one pop brought."""

    pop_status: PopStatus
    msg_found_list: list[MessageExt] = field(default_factory=list)
    pop_time: int = 0
    invisible_time: int = 0
    rest_num: int = 0
