"""GrpcValidator: names, tags, keys and groups checked before anything reaches a broker."""

from __future__ import annotations

import unicodedata

from pocketmq.client.exceptions import MQClientException
from pocketmq.client.validators import check_group, check_topic

from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()

# TopicValidator.SYSTEM_TOPIC_SET (plus the rmq_sys_ prefix) and MixAll's system consumer groups.
SYSTEM_TOPICS = frozenset({
    "TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
})
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SYSTEM_GROUPS = frozenset({
    "CID_RMQ_SYS_REVIVE_GROUP", "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS",
})


def contains_control_character(data: str) -> bool:
    """Guava's CharMatcher.javaIsoControl: U+0000-U+001F and U+007F-U+009F."""
    return any(unicodedata.category(c) == "Cc" for c in data)


def validate_topic(name: str) -> None:
    try:
        check_topic(name)
    except MQClientException as e:
        raise GrpcProxyException(pb.Code.ILLEGAL_TOPIC, str(e))
    if name in SYSTEM_TOPICS or name.startswith(SYSTEM_TOPIC_PREFIX):
        raise GrpcProxyException(pb.Code.ILLEGAL_TOPIC, "cannot access system topic")


def validate_consumer_group(name: str) -> None:
    try:
        check_group(name)
    except MQClientException as e:
        raise GrpcProxyException(pb.Code.ILLEGAL_CONSUMER_GROUP, str(e))
    if name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_"):
        raise GrpcProxyException(pb.Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_tag(tag: str) -> None:
    if not tag:
        return
    if not tag.strip():
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if contains_control_character(tag):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
