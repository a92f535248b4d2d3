"""RocketMQ's FilterAPI: what a subscription expression means, for the client that sends it and the broker that
filters by it alike. ``"*"`` (or nothing) is everything; ``"TagA || TagB"`` the tags A and B, matched by their
Java hash codes on the broker and by name on the client; SQL92 an expression on the message's properties,
compiled here so that a malformed one is refused before anything is read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .java_hash import java_string_hash

if TYPE_CHECKING:
    from .sql92 import Sql92Expression

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
TAG_SEPARATOR = "||"


class SubscriptionParseError(ValueError):
    pass


def parse_tags(sub_string: str | None) -> tuple[str, list[str], list[int]]:
    """A TAG expression as (subString, tagsSet, codeSet): blank or ``*`` subscribes to everything (no tags);
    otherwise the distinct non-blank tags between ``||`` and their distinct hash codes, in order. An expression
    that names no tag at all (``"||"``) keeps its text and has no tags: the broker then matches nothing."""
    if not sub_string or not sub_string.strip() or sub_string.strip() == SUB_ALL:
        return SUB_ALL, [], []
    tags: list[str] = []
    for tag in sub_string.split(TAG_SEPARATOR):
        tag = tag.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return sub_string, tags, list(dict.fromkeys(java_string_hash(t) for t in tags))


def compile_sql92_subscription(sub_string: str | None) -> Sql92Expression:
    """The compiled (cached) SQL92 filter; raises SubscriptionParseError for a blank or malformed one."""
    if not sub_string or not sub_string.strip():
        raise SubscriptionParseError("Expression can't be null! SQL92")
    from .sql92 import SqlParseError, compile_sql92  # (at the first SQL92 subscription: most never see one)

    try:
        return compile_sql92(sub_string)
    except SqlParseError as e:
        raise SubscriptionParseError(f"Invalid SQL92 expression {sub_string!r}: {e}") from None


def check_expression_type(expression_type: str | None) -> str:
    """The type, TAG when none is given; SubscriptionParseError for any other than TAG and SQL92."""
    expression_type = expression_type or EXPRESSION_TYPE_TAG
    if expression_type not in (EXPRESSION_TYPE_TAG, EXPRESSION_TYPE_SQL92):
        raise SubscriptionParseError(f"unknown expression type {expression_type!r}, expected TAG or SQL92")
    return expression_type
