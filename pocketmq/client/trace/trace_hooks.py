"""SendMessageTraceHookImpl, ConsumeMessageTraceHookImpl and EndTransactionTraceHookImpl: the records a traced
send, a traced listener call and a transaction's end leave with the dispatcher (a Pub per send; a SubBefore and a
SubAfter per listener call; an EndTransaction per END_TRANSACTION)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pocketmq.common.constants import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MSG_REGION,
    PROPERTY_TAGS,
    PROPERTY_TRACE_SWITCH,
)
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_TRACE_REGION_ID as DEFAULT_REGION
from pocketmq.remoting.client_body import MessageQueue

from ..message import Message, SendResult, SendStatus
from ..message_const import PROPERTY_TRANSACTION_PREPARED
from .async_trace_dispatcher import AsyncTraceDispatcher
from .trace_context import ConsumeReturnType, MessageType, TraceBean, TraceContext, TraceType


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _msg_type(msg: Message) -> MessageType:
    props = msg.properties
    if props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        return MessageType.Trans_Msg_Half
    if props.get(PROPERTY_DELAY_TIME_LEVEL, "0") not in ("", "0"):
        return MessageType.Delay_Msg
    return MessageType.Normal_Msg


class SendMessageTraceHook:
    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def send_message_before(self, msg: Message, mq: MessageQueue, broker_addr: str | None) -> TraceContext | None:
        if msg.topic == self.dispatcher.trace_topic:
            return None  # trace messages are not traced
        bean = TraceBean(
            topic=msg.topic, tags=msg.tags or "", keys=msg.properties.get(PROPERTY_KEYS, ""),
            store_host=broker_addr or "", body_length=len(msg.body), msg_type=_msg_type(msg),
        )
        return TraceContext(TraceType.Pub, group_name=self.group, trace_beans=[bean])

    def send_message_after(self, ctx: TraceContext | None, result: SendResult | None) -> None:
        """After a send that got an answer (a oneway send gets none, a failed send raised: neither is traced)."""
        if ctx is None or result is None or not result.trace_on:  # (the broker's traceOn=false: no record)
            return
        bean = ctx.trace_beans[0]
        ctx.cost_time = _now_ms() - ctx.time_stamp
        ctx.success = result.send_status is SendStatus.SEND_OK
        ctx.region_id = result.region_id
        bean.msg_id = result.msg_id
        bean.offset_msg_id = result.offset_msg_id
        bean.store_time = ctx.time_stamp + ctx.cost_time // 2
        self.dispatcher.append(ctx)


class ConsumeMessageTraceHook:
    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def consume_message_before(self, msgs: Sequence[MessageExt]) -> TraceContext | None:
        beans: list[TraceBean] = []
        region = ""
        for msg in msgs:
            props = msg.properties
            if props.get(PROPERTY_TRACE_SWITCH) == "false":
                continue
            region = props.get(PROPERTY_MSG_REGION, region)
            beans.append(TraceBean(
                topic=msg.topic, msg_id=msg.msg_id, tags=msg.tags or "", keys=props.get(PROPERTY_KEYS, ""),
                store_time=msg.store_timestamp, body_length=msg.store_size, retry_times=msg.reconsume_times,
                store_host=msg.store_host,
            ))
        if not beans:
            return None
        ctx = TraceContext(TraceType.SubBefore, group_name=self.group, region_id=region or DEFAULT_REGION,
                           trace_beans=beans)
        self.dispatcher.append(ctx)
        return ctx

    def consume_message_after(
        self, before: TraceContext | None, msg_count: int, success: bool, return_type: ConsumeReturnType
    ) -> None:
        if before is None:
            return
        after = TraceContext(
            TraceType.SubAfter, region_id=before.region_id, group_name=before.group_name,
            request_id=before.request_id, success=success,
            cost_time=(_now_ms() - before.time_stamp) // max(msg_count, 1), context_code=int(return_type),
            trace_beans=before.trace_beans,
        )
        self.dispatcher.append(after)


class EndTransactionTraceHook:
    """EndTransactionTraceHookImpl: an EndTransaction record each time a transaction producer tells a broker how a
    transaction ended, after its local transaction or after a check-back."""

    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def end_transaction(self, msg: Message | MessageExt, msg_id: str, broker_addr: str, state: str,
                        transaction_id: str | None, from_check: bool) -> None:
        if msg.topic == self.dispatcher.trace_topic:
            return
        props = msg.properties
        bean = TraceBean(topic=msg.topic, msg_id=msg_id, tags=props.get(PROPERTY_TAGS, ""),
                         keys=props.get(PROPERTY_KEYS, ""), store_host=broker_addr,
                         msg_type=MessageType.Trans_msg_Commit, transaction_id=transaction_id or "",
                         transaction_state=state, from_transaction_check=from_check)
        self.dispatcher.append(TraceContext(TraceType.EndTransaction, group_name=self.group,
                                            region_id=props.get(PROPERTY_MSG_REGION) or DEFAULT_REGION,
                                            trace_beans=[bean]))
