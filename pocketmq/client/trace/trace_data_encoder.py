"""TraceDataEncoder: trace records to and from RocketMQ's text form.

Each record is its fields joined by CONTENT_SPLITOR (0x01) and ended by FIELD_SPLITOR (0x02); one trace
message's body is records back to back. The fields, in order (RocketMQ 4.9.8):

- Pub: type, timestamp, regionId, producer group, topic, msgId, tags, keys, storeHost, bodyLength, costTime,
  msgType ordinal, offsetMsgId, success
- SubBefore: type, timestamp, regionId, consumer group, requestId, msgId, retryTimes, keys
- SubAfter: type, requestId, msgId, costTime, success, keys, contextCode, timestamp, consumer group (the last two
  since 4.9.4; Java's decoder takes neither from a record of fewer than nine fields)
- EndTransaction: type, timestamp, regionId, producer group, topic, msgId, tags, keys, storeHost, msgType ordinal,
  transactionId, transaction state, fromTransactionCheck

A missing value is written as Java writes a null, ``null``, so that Java's decoder (which drops empty trailing
fields when it splits) reads every record pocketmq writes.
"""

from __future__ import annotations

from pocketmq.common.java_text import java_split

from .trace_constants import CONTENT_SPLITOR, FIELD_SPLITOR
from .trace_context import MessageType, TraceBean, TraceContext, TraceTransferBean, TraceType


def _s(value: object) -> str:
    if value is None or value == "":
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(map(_s, fields)) + FIELD_SPLITOR


def encoder_from_context_bean(ctx: TraceContext) -> TraceTransferBean:
    """One context as encoded records plus the keys to index them by (its msgIds and message keys)."""
    parts: list[str] = []
    t = ctx.trace_type
    if t is TraceType.Pub:
        b = ctx.trace_beans[0]
        parts.append(_record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags,
                             b.keys, b.store_host, b.body_length, ctx.cost_time, int(b.msg_type), b.offset_msg_id,
                             ctx.success))
    elif t is TraceType.SubBefore:
        for b in ctx.trace_beans:
            parts.append(_record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, ctx.request_id, b.msg_id,
                                 b.retry_times, b.keys))
    elif t is TraceType.SubAfter:
        for b in ctx.trace_beans:
            parts.append(_record(t.value, ctx.request_id, b.msg_id, ctx.cost_time, ctx.success, b.keys,
                                 ctx.context_code, ctx.time_stamp, ctx.group_name))
    elif t is TraceType.EndTransaction:
        b = ctx.trace_beans[0]
        parts.append(_record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags,
                             b.keys, b.store_host, int(b.msg_type), b.transaction_id, b.transaction_state,
                             b.from_transaction_check))
    else:
        raise ValueError(f"trace type {t} is not written by pocketmq")
    bean = TraceTransferBean("".join(parts))
    for b in ctx.trace_beans:
        bean.trans_key.add(b.msg_id)
        if b.keys:
            bean.trans_key.add(b.keys)
    return bean


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def decoder_from_trace_data_string(trace_data: str) -> list[TraceContext]:
    """The records of one trace message's body; ValueError for a record that is not well formed."""
    out: list[TraceContext] = []
    for context in java_split(trace_data, FIELD_SPLITOR):
        line = java_split(context, CONTENT_SPLITOR)
        if not line:
            continue
        try:
            kind = line[0]
            if kind == TraceType.Pub.value:
                bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
                                 body_length=int(line[9]), msg_type=MessageType(int(line[11])))
                ctx = TraceContext(TraceType.Pub, int(line[1]), line[2], line[3], cost_time=int(line[10]),
                                   trace_beans=[bean])
                if len(line) == 13:
                    ctx.success = _bool(line[12])
                elif len(line) >= 14:
                    bean.offset_msg_id = line[12]
                    ctx.success = _bool(line[13])
                    if len(line) >= 15:
                        bean.client_host = line[14]
            elif kind == TraceType.SubBefore.value:
                bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7])
                ctx = TraceContext(TraceType.SubBefore, int(line[1]), line[2], line[3], request_id=line[4],
                                   trace_beans=[bean])
            elif kind == TraceType.SubAfter.value:
                bean = TraceBean(msg_id=line[2], keys=line[5])
                ctx = TraceContext(TraceType.SubAfter, request_id=line[1], cost_time=int(line[3]),
                                   success=_bool(line[4]), trace_beans=[bean])
                if len(line) >= 7:
                    ctx.context_code = int(line[6])
                if len(line) >= 9:  # (Java takes the time and the group together)
                    ctx.time_stamp = int(line[7])
                    ctx.group_name = line[8]
                elif len(line) == 8:  # (what pocketmq wrote before it wrote the group)
                    ctx.time_stamp = int(line[7])
            elif kind == TraceType.EndTransaction.value:
                bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
                                 msg_type=MessageType(int(line[9])), transaction_id=line[10],
                                 transaction_state=line[11], from_transaction_check=_bool(line[12]))
                ctx = TraceContext(TraceType.EndTransaction, int(line[1]), line[2], line[3], trace_beans=[bean])
            else:
                continue  # types of later versions
        except (IndexError, ValueError) as e:
            raise ValueError(f"bad trace record {context!r}: {e}") from e
        out.append(ctx)
    return out
