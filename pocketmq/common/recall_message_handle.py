"""RecallMessageHandle: what a send of a timer message answers with, to cancel it before it is due (RocketMQ 5's
common/producer/RecallMessageHandle, same text).

Version 1 is ``v1 <topic> <brokerName> <timestamp> <messageId>``, space-separated, in URL-safe Base64 with
padding. The timestamp is the message's wheel slot (TIMER_OUT_MS) plus one: a delete marker due then lands in the
same slot as the message. The message id is its UNIQ_KEY. A handle is opaque to clients; only the broker that
stored the message reads it (and a proxy, for the broker's name).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

VERSION_1 = "v1"
SEPARATOR = " "
INVALID = "recall handle is invalid"

_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}")


class RecallHandleError(ValueError):
    """A handle that does not decode (RocketMQ's DecoderException); its text is RocketMQ's."""

    def __init__(self) -> None:
        super().__init__(INVALID)


@dataclass(frozen=True, slots=True)
class HandleV1:
    """RocketMQ's RecallMessageHandle.HandleV1: a version 1 handle, decoded."""

    topic: str
    broker_name: str
    timestamp_str: str  # as sent: the broker reads it as a number and treats one that is not as expired
    message_id: str
    version: str = VERSION_1

    @staticmethod
    def build_handle(topic: str, broker_name: str, timestamp_str: str, message_id: str | None) -> str:
        """The handle's text (no check of the parts, as RocketMQ's: a missing id is written ``null``)."""
        raw = SEPARATOR.join((VERSION_1, topic, broker_name, timestamp_str, "null" if message_id is None
                              else message_id))
        return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")


def _url_decode(text: str) -> bytes:
    """java.util.Base64's URL decoder: the URL alphabet only, padding optional but not wrong."""
    if not _URL_BASE64.fullmatch(text):
        raise RecallHandleError
    body = text.rstrip("=")
    if len(body) % 4 == 1 or (len(text) != len(body) and len(text) % 4):
        raise RecallHandleError
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as e:
        raise RecallHandleError from e


def decode_handle(handle: str | None) -> HandleV1:
    """The handle's parts; RecallHandleError for anything but a version-1 handle of at least five parts."""
    if not handle:
        raise RecallHandleError
    raw = _url_decode(handle).decode("utf-8", errors="replace")  # (Java's new String replaces bad bytes too)
    items = raw.split(SEPARATOR)
    while items and items[-1] == "":  # Java's String.split drops trailing empty strings
        items.pop()
    if len(items) < 5 or items[0] != VERSION_1:
        raise RecallHandleError
    return HandleV1(items[1], items[2], items[3], items[4])
