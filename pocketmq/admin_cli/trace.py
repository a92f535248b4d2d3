"""Message trace command: queryMsgTraceById (the publish and consume spans of one message)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.trace import RMQ_SYS_TRACE_TOPIC, TraceView, decode_from_trace_trans_data
from pocketmq.client.trace.trace_view import fill_consumer_groups
from pocketmq.common.java_hash import hash_map_order

from .common import Printable, command

_ROW = "%-10s %-20s %-20s %-20s %-10s %-10s"  # QueryMsgTraceByIdSubCommand's printf


def add(sub: Any) -> None:
    p = command(sub, "queryMsgTraceById", "Query a message trace", query_msg_trace_by_id,
                describe="The trace of a message (producers and consumers with enable_msg_trace): who sent it, "
                "who consumed it, when, how long it took and whether it succeeded.")
    p.add_argument("-i", "--msgId", required=True, help="Message Id (what the send returned)")
    p.add_argument("-t", "--traceTopic", default=RMQ_SYS_TRACE_TOPIC,
                   help="The name value of message trace topic (default RMQ_SYS_TRACE_TOPIC)")
    p.add_argument("-b", "--beginTimestamp", dest="begin", type=int, default=0, help="Begin timestamp(ms)")
    p.add_argument("-e", "--endTimestamp", dest="end", type=int, help="End timestamp(ms)")
    p.add_argument("--num", "--maxNum", dest="max_num", type=int, default=64,
                   help="The maximum number of trace messages the query returns (default 64)")


async def query_trace_views(
    admin: MQAdminExt, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC, max_num: int = 64, begin: int = 0,
    end: int | None = None,
) -> list[TraceView]:
    """Every trace record of ``msg_id`` in ``trace_topic``, oldest first."""
    views: list[TraceView] = []
    for message in await admin.query_message(trace_topic, msg_id.strip(), max_num, begin, end):
        views += decode_from_trace_trans_data(msg_id.strip(), message)
    fill_consumer_groups(views)
    views.sort(key=lambda v: v.time_stamp)
    return views


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def trace_lines(views: list[TraceView]) -> list[str]:
    """printMessageTrace: each Pub under its header, then each consumer group's SubAfter records."""
    lines: list[str] = []
    for v in views:
        if v.msg_type == "Pub":
            lines.append(_ROW % ("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"))
            lines.append(_ROW % ("Pub", v.group_name, v.client_host, _time(v.time_stamp), f"{v.cost_time}ms",
                                 v.status))
            lines.append("")
    by_group: dict[str, list[TraceView]] = {}
    for v in views:
        if v.msg_type == "SubAfter":
            by_group.setdefault(v.group_name, []).append(v)
    for group in hash_map_order(by_group):  # (mqadmin's groups are a HashMap's keys)
        subs = by_group[group]
        lines.append(_ROW % ("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        for v in subs:
            lines.append(_ROW % ("Sub", group, v.client_host, _time(v.time_stamp), f"{v.cost_time}ms", v.status))
        lines.append("")
    return [line.rstrip() for line in lines]


async def query_msg_trace_by_id(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    views = await query_trace_views(admin, args.msgId, args.traceTopic, args.max_num, args.begin, args.end)
    data = [
        {"type": v.msg_type, "group": v.group_name, "clientHost": v.client_host, "timestamp": v.time_stamp,
         "costTime": v.cost_time, "status": v.status, "topic": v.topic, "tags": v.tags, "keys": v.keys,
         "storeHost": v.store_host, "offsetMsgId": v.offset_msg_id, "requestId": v.request_id}
        for v in views
    ]
    return Printable(data, trace_lines(views))
