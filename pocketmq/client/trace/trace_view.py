"""TraceView: one record of a message's trace as ``queryMsgTraceById`` shows it."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from pocketmq.common.message import MessageExt

from .trace_context import TraceType
from .trace_data_encoder import decoder_from_trace_data_string


@dataclass(slots=True)
class TraceView:
    """RocketMQ's TraceView: one record of a message's trace, decoded."""

    msg_id: str
    tags: str
    keys: str
    store_host: str
    client_host: str  # the host that wrote the record (the trace message's born host, without its port)
    cost_time: int
    msg_type: str  # the record's TraceType name: Pub, SubBefore, SubAfter
    offset_msg_id: str
    time_stamp: int
    topic: str
    group_name: str
    status: str  # "success" or "failed"
    request_id: str = ""


def born_host_string(born_host: str) -> str:
    """MessageExt.getBornHostString: the address alone, as InetAddress.getHostAddress writes it (an IPv6 one in
    full, its groups without leading zeros: 0:0:0:0:0:0:0:1)."""
    host = born_host.rpartition(":")[0] if ":" in born_host else born_host
    if host.startswith("["):
        try:
            return ":".join(f"{int(group, 16):x}" for group in ipaddress.IPv6Address(host[1:-1]).exploded.split(":"))
        except ValueError:
            return host
    return host


def decode_from_trace_trans_data(key: str, message: MessageExt) -> list[TraceView]:
    """The records of the trace message ``message`` about the message ``key`` (TraceView.decodeFromTraceTransData);
    a body that does not decode gives none."""
    body = message.body.decode("utf-8", "replace")
    try:
        contexts = decoder_from_trace_data_string(body)
    except ValueError:
        return []
    views: list[TraceView] = []
    for ctx in contexts:
        bean = ctx.trace_beans[0]
        if bean.msg_id != key:
            continue
        views.append(TraceView(
            msg_id=bean.msg_id, tags=bean.tags, keys=bean.keys, store_host=bean.store_host,
            client_host=born_host_string(message.born_host), cost_time=ctx.cost_time, msg_type=ctx.trace_type.value,
            offset_msg_id=bean.offset_msg_id, time_stamp=ctx.time_stamp, topic=bean.topic,
            group_name=ctx.group_name, status="success" if ctx.success else "failed", request_id=ctx.request_id,
        ))
    return views


def fill_consumer_groups(views: list[TraceView]) -> None:
    """A SubAfter record carries no group; take it from the SubBefore of the same consume (same requestId).
    (RocketMQ's tool prints the SubAfter's missing group as null.)"""
    groups = {v.request_id: v.group_name for v in views if v.msg_type == TraceType.SubBefore.value}
    for v in views:
        if v.msg_type == TraceType.SubAfter.value and not v.group_name:
            v.group_name = groups.get(v.request_id, "")
