"""Headers of RocketMQ 5's POP requests (remoting.protocol.header.PopMessageRequestHeader and its siblings),
with RocketMQ's field names: they travel in both codecs like every other header (``header.CommandHeader``).

Times are milliseconds; ``queue_id`` -1 means every queue of the topic.
"""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader


@dataclass(slots=True)
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050)."""

    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    invisible_time: int
    poll_time: int  # how long the broker may hold the request when nothing is there (0: answer at once)
    born_time: int  # when the client sent it
    init_mode: int  # ConsumeInitMode: 0 MIN, 1 MAX
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = False
    attempt_id: str | None = None


@dataclass(slots=True)
class PopMessageResponseHeader(CommandHeader):
    """POP_MESSAGE (200050)'s and PEEK_MESSAGE (200052)'s answer."""

    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(slots=True)
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051)."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int


@dataclass(slots=True)
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053)."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    invisible_time: int


@dataclass(slots=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053)'s answer."""

    pop_time: int
    invisible_time: int
    revive_qid: int


@dataclass(slots=True)
class PeekMessageRequestHeader(CommandHeader):
    """PEEK_MESSAGE (200052)."""

    topic: str
    queue_id: int
    max_msg_nums: int
    consumer_group: str


@dataclass(slots=True)
class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION (200054): is there anything to pop, waiting up to ``poll_time``?"""

    consumer_group: str
    topic: str
    queue_id: int
    poll_time: int
    born_time: int
    order: bool | None = False
    attempt_id: str | None = None


@dataclass(slots=True)
class NotificationResponseHeader(CommandHeader):
    """NOTIFICATION (200054)'s answer."""

    has_msg: bool
    polling_full: bool = False


@dataclass(slots=True)
class PollingInfoRequestHeader(CommandHeader):
    """POLLING_INFO (200055): how many pops are parked on a queue."""

    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True)
class PollingInfoResponseHeader(CommandHeader):
    """POLLING_INFO (200055)'s answer."""

    polling_num: int
