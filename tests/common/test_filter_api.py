"""FilterAPI's TAG expressions: pocketmq's parse against a readable transcription of Java's loop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pocketmq.common.filter_api import SubscriptionParseError, parse_tags
from pocketmq.common.java_hash import java_string_hash
from pocketmq.common.java_text import java_split


def java_build(sub_string: str) -> tuple[list[str], list[int]] | None:
    """FilterAPI.buildSubscriptionData's loop, one piece at a time into ordered sets (None: the split error)."""
    pieces = java_split(sub_string, "||")
    if not pieces:
        return None
    tags: list[str] = []
    codes: list[int] = []
    for piece in pieces:
        tag = piece.strip("".join(chr(c) for c in range(0x21)))
        if tag and tag not in tags:
            tags.append(tag)
            if java_string_hash(tag) not in codes:
                codes.append(java_string_hash(tag))
    return tags, codes


@given(st.lists(st.sampled_from(["A", "B", " A ", "", " ", "*", "C\t", "||", "é"]), max_size=12).map("||".join))
def test_property_parse_tags_keeps_the_distinct_tags_in_order_as_java_does(expression: str) -> None:
    if expression in ("", "*"):
        assert parse_tags(expression) == ("*", [], [])
        return
    expected = java_build(expression)
    if expected is None:
        try:
            parse_tags(expression)
        except SubscriptionParseError:
            return
        raise AssertionError(f"{expression!r} parsed")
    assert parse_tags(expression) == (expression, *expected)


def test_thousands_of_tags_each_named_twice() -> None:
    _, tags, codes = parse_tags("||".join(f"T{i % 5000}" for i in range(10_000)))
    assert tags == [f"T{i}" for i in range(5000)] and len(codes) == len(set(codes))
