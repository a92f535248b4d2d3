"""FilterAPI: subscription expressions ("*" or "TagA || TagB", or SQL92) as SubscriptionData, and the client's
own check of a pulled message against its subscription."""

from __future__ import annotations

from typing import Protocol

from pocketmq.common.java_hash import java_string_hash
from pocketmq.common.sql92 import Sql92Expression, SqlParseError, compile_sql92
from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.codes import ResponseCode

from .exceptions import MQClientException

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
_PROPERTY_TAGS = "TAGS"


class _HasProperties(Protocol):
    properties: dict[str, str]


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str = EXPRESSION_TYPE_TAG
) -> SubscriptionData:
    """Tags go into ``tags_set`` and their Java hash codes into ``code_set``, which the broker matches. A SQL92
    expression is compiled here, so a malformed one fails at subscribe time (MQClientException with
    SUBSCRIPTION_PARSE_FAILED and the position of the error) rather than at every pull."""
    if expression_type == EXPRESSION_TYPE_SQL92:
        if not sub_string or not sub_string.strip():
            raise MQClientException(
                "the SQL92 expression is blank", response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED
            )
        compile_sql92_expression(sub_string)
        return SubscriptionData(topic=topic, sub_string=sub_string.strip(), expression_type=expression_type)
    if expression_type != EXPRESSION_TYPE_TAG:
        raise MQClientException(f"unknown expression type {expression_type!r}, expected TAG or SQL92")
    if not sub_string or sub_string == SUB_ALL:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL)
    data = SubscriptionData(topic=topic, sub_string=sub_string)
    for tag in sub_string.split("||"):
        tag = tag.strip()
        if tag and tag not in data.tags_set:
            data.tags_set.append(tag)
            data.code_set.append(java_string_hash(tag))
    return data


def compile_sql92_expression(expression: str) -> Sql92Expression:
    """The compiled (cached) SQL92 filter; a malformed expression raises MQClientException."""
    try:
        return compile_sql92(expression)
    except SqlParseError as e:
        raise MQClientException(
            f"invalid SQL92 expression {expression!r}: {e}", response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED
        ) from e


def message_matches(subscription: SubscriptionData, msg: _HasProperties) -> bool:
    """Whether ``msg`` belongs to ``subscription``, decided again at the client after the broker's filter.

    Tags compare as strings (the broker only compared hash codes; a message without a tag matches only ``*``);
    SQL92 evaluates the expression on the message's properties, as the broker did.
    """
    if subscription.class_filter_mode:
        return True
    if subscription.expression_type == EXPRESSION_TYPE_SQL92:
        return compile_sql92_expression(subscription.sub_string).matches(msg.properties)
    if not subscription.tags_set:
        return True
    return msg.properties.get(_PROPERTY_TAGS) in subscription.tags_set
