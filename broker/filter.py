"""Tag subscriptions: FilterAPI.buildSubscriptionData and the broker's ExpressionMessageFilter (TAG type only)."""

from __future__ import annotations

from remoting.client_body import SubscriptionData
from storage.java_hash import java_string_hash

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"


class SubscriptionParseError(ValueError):
    pass


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str | None = None, sub_version: int = 0
) -> SubscriptionData:
    """``"*"`` (or empty) subscribes to everything; ``"A || B"`` to tags A and B by their Java hash codes."""
    expression_type = expression_type or EXPRESSION_TYPE_TAG
    if expression_type == EXPRESSION_TYPE_SQL92:
        raise SubscriptionParseError("SQL92")  # callers answer SYSTEM_ERROR: no property filtering here
    if expression_type != EXPRESSION_TYPE_TAG:
        raise SubscriptionParseError(f"unknown expression type {expression_type!r}")
    if not sub_string or not sub_string.strip() or sub_string.strip() == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL, [], [], sub_version, EXPRESSION_TYPE_TAG)
    tags: list[str] = []
    for tag in sub_string.split("||"):
        tag = tag.strip()
        if tag and tag not in tags:
            tags.append(tag)
    codes = list(dict.fromkeys(java_string_hash(t) for t in tags))
    return SubscriptionData(topic, sub_string, tags, codes, sub_version, EXPRESSION_TYPE_TAG)


class ExpressionMessageFilter:
    """Matches consume-queue entries by tags code, as RocketMQ's ExpressionMessageFilter does for TAG.

    Unlike storage's TagsFilter, an expression that names no tag at all (e.g. ``"||"``) matches nothing,
    which is what RocketMQ does with an empty codeSet.
    """

    needs_commit_log = False
    __slots__ = ("match_all", "codes")

    def __init__(self, subscription: SubscriptionData | None) -> None:
        self.match_all = subscription is None or subscription.class_filter_mode or subscription.sub_string == SUB_ALL
        self.codes = frozenset(subscription.code_set) if subscription is not None else frozenset()

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.match_all or tags_code in self.codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True
