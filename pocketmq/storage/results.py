"""Result types of the MessageStore API, with RocketMQ's status names."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from pocketmq.common.message import create_message_id, create_message_ids


class PutMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    # RocketMQ 5's timer messages (storage/timer/timer_routing.py)
    WHEEL_TIMER_FLOW_CONTROL = "WHEEL_TIMER_FLOW_CONTROL"
    WHEEL_TIMER_MSG_ILLEGAL = "WHEEL_TIMER_MSG_ILLEGAL"
    WHEEL_TIMER_NOT_ENABLE = "WHEEL_TIMER_NOT_ENABLE"

    @property
    def is_ok(self) -> bool:
        return self in _STORED


# Enum hashing runs Python code: a tuple of four members answers by identity first.
_STORED = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
           PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE)


class AppendMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendMessageResult:
    """RocketMQ's AppendMessageResult: what writing a message (or batch) to the commit log did."""

    status: AppendMessageStatus
    wrote_offset: int = 0  # physical offset of the first record
    wrote_bytes: int = 0
    store_host: bytes = b""
    logics_offset: int = 0  # queue offset of the first message
    store_timestamp: int = 0
    msg_num: int = 1
    record_offsets: list[int] | None = None  # batches: physical offset of every record

    @property
    def msg_id(self) -> str:
        """offsetMsgId; for a batch the comma-separated ids, as RocketMQ returns them."""
        if self.record_offsets is None:
            return create_message_id(self.store_host, self.wrote_offset)
        return create_message_ids(self.store_host, self.record_offsets)


@dataclass(slots=True)
class PutMessageResult:
    """RocketMQ's PutMessageResult: what the store made of a put."""

    status: PutMessageStatus
    append_result: AppendMessageResult | None = None
    remark: str = ""

    @property
    def is_ok(self) -> bool:
        return self.status.is_ok


class GetMessageStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_RESET = "OFFSET_RESET"  # (never the store's: a pull of a queue an admin reset, RocketMQ 5's)


@dataclass(slots=True)
class GetMessageResult:
    """RocketMQ's GetMessageResult: what a read of a queue found, and where the next starts."""

    status: GetMessageStatus
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    # Raw commit-log records, as sliced from the mapped files (runs of adjacent records are one slice).
    buffers: list[bytes] = field(default_factory=list)
    message_count: int = 0
    buffer_total_size: int = 0
    # Queue offset of every returned message, in order.
    queue_offsets: list[int] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        """All returned records concatenated: what a pull response carries."""
        return b"".join(self.buffers)


@dataclass(slots=True)
class QueryMessageResult:
    """RocketMQ's QueryMessageResult: the records a lookup by key found."""

    buffers: list[bytes] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def body(self) -> bytes:
        return b"".join(self.buffers)
