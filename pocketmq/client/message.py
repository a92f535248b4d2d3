"""Messages as producers build them, and the results of send and pull.

Received messages are ``pocketmq.common.message.MessageExt`` (decoded by the store's record codec, bodies already
decompressed): ``msg.msg_id`` is the producer's UNIQ_KEY (what the send returned), ``msg.offset_msg_id`` the
broker's id (store host + commit-log offset), as RocketMQ's MessageClientExt has them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pocketmq.common.constants import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
)
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_TRACE_REGION_ID
from pocketmq.common.pop_ack_constants import PROPERTY_SHARDING_KEY
from pocketmq.remoting.client_body import MessageQueue

from .message_const import (
    KEY_SEPARATOR,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    SYSTEM_PROPERTY_NAMES,
)

__all__ = [
    "Message",
    "MessageExt",
    "MessageQueue",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
]


def _check_property(name: str, value: str) -> None:
    if not isinstance(name, str) or not isinstance(value, str) or not name.strip() or not value.strip():
        raise ValueError("The name or value of property can not be null or blank string!")
    for s in (name, value):
        if NAME_VALUE_SEPARATOR in s or PROPERTY_SEPARATOR in s:
            # RocketMQ does not check this; the pair would silently corrupt the encoded properties.
            raise ValueError(f"property {name!r} contains a \\x01 or \\x02 separator character")


class Message:
    """RocketMQ's Message: a topic, a body, a user flag and a property map holding tags, keys and the rest.

    ``keys`` may be one string (space-separated keys) or a list. ``properties`` are user properties; system
    names (TAGS, KEYS, UNIQ_KEY ...) are refused there, set them through the arguments instead.
    """

    __slots__ = ("topic", "body", "flag", "properties")

    def __init__(
        self,
        topic: str,
        body: bytes,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        delay_time_level: int = 0,
        wait_store_msg_ok: bool = True,
        message_group: str | None = None,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties: dict[str, str] = {}
        if tags:
            self.tags = tags
        if keys:
            self.keys = keys
        if delay_time_level > 0:
            self.delay_time_level = delay_time_level
        if message_group:
            self.message_group = message_group
        # RocketMQ's constructors always write WAIT, so every message carries it.
        self.wait_store_msg_ok = wait_store_msg_ok
        for k, v in (properties or {}).items():
            self.put_user_property(k, v)

    def put_user_property(self, name: str, value: str) -> None:
        if name in SYSTEM_PROPERTY_NAMES:
            raise ValueError(f"The Property<{name}> is Used by system, input another please")
        _check_property(name, value)
        self.properties[name] = value

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        """Set any property, system names included (MessageAccessor.putProperty)."""
        _check_property(name, value)
        self.properties[name] = value

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @tags.setter
    def tags(self, tags: str | None) -> None:
        if tags:
            self.put_property(PROPERTY_TAGS, tags)
        else:
            self.properties.pop(PROPERTY_TAGS, None)

    @property
    def keys(self) -> list[str]:
        return [k for k in self.properties.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]

    @keys.setter
    def keys(self, keys: str | Iterable[str] | None) -> None:
        joined = keys if isinstance(keys, str) else KEY_SEPARATOR.join(keys or ())
        if joined:
            self.put_property(PROPERTY_KEYS, joined)
        else:
            self.properties.pop(PROPERTY_KEYS, None)

    @property
    def message_group(self) -> str | None:
        """RocketMQ 5's message group (FIFO): property __SHARDINGKEY. A producer sends a group's messages to one
        queue (by the group's hash, unless a queue or selector is given), where orderly consumers read them in
        order."""
        return self.properties.get(PROPERTY_SHARDING_KEY)

    @message_group.setter
    def message_group(self, group: str | None) -> None:
        if group:
            self.put_property(PROPERTY_SHARDING_KEY, group)
        else:
            self.properties.pop(PROPERTY_SHARDING_KEY, None)

    @property
    def delay_time_level(self) -> int:
        return int(self.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0"))

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[PROPERTY_DELAY_TIME_LEVEL] = str(int(level))

    # RocketMQ 5's timer messages (Message.setDelayTimeSec / setDelayTimeMs / setDeliverTimeMs): delivered by the
    # broker's timer wheel at that time, to the precision of its slots (timerPrecisionMs).
    @property
    def delay_time_sec(self) -> int:
        return int(self.properties.get(PROPERTY_TIMER_DELAY_SEC, "0"))

    @delay_time_sec.setter
    def delay_time_sec(self, sec: int) -> None:
        self.properties[PROPERTY_TIMER_DELAY_SEC] = str(int(sec))

    @property
    def delay_time_ms(self) -> int:
        return int(self.properties.get(PROPERTY_TIMER_DELAY_MS, "0"))

    @delay_time_ms.setter
    def delay_time_ms(self, ms: int) -> None:
        self.properties[PROPERTY_TIMER_DELAY_MS] = str(int(ms))

    @property
    def deliver_time_ms(self) -> int:
        """The epoch milliseconds the message is due at (0: none)."""
        return int(self.properties.get(PROPERTY_TIMER_DELIVER_MS, "0"))

    @deliver_time_ms.setter
    def deliver_time_ms(self, ms: int) -> None:
        self.properties[PROPERTY_TIMER_DELIVER_MS] = str(int(ms))

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, wait: bool) -> None:
        self.properties[PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait else "false"

    @property
    def uniq_key(self) -> str | None:
        """The producer-made unique id (UNIQ_KEY), set on the message by the first send."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, flag={self.flag}, properties={self.properties!r}, "
            f"body=<{len(self.body) if self.body is not None else None} bytes>)"
        )


class SendStatus(enum.Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(slots=True)
class SendResult:
    """RocketMQ's SendResult: where a sent message (or batch) was stored, and its ids."""

    send_status: SendStatus
    msg_id: str  # UNIQ_KEY; comma-separated for a batch
    offset_msg_id: str  # broker-made: store host + commit-log offset; comma-separated for a batch
    message_queue: MessageQueue
    queue_offset: int  # the first one, for a batch
    transaction_id: str | None = None
    recall_handle: str | None = None  # a timer message's: Producer.recall_message cancels it before it is due
    # What the broker's answer says of message trace (MSG_REGION, TRACE_ON): the region a Pub trace record names,
    # and whether the broker wants one at all.
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    """RocketMQ's PullResult: what one pull of a queue brought, and where the next starts."""

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[MessageExt] = field(default_factory=list)
