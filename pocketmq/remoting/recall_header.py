"""Headers of RECALL_MESSAGE (370), RocketMQ 5's cancel of a timer message before it is due (its
RecallMessageRequestHeader / RecallMessageResponseHeader, same wire names)."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader, wire


@dataclass(slots=True)
class RecallMessageRequestHeader(CommandHeader):
    """RECALL_MESSAGE (370)."""

    topic: str
    recall_handle: str  # the send's (common/recall_message_handle.py)
    producer_group: str | None = None
    broker_name: str | None = wire("bname", default=None)  # RpcRequestHeader's: the broker the handle names


@dataclass(slots=True)
class RecallMessageResponseHeader(CommandHeader):
    """RECALL_MESSAGE (370)'s answer."""

    msg_id: str  # the recalled message's UNIQ_KEY
