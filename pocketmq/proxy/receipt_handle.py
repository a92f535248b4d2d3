"""ReceiptHandle: what a 5.x SDK hands back to ack, nack or forward a message (RocketMQ's common ReceiptHandle).

The proxy's handle is the broker's pop extra info (``POP_CK``: ``ckQueueOffset popTime invisibleTime reviveQid
topicType brokerName queueId queueOffset``) with the message's commit-log offset appended, as RocketMQ's proxy
makes it: forwarding to the dead-letter queue (CONSUMER_SEND_MSG_BACK) needs that offset. The broker is given the
first eight fields back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pocketmq.common.extra_info_util import ExtraInfo, ExtraInfoError, parse_extra_info

from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()

# Longer than any handle the broker makes; a client's megabytes are not parsed.
_MAX_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """RocketMQ's ReceiptHandle: a handle a client gave back, decoded."""

    extra: ExtraInfo
    commit_log_offset: int
    text: str  # the handle as the client has it

    @property
    def broker_name(self) -> str:
        return self.extra.broker_name

    @property
    def queue_id(self) -> int:
        return self.extra.queue_id

    @property
    def offset(self) -> int:
        return self.extra.queue_offset

    @property
    def extra_info(self) -> str:
        """The broker's part (the first eight fields)."""
        return str(self.extra)

    @property
    def next_visible_time(self) -> int:
        return self.extra.pop_time + self.extra.invisible_time

    def is_expired(self) -> bool:
        return self.next_visible_time <= time.time_ns() // 1_000_000

    def real_topic(self, topic: str, group: str) -> str:
        return self.extra.real_topic(topic, group)


def create_handle(pop_ck: str, commit_log_offset: int) -> str:
    return f"{pop_ck} {commit_log_offset}"


def _number(field: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR,
                                 f'For input string: "{field[:64]}". NumberFormatException') from None


def decode(text: str) -> ReceiptHandle:
    """ReceiptHandle.decode. What does not parse is refused as RocketMQ's proxy refuses it: an internal error with
    the Java exception's text (its ExceptionUtils.getErrorDetailMessage, without the stack frame); an expired handle
    is INVALID_RECEIPT_HANDLE, later (ConsumerProcessor). A handle longer than any the broker makes is refused
    before it is parsed."""
    if len(text) > _MAX_LENGTH:
        raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE, "receipt handle is too long")
    fields = text.split(" ")
    while " " in text and fields and not fields[-1]:
        fields.pop()  # (Java's String.split drops trailing empty strings, when it splits at all: "" is [""])
    if len(fields) < 8:
        raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR,
                                 f"Parse failed, dataList size {len(fields)}. IllegalArgumentException")
    for i in (0, 1, 2, 3, 6, 7):
        _number(fields[i])
    commit_log_offset = _number(fields[8]) if len(fields) >= 9 else -1
    try:
        extra = parse_extra_info(" ".join(fields[:8]))
    except ExtraInfoError as e:
        raise GrpcProxyException(pb.Code.INVALID_RECEIPT_HANDLE, f"receipt handle is malformed: {e}") from None
    return ReceiptHandle(extra, commit_log_offset, text)
