"""BATCH_ACK_MESSAGE's body (BatchAckMessageRequestBody with BatchAck entries), with RocketMQ's JSON names.

A BatchAck's ``b`` is a Java ``BitSet`` as ``toByteArray()`` gives it (little-endian bytes, base64 in JSON): bit i
set acks the message at ``startOffset + i``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from .body import Reader
from .errors import BodyError
from .fastjson import quote

MAX_BATCH_ACKS = 1024  # acks in one request: a bound on what one request can make the broker write
MAX_BITSET_BYTES = 1024  # 8192 offsets after startOffset


@dataclass(slots=True)
class BatchAck:
    """One pop's acks in a BATCH_ACK_MESSAGE body."""

    consumer_group: str
    topic: str  # the topic the client knows (the original, also for retried messages)
    retry: str  # "0", "1" or "2": ExtraInfoUtil's topic type of the messages acked
    start_offset: int
    queue_id: int
    revive_queue_id: int
    pop_time: int
    invisible_time: int
    offsets: list[int] = field(default_factory=list)  # the bit set, as the indexes of its set bits

    def bit_set(self) -> bytes:
        """``b``: the offsets as BitSet.toByteArray() gives them."""
        bits = 0
        for i in self.offsets:
            bits |= 1 << i
        return bits.to_bytes((bits.bit_length() + 7) // 8, "little")

    def to_fastjson(self) -> str | None:
        """``fastjson.dumps(self)`` written directly, its keys in fastjson's order; None when a field is not of its
        exact type (the general writer writes that). Every native pop's ack writes one of these."""
        c, t, r = self.consumer_group, self.topic, self.retry
        so, q, rq, pt, it = self.start_offset, self.queue_id, self.revive_queue_id, self.pop_time, self.invisible_time
        if not (type(c) is str and type(t) is str and type(r) is str and type(so) is int and type(q) is int
                and type(rq) is int and type(pt) is int and type(it) is int):
            return None
        b = base64.b64encode(self.bit_set()).decode("ascii")
        return (f'{{"b":"{b}","c":{quote(c)},"it":{it},"pt":{pt},"q":{q},"r":{quote(r)},"rq":{rq},"so":{so},'
                f'"t":{quote(t)}}}')

    def to_dict(self) -> dict[str, Any]:
        raw = self.bit_set()
        return {"c": self.consumer_group, "t": self.topic, "r": self.retry, "so": self.start_offset,
                "q": self.queue_id, "rq": self.revive_queue_id, "pt": self.pop_time, "it": self.invisible_time,
                "b": raw}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BatchAck:
        r = Reader(obj, path)
        raw = r.bytes("b", b"")
        if len(raw) > MAX_BITSET_BYTES:
            raise BodyError(r.at("b"), f"bit set of {len(raw)} bytes, more than {MAX_BITSET_BYTES}")
        bits = int.from_bytes(raw, "little")
        offsets = [i for i in range(bits.bit_length()) if bits >> i & 1]
        return cls(r.str("c"), r.str("t"), r.str("r", "0"), r.int("so"), r.int("q"), r.int("rq"), r.int("pt"),
                   r.int("it"), offsets)


@dataclass(slots=True)
class BatchAckMessageRequestBody:
    """BATCH_ACK_MESSAGE (200151) body."""

    broker_name: str
    acks: list[BatchAck]

    def to_dict(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "acks": [a.to_dict() for a in self.acks]}

    def to_fastjson(self) -> str | None:
        """``fastjson.dumps(self)`` written directly (BatchAck.to_fastjson); None when a field is not of its exact
        type."""
        name, acks = self.broker_name, self.acks
        if type(name) is not str or type(acks) is not list:
            return None
        entries = []
        for a in acks:
            text = a.to_fastjson() if type(a) is BatchAck else None
            if text is None:
                return None
            entries.append(text)
        return f'{{"acks":[{",".join(entries)}],"brokerName":{quote(name)}}}'

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BatchAckMessageRequestBody:
        r = Reader(obj, path)
        acks = r.list("acks", [])
        if len(acks) > MAX_BATCH_ACKS:
            raise BodyError(r.at("acks"), f"{len(acks)} acks, more than {MAX_BATCH_ACKS}")
        return cls(r.str("brokerName", ""), r.objects("acks", BatchAck, []))
