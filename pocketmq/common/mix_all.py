"""RocketMQ's MixAll: the names of a group's retry and dead-letter topics, system groups and the other small
names both sides of the wire build from (the one place they are spelled)."""

from __future__ import annotations

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
# RocketMQ 5's light message queues (MixAll.isLmq): a topic of this prefix is one queue, id LMQ_QUEUE_ID
LMQ_PREFIX = "%LMQ%"
LMQ_QUEUE_ID = 0
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"  # MixAll.SCHEDULE_CONSUMER_GROUP
DEFAULT_CLUSTER = "DefaultCluster"  # BrokerConfig's brokerClusterName when none is given
DEFAULT_TRACE_REGION_ID = "DefaultRegion"  # the region a broker stamps (MSG_REGION) and a trace record names
# QueryMessageRequestHeader's extFields flag: look the key up as a message's unique key, not as a user key.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
REPLY_MESSAGE_FLAG = "reply"  # the MSG_TYPE of a reply
# The name server's KV namespace of order topics' queue layouts (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def get_retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def get_dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_retry_or_dlq_topic(topic: str) -> bool:
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)


def get_reply_topic(cluster: str) -> str:
    """The topic replies to requests sent within ``cluster`` go to."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


# MixAll's group names: the defaults, the groups the broker and tools use for themselves, and the groups
# SubscriptionGroupManager creates at start.
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
MONITOR_CONSUMER_GROUP = "__MONITOR_CONSUMER"
SELF_TEST_PRODUCER_GROUP = "SELF_TEST_P_GROUP"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PREFIX = "CID_ONSAPI_"
CID_ONSAPI_PERMISSION_GROUP = CID_ONSAPI_PREFIX + "PERMISSION"
CID_ONSAPI_OWNER_GROUP = CID_ONSAPI_PREFIX + "OWNER"
CID_ONSAPI_PULL_GROUP = CID_ONSAPI_PREFIX + "PULL"
CID_SYS_RMQ_TRANS = CID_RMQ_SYS_PREFIX + "TRANS"  # the group whose offsets record the transaction check's progress

SYSTEM_GROUPS = frozenset({
    TOOLS_CONSUMER_GROUP, FILTERSRV_CONSUMER_GROUP, MONITOR_CONSUMER_GROUP, CLIENT_INNER_PRODUCER_GROUP,
    SELF_TEST_PRODUCER_GROUP, SELF_TEST_CONSUMER_GROUP, ONS_HTTP_PROXY_GROUP, CID_ONSAPI_PERMISSION_GROUP,
    CID_ONSAPI_OWNER_GROUP, CID_ONSAPI_PULL_GROUP, CID_SYS_RMQ_TRANS, DEFAULT_CONSUMER_GROUP, DEFAULT_PRODUCER_GROUP,
})


def is_system_group(group: str) -> bool:
    """A group the broker, the tools or RocketMQ's own services use (as the dashboard tells them apart)."""
    return group in SYSTEM_GROUPS or group.startswith((CID_RMQ_SYS_PREFIX, CID_ONSAPI_PREFIX))
