"""MessageFilter: how get_message asks the caller which entries to return (tags, SQL92 ...)."""

from __future__ import annotations

from typing import Protocol


class MessageFilter(Protocol):
    # True when the filter must see the record itself (property filters), not just the tags code.
    needs_commit_log: bool
    # True when it takes every message: get_message then reads only the entries it can return.
    match_all: bool

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...

    def is_matched_by_commit_log(self, record: bytes) -> bool: ...

    # The same decision from the record's raw PROPERTIES bytes (what the dispatcher hands long polling).
    def is_matched_by_properties(self, raw_properties: bytes) -> bool: ...


class TagsFilter:
    """Matches by tags hash code, as the broker does for `TagA || TagB` subscriptions."""

    needs_commit_log = False

    def __init__(self, codes: set[int] | None) -> None:
        self.match_all = not codes  # None or empty: everything
        self.codes: set[int] = codes or set()

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.match_all or tags_code in self.codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True

    def is_matched_by_properties(self, raw_properties: bytes) -> bool:
        return True
