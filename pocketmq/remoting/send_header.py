"""Headers of a send (RocketMQ's SendMessageRequestHeader, its single-letter SendMessageRequestHeaderV2 and
SendMessageResponseHeader, same wire names), and the V1 header read from or written as the V2 form directly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .codes import RequestCode
from .header_codec import CommandHeader, _compile, wire


@dataclass(slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324); also every send once parsed, the V2 codes'
    single-letter form (SendMessageRequestHeaderV2) included."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    broker_name: str | None = wire("bname", default=None)


@dataclass(slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """The single-letter form used by SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool = False  # unitMode
    l: int | None = None  # maxReconsumeTimes  # noqa: E741 (RocketMQ's name)
    m: bool = False  # batch
    n: str | None = None  # brokerName

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return cls(
            a=v1.producer_group,
            b=v1.topic,
            c=v1.default_topic,
            d=v1.default_topic_queue_nums,
            e=v1.queue_id,
            f=v1.sys_flag,
            g=v1.born_timestamp,
            h=v1.flag,
            i=v1.properties,
            j=v1.reconsume_times,
            k=v1.unit_mode,
            l=v1.max_reconsume_times,
            m=v1.batch,
            n=v1.broker_name,
        )

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.a,
            topic=self.b,
            default_topic=self.c,
            default_topic_queue_nums=self.d,
            queue_id=self.e,
            sys_flag=self.f,
            born_timestamp=self.g,
            flag=self.h,
            properties=self.i,
            reconsume_times=self.j,
            unit_mode=self.k,
            max_reconsume_times=self.l,
            batch=self.m,
            broker_name=self.n,
        )


_V2_SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)
# The V1 header's fields under the V2 wire names, so that a send's header goes between the V1 dataclass and
# the single-letter map without a SendMessageRequestHeaderV2 in between (every send would build one).
_V1_AS_V2 = {
    "producer_group": "a", "topic": "b", "default_topic": "c", "default_topic_queue_nums": "d", "queue_id": "e",
    "sys_flag": "f", "born_timestamp": "g", "flag": "h", "properties": "i", "reconsume_times": "j",
    "unit_mode": "k", "max_reconsume_times": "l", "batch": "m", "broker_name": "n",
}
_send_v2_to_ext, _send_v2_from_ext = _compile(SendMessageRequestHeader, _V1_AS_V2)


def send_message_v2_ext(header: SendMessageRequestHeader) -> dict[str, object]:
    """The ext fields of SEND_MESSAGE_V2 for ``header``: SendMessageRequestHeaderV2.from_v1(header).to_ext()."""
    return _send_v2_to_ext(header)


def parse_send_message_request_header(
    code: int, ext: Mapping[str, object] | None
) -> SendMessageRequestHeader:
    """The V1 header of a send request, whichever form the request code implies."""
    if code in _V2_SEND_CODES:
        header: SendMessageRequestHeader = _send_v2_from_ext(ext or {})  # = V2.from_ext(ext).to_v1()
        return header
    return SendMessageRequestHeader.from_ext(ext)


@dataclass(slots=True)
class SendMessageResponseHeader(CommandHeader):
    """Every send's answer (SEND_MESSAGE and its V2, batch and reply forms)."""

    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
    recall_handle: str | None = None  # RocketMQ 5: a timer message's (common/recall_message_handle.py)
