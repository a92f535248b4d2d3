"""Headers of PULL_MESSAGE and of the offsets a consumer reads and commits (RocketMQ's PullMessageRequestHeader,
QueryConsumerOffsetRequestHeader, GetMaxOffsetRequestHeader and their siblings, same names and wire names)."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader


@dataclass(slots=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361): a consumer asks for a queue's messages from an offset."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None


@dataclass(slots=True)
class PullMessageResponseHeader(CommandHeader):
    """PULL_MESSAGE (11)'s answer: where the next pull starts, the queue's offsets, the broker to pull from."""

    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14): a group's stored offset of a queue."""

    consumer_group: str
    topic: str
    queue_id: int
    # RocketMQ 5's: false (any text but "true") asks for QUERY_NOT_FOUND rather than 0 when the group has no offset.
    set_zero_if_not_found: bool | None = None


@dataclass(slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14)'s answer."""

    offset: int


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15): a group commits its offset of a queue."""

    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


@dataclass(slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30): the offset a queue's next message will take."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    """GET_MAX_OFFSET (30)'s answer."""

    offset: int


@dataclass(slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31): the offset of a queue's oldest message still stored."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetMinOffsetResponseHeader(CommandHeader):
    """GET_MIN_OFFSET (31)'s answer."""

    offset: int


@dataclass(slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29): a queue's offset at a store time."""

    topic: str
    queue_id: int
    timestamp: int


@dataclass(slots=True)
class SearchOffsetResponseHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29)'s answer."""

    offset: int


@dataclass(slots=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32): when a queue's oldest message still stored was stored."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)'s answer."""

    timestamp: int
