"""Headers of the admin requests (RocketMQ 4.9.8's names and wire names), for brokers, name servers and clients."""

from __future__ import annotations

from dataclasses import dataclass

from .header import CommandHeader, wire


@dataclass(slots=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str


@dataclass(slots=True)
class GetSubscriptionGroupConfigRequestHeader(CommandHeader):
    """RocketMQ 5's GET_SUBSCRIPTIONGROUP_CONFIG."""

    group: str


@dataclass(slots=True)
class GetTopicConfigRequestHeader(CommandHeader):
    """RocketMQ 5's GET_TOPIC_CONFIG (TopicRequestHeader: ``lo`` asks for the logic-queue mapping too)."""

    topic: str
    lo: bool | None = None


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str
    topic: str | None = None  # blank: every topic the group has offsets of


@dataclass(slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str


@dataclass(slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@dataclass(slots=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    topic: str


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    group_name: str
    remove_offset: bool = False  # 4.9.x; 5.x names it cleanOffset (read too)


@dataclass(slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    version: str  # the config's DataVersion as JSON


@dataclass(slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: int  # ms; -1 = the queues' max offsets
    is_force: bool = wire("isForce", default=False)


@dataclass(slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str
    value: str


@dataclass(slots=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@dataclass(slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = None


@dataclass(slots=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str
