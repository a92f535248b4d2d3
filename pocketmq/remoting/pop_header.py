"""Headers of RocketMQ 5's POP requests (remoting.protocol.header.PopMessageRequestHeader and its siblings),
with RocketMQ's field names: they travel in both codecs like every other header (``header.CommandHeader``).

Times are milliseconds; ``queue_id`` -1 means every queue of the topic.
"""

from __future__ import annotations

from dataclasses import dataclass

from .header import CommandHeader


@dataclass(slots=True)
class PopMessageRequestHeader(CommandHeader):
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
    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(slots=True)
class AckMessageRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int


@dataclass(slots=True)
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    invisible_time: int


@dataclass(slots=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    pop_time: int
    invisible_time: int
    revive_qid: int


@dataclass(slots=True)
class PeekMessageRequestHeader(CommandHeader):
    topic: str
    queue_id: int
    max_msg_nums: int
    consumer_group: str


@dataclass(slots=True)
class NotificationRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    poll_time: int
    born_time: int
    order: bool | None = False
    attempt_id: str | None = None


@dataclass(slots=True)
class NotificationResponseHeader(CommandHeader):
    has_msg: bool
    polling_full: bool = False


@dataclass(slots=True)
class PollingInfoRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True)
class PollingInfoResponseHeader(CommandHeader):
    polling_num: int
