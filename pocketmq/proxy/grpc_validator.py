"""GrpcValidator: names, tags, keys and groups checked before anything reaches a broker."""

from __future__ import annotations

import re
import unicodedata

from pocketmq.client.exceptions import MQClientException
from pocketmq.client.validators import check_group, check_topic
from pocketmq.common.java_text import is_blank
from pocketmq.common.mix_all import CID_RMQ_SYS_PREFIX
from pocketmq.common.topic_validator import SYSTEM_TOPIC_PREFIX, SYSTEM_TOPICS

from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()


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
    # MixAll.isSysConsumerGroup: the CID_RMQ_SYS_ prefix only (the revive group has it); RocketMQ's proxy takes its
    # predefined groups (TOOLS_CONSUMER...) as any other.
    if name.startswith(CID_RMQ_SYS_PREFIX):
        raise GrpcProxyException(pb.Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_tag(tag: str) -> None:
    if not tag:
        return
    if is_blank(tag):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if contains_control_character(tag):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def validate_lite_topic(lite_topic: str, max_size: int) -> None:
    """A send's lite topic (5.5.0's GrpcValidator.validateLiteTopic): ASCII letters, digits, '-' and '_' only."""
    if is_blank(lite_topic):
        raise GrpcProxyException(pb.Code.ILLEGAL_LITE_TOPIC, "lite topic cannot be the char sequence of whitespace")
    if len(lite_topic.encode()) > max_size:
        raise GrpcProxyException(pb.Code.ILLEGAL_LITE_TOPIC, f"lite topic exceed the max size {max_size}")
    if _LITE_TOPIC.fullmatch(lite_topic) is None:
        raise GrpcProxyException(pb.Code.ILLEGAL_LITE_TOPIC, "lite topic can only contain alphanumeric "
                                 "characters, hyphens(-), and underscores(_)")


_LITE_TOPIC = re.compile(r"[A-Za-z0-9_-]+")
