"""RocketMQ's FilterAPI: what a subscription expression means, for the client that sends it and the broker that
filters by it alike. ``"*"`` (or nothing) is everything; ``"TagA || TagB"`` the tags A and B, matched by their
Java hash codes on the broker and by name on the client; SQL92 an expression on the message's properties,
compiled here so that a malformed one is refused before anything is read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .java_hash import java_string_hash
from .java_text import java_split

if TYPE_CHECKING:
    from .sql92 import Sql92Expression

SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
TAG_SEPARATOR = "||"


class SubscriptionParseError(ValueError):
    pass


# String.trim: what Java strips from both ends of each tag is every char up to the space, no other white space.
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))


def parse_tags(sub_string: str | None) -> tuple[str, list[str], list[int]]:
    """A TAG expression as (subString, tagsSet, codeSet), as FilterAPI.buildSubscriptionData makes it: only
    nothing or exactly ``*`` subscribes to everything (no tags). Anything else is split at ``||`` and keeps its
    text; its tags are the distinct pieces that are not blank once trimmed, with their distinct hash codes, in
    order. So ``" "`` or ``" || "`` names no tag and the broker matches nothing, and ``" * "`` names the tag ``*``.
    An expression made of ``||`` alone (``"||"``, ``"||||"``) leaves no piece once String.split drops the trailing
    empty ones, which Java refuses: SubscriptionParseError."""
    if not sub_string or sub_string == SUB_ALL:
        return SUB_ALL, [], []
    pieces = java_split(sub_string, TAG_SEPARATOR)
    if not pieces:
        raise SubscriptionParseError(f"subString split error: {sub_string!r} names no tag")
    # (a dict keeps the order and finds a repeat at once: a client's expression may name thousands of tags)
    tags = list(dict.fromkeys(tag for tag in (piece.strip(_JAVA_TRIMMED) for piece in pieces) if tag))
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
