"""FilterAPI: subscription expressions ("*" or "TagA || TagB", or SQL92) as SubscriptionData, and the client's
own check of a pulled message against its subscription."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pocketmq.common.constants import PROPERTY_TAGS
from pocketmq.common.filter_api import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionParseError,
    check_expression_type,
    compile_sql92_subscription,
    parse_tags,
)
from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.codes import ResponseCode

from .exceptions import MQClientException

if TYPE_CHECKING:
    from pocketmq.common.sql92 import Sql92Expression

__all__ = ["EXPRESSION_TYPE_SQL92", "EXPRESSION_TYPE_TAG", "SUB_ALL", "build_subscription_data",
           "compile_sql92_expression", "message_matches"]


class _HasProperties(Protocol):
    properties: dict[str, str]


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str = EXPRESSION_TYPE_TAG
) -> SubscriptionData:
    """FilterAPI.buildSubscriptionData (pocketmq.common.filter_api's rule), its subVersion the time now. A SQL92
    expression is compiled here, so a malformed one fails at subscribe time (MQClientException with
    SUBSCRIPTION_PARSE_FAILED and the position of the error) rather than at every pull."""
    try:
        expression_type = check_expression_type(expression_type)
    except SubscriptionParseError as e:
        raise MQClientException(str(e)) from None
    if expression_type == EXPRESSION_TYPE_SQL92:
        compile_sql92_expression(sub_string)
        assert sub_string is not None  # (compiled)
        return SubscriptionData(topic=topic, sub_string=sub_string.strip(), expression_type=expression_type)
    try:
        sub_string, tags, codes = parse_tags(sub_string)
    except SubscriptionParseError as e:
        raise MQClientException(str(e), response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED) from None
    return SubscriptionData(topic=topic, sub_string=sub_string, tags_set=tags, code_set=codes)


def compile_sql92_expression(expression: str | None) -> Sql92Expression:
    """The compiled (cached) SQL92 filter; a blank or malformed expression raises MQClientException."""
    try:
        return compile_sql92_subscription(expression)
    except SubscriptionParseError as e:
        raise MQClientException(str(e), response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED) from e


def message_matches(subscription: SubscriptionData, msg: _HasProperties) -> bool:
    """Whether ``msg`` belongs to ``subscription``, decided at the client.

    Tags compare as strings (the broker only compared hash codes; a message without a tag matches only ``*``);
    SQL92 evaluates the expression on the message's properties. The consumers do not call it on what they pull:
    like RocketMQ's, they re-check tags only (process_pull_result), since a pulled message's properties also
    carry MIN_OFFSET/MAX_OFFSET, which the broker's evaluation did not see.
    """
    if subscription.class_filter_mode:
        return True
    if subscription.expression_type == EXPRESSION_TYPE_SQL92:
        return compile_sql92_expression(subscription.sub_string).matches(msg.properties)
    if not subscription.tags_set:
        return True
    return msg.properties.get(PROPERTY_TAGS) in subscription.tags_set
