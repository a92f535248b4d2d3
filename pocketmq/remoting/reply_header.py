"""ReplyMessageRequestHeader: what a broker sends with PUSH_REPLY_MESSAGE_TO_CLIENT (326), the reply's send
header plus where and when it was taken in."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader


@dataclass(slots=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326)."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    born_host: str  # the replying client, "ip:port"
    store_host: str  # the broker, "ip:port"
    store_timestamp: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = False
