"""Headers of the admin requests (RocketMQ 4.9.8's names and wire names), for brokers, name servers and clients."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader, wire


@dataclass(slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17): create a topic on a broker, or change it."""

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int | None = None
    order: bool = False
    # RocketMQ 5: the attribute modifications, "+message.type=FIFO,-reserve.time" (AttributeParser's form)
    attributes: str | None = None


@dataclass(slots=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str


@dataclass(slots=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202)."""

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
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN (303)."""

    topic: str
    group: str


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208)."""

    consumer_group: str
    topic: str | None = None  # blank: every topic the group has offsets of


@dataclass(slots=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317): mqadmin's brokerConsumeStats."""

    is_order: bool = wire("isOrder", default=False)  # only the topics whose config says order
    # pocketmq's console: each topic over its read queues, as GET_CONSUME_STATS counts them, so that the queues a
    # shrink left read-only (drained, no longer written) keep their lag. Apache's broker ignores the field (its
    # write queues, as by default here).
    read_queues: bool = wire("readQueues", default=False)


@dataclass(slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    consumer_group: str


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str


@dataclass(slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307): to the broker, which asks the client with the same header."""

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@dataclass(slots=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), to the broker, and GET_CONSUMER_STATUS_FROM_CLIENT (221), which
    the broker sends each client of the group with the topic and group alone."""

    topic: str
    group: str
    client_addr: str | None = None  # a client id: that client alone (blank: every client of the group)


@dataclass(slots=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    topic: str


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207)."""

    group_name: str
    remove_offset: bool = False  # 4.9.x's name of the flag
    clean_offset: bool = False  # 5.x's, which reads only this one: a client sends both


@dataclass(slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """GET_BROKER_CONFIG (26)'s answer; the properties are the body."""

    version: str  # the config's DataVersion as JSON


@dataclass(slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: int  # ms; -1 = the queues' max offsets
    is_force: bool = wire("isForce", default=False)
    # RocketMQ 5's: a queue id >= 0 resets that queue only, to ``offset`` (absent or -1: to ``timestamp``'s).
    queue_id: int = -1
    offset: int | None = None


@dataclass(slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100)."""

    namespace: str
    key: str
    value: str


@dataclass(slots=True)
class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101)."""

    namespace: str
    key: str


@dataclass(slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    """GET_KV_CONFIG (101)'s answer."""

    value: str | None = None


@dataclass(slots=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102)."""

    namespace: str
    key: str


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str


@dataclass(slots=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER (205); ADD_WRITE_PERM_OF_BROKER (327) has the same one field."""

    broker_name: str


@dataclass(slots=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER's answer: the topics whose queues on the broker lost their write permission."""

    wipe_topic_count: int


@dataclass(slots=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER's answer: the topics whose queues on the broker are read-write again."""

    add_topic_count: int


@dataclass(slots=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): ``count`` consume-queue entries of a queue from ``index`` (mqadmin's queryCq)."""

    topic: str
    queue_id: int
    index: int
    count: int
    consumer_group: str | None = None


@dataclass(slots=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315): one statistics item of the broker (mqadmin's statsAll asks TOPIC_PUT_NUMS of
    each topic, GROUP_GET_NUMS of each ``topic@group``)."""

    stats_name: str
    stats_key: str


@dataclass(slots=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET (314): ``dest_group`` given the offsets ``src_group`` has of ``topic``."""

    src_group: str
    dest_group: str
    topic: str | None = None  # blank: each topic the source group has offsets of
    offline: bool = False  # false: a topic the group's online consumers do not subscribe to is left out


@dataclass(slots=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308): per queue of ``topic``, the lowest offset of the groups not filtered out."""

    compare_group: str
    topic: str
    filter_groups: str | None = None  # ","-separated groups left out of the minimum
