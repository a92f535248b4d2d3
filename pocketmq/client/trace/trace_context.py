"""TraceContext and TraceBean: one trace record before it is encoded, and the enums its fields take."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from pocketmq.client.message_id import create_uniq_id


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """common.message.MessageType; a Pub record carries the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """How a listener call ended; a SubAfter record carries the ordinal as its context code."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class TraceBean:
    """RocketMQ's TraceBean: one message a trace record covers."""

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    client_host: str = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType = MessageType.Normal_Msg
    # An EndTransaction record's: the transaction, how it ended (a LocalTransactionState name), and whether a
    # check-back asked.
    transaction_id: str = ""
    transaction_state: str = ""
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """RocketMQ's TraceContext: one trace record (a send, a consume's start or end, a transaction's end) and the
    messages it covers."""

    trace_type: TraceType
    time_stamp: int = field(default_factory=_now_ms)
    region_id: str = ""
    group_name: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str = field(default_factory=create_uniq_id)
    context_code: int = 0
    trace_beans: list[TraceBean] = field(default_factory=list)


@dataclass(slots=True)
class TraceTransferBean:
    """Encoded records and the keys (message ids and message keys) the trace message is indexed by."""

    trans_data: str = ""
    trans_key: set[str] = field(default_factory=set)
