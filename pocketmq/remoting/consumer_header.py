"""Headers of a consumer's other dealings with a broker (RocketMQ's names and wire names): a message by id or
key, its group's members, a message handed back to be retried, a client leaving."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader, wire


@dataclass(slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): one message by its commit-log offset."""

    offset: int  # commit-log offset decoded from an offsetMsgId


@dataclass(slots=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12): a topic's messages by key, within a time range."""

    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


@dataclass(slots=True)
class QueryMessageResponseHeader(CommandHeader):
    """QUERY_MESSAGE (12)'s answer: how far the index that answered reaches."""

    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38): the client ids of a group."""

    consumer_group: str


@dataclass(slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35): a client's producer or consumer group leaves the broker."""

    client_id: str = wire("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume, to be retried."""

    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker -> consumer: the group's members changed."""

    consumer_group: str
