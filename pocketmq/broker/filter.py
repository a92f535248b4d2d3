"""Subscriptions and message filters: FilterAPI.build and the broker's ExpressionMessageFilter for TAG and SQL92.

TAG filters match consume-queue entries by tags hash code. SQL92 filters (RocketMQ's ``enablePropertyFilter``)
need the message's properties: get_message reads each candidate record from the commit log
(``needs_commit_log``), and long polling tests the properties the dispatcher hands it for each arrival.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from pocketmq.common.codec import SYSFLAG_POS, header_struct, host_lengths
from pocketmq.common.filter_api import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionParseError,
    check_expression_type,
    compile_sql92_subscription,
    parse_tags,
)
from pocketmq.common.message import string_to_properties
from pocketmq.common.record_layout import TOPIC_LENGTH_SIZES, topic_length_at
from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.storage.message_filter import MessageFilter

if TYPE_CHECKING:
    from pocketmq.common.sql92 import Sql92Expression

__all__ = ["EXPRESSION_TYPE_SQL92", "EXPRESSION_TYPE_TAG", "SUB_ALL", "ExpressionMessageFilter",
           "Sql92MessageFilter", "SubscriptionParseError", "build_subscription_data", "message_filter_for",
           "record_properties"]


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str | None = None, sub_version: int = 0
) -> SubscriptionData:
    """FilterAPI.build (pocketmq.common.filter_api's rule) for a request's subscription; SubscriptionParseError for
    an unknown type or a malformed SQL92 expression, before anything is read."""
    expression_type = check_expression_type(expression_type)
    if expression_type == EXPRESSION_TYPE_SQL92:
        compile_sql92_subscription(sub_string)
        return SubscriptionData(topic, sub_string or "", [], [], sub_version, EXPRESSION_TYPE_SQL92)
    sub_string, tags, codes = parse_tags(sub_string)
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

    def is_matched_by_properties(self, raw_properties: bytes) -> bool:
        return True


class Sql92MessageFilter:
    """ExpressionMessageFilter for SQL92: every consume-queue entry is a candidate (pocketmq keeps no bloom
    bitmaps), the decision is made on the record's properties. A record whose properties cannot be read
    does not match."""

    needs_commit_log = True
    match_all = False
    __slots__ = ("expression",)

    def __init__(self, expression: Sql92Expression) -> None:
        self.expression = expression

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        raw = record_properties(record)
        return raw is not None and self.is_matched_by_properties(raw)

    def is_matched_by_properties(self, raw_properties: bytes) -> bool:
        # Bytes that are no UTF-8 read as U+FFFD, as Java's new String(bytes, UTF_8) reads them: pocketmq refuses
        # such properties at the send, but a store RocketMQ wrote may hold them (they matched nothing).
        return self.expression.matches(string_to_properties(raw_properties.decode(errors="replace")))


def message_filter_for(subscription: SubscriptionData) -> MessageFilter:
    """The filter a pull of ``subscription`` uses; raises SubscriptionParseError for a malformed SQL92 one."""
    if subscription.expression_type == EXPRESSION_TYPE_SQL92:
        return Sql92MessageFilter(compile_sql92_subscription(subscription.sub_string))
    return ExpressionMessageFilter(subscription)


_SHORT = struct.Struct(">h")
_INT = struct.Struct(">i")


def record_properties(record: bytes) -> bytes | None:
    """The raw PROPERTIES bytes of one commit-log record (MessageDecoder.decodeProperties), without decoding
    the rest; None when the lengths do not add up."""
    if len(record) < SYSFLAG_POS + 4:
        return None
    head = header_struct(*host_lengths(_INT.unpack_from(record, SYSFLAG_POS)[0]))
    if len(record) < head.size:
        return None
    pos = head.size + _INT.unpack_from(record, head.size - 4)[0]  # after the body
    if pos < head.size or pos >= len(record):
        return None
    magic = _INT.unpack_from(record, 4)[0] & 0xFFFFFFFF
    topic_len_size = TOPIC_LENGTH_SIZES.get(magic, 1)
    if pos + topic_len_size > len(record):
        return None
    pos += topic_len_size + topic_length_at(record, pos, magic)
    if pos + 2 > len(record):
        return None
    props_len = _SHORT.unpack_from(record, pos)[0]
    end = pos + 2 + props_len
    if props_len < 0 or end > len(record):
        return None
    return record[pos + 2 : end]
