"""FilterAPI: subscription expressions ("*" or "TagA || TagB", or SQL92) as SubscriptionData."""

from __future__ import annotations

from remoting.client_body import SubscriptionData
from storage.java_hash import java_string_hash

from .exceptions import MQClientException

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str = EXPRESSION_TYPE_TAG
) -> SubscriptionData:
    """Tags go into ``tags_set`` and their Java hash codes into ``code_set``, which the broker matches."""
    if expression_type == EXPRESSION_TYPE_SQL92:
        if not sub_string or not sub_string.strip():
            raise MQClientException("the SQL92 expression is blank")
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
