"""POP over a raw connection (``broker_harness.MQ``): pop, ack, batch ack and change invisible time, receipt
handles made as RocketMQ's client makes them. Shared by the broker's POP tests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from broker_harness import MQ

from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import parse_extra_info, parse_start_offset_info, receipt_handle
from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import BodyDialect, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_body import BatchAck, BatchAckMessageRequestBody
from pocketmq.remoting.pop_header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)


@dataclass
class Popped:
    response: RemotingCommand
    header: PopMessageResponseHeader | None = None
    messages: list[MessageExt] = field(default_factory=list)
    handles: list[str] = field(default_factory=list)

    @property
    def bodies(self) -> list[bytes]:
        return [m.body for m in self.messages]


class PopClient:
    def __init__(self, mq: MQ, broker_name: str = "broker", native: bool = False) -> None:
        self.mq = mq
        self.broker_name = broker_name
        self.dialect = BodyDialect.FASTJSON if native else BodyDialect.MSGPACK

    async def pop(self, group: str, topic: str, queue_id: int = -1, *, max_nums: int = 32,
                  invisible: int = 60_000, poll: int = 0, order: bool = False, exp: str | None = None,
                  init_mode: int = 0, attempt_id: str | None = None, timeout: float = 5.0,
                  exp_type: str | None = None) -> Popped:
        """``exp_type``: TAG when an ``exp`` is given and no type."""
        if exp_type is None and exp:
            exp_type = "TAG"
        header = PopMessageRequestHeader(group, topic, queue_id, max_nums, invisible, poll, time.time_ns() // 1_000_000,
                                         init_mode, exp_type, exp, order, attempt_id)
        resp = await self.mq.invoke(RequestCode.POP_MESSAGE, header, timeout=timeout + poll / 1000)
        out = Popped(resp)
        if resp.code != ResponseCode.SUCCESS:
            return out
        h = out.header = resp.decode_header(PopMessageResponseHeader)
        starts = parse_start_offset_info(h.start_offset_info)
        out.messages = decode_all(resp.body)
        for m in out.messages:
            out.handles.append(receipt_handle(m.topic, m.queue_id, m.queue_offset, m.properties.get(PROPERTY_POP_CK),
                                              starts, h.pop_time, h.invisible_time, h.revive_qid, self.broker_name))
        return out

    async def ack(self, group: str, topic: str, handle: str) -> RemotingCommand:
        extra = parse_extra_info(handle)
        return await self.mq.invoke(RequestCode.ACK_MESSAGE, AckMessageRequestHeader(
            group, extra.real_topic(topic, group), extra.queue_id, handle, extra.queue_offset))

    async def ack_all(self, group: str, topic: str, popped: Popped) -> None:
        for handle in popped.handles:
            resp = await self.ack(group, topic, handle)
            assert resp.code == ResponseCode.SUCCESS, resp.remark

    async def batch_ack(self, group: str, topic: str, handles: list[str]) -> RemotingCommand:
        acks: dict[tuple[Any, ...], BatchAck] = {}
        for handle in handles:
            e = parse_extra_info(handle)
            key = (e.retry, e.queue_id, e.ck_queue_offset, e.pop_time, e.revive_qid)
            b = acks.setdefault(key, BatchAck(group, topic, e.retry, e.ck_queue_offset, e.queue_id, e.revive_qid,
                                              e.pop_time, e.invisible_time))
            b.offsets.append(e.queue_offset - e.ck_queue_offset)
        body = BatchAckMessageRequestBody(self.broker_name, list(acks.values()))
        return await self.mq.invoke(RequestCode.BATCH_ACK_MESSAGE, None, encode_body(body, self.dialect))

    async def change_invisible(
        self, group: str, topic: str, handle: str, invisible: int
    ) -> tuple[RemotingCommand, str]:
        """The response and the message's new receipt handle."""
        e = parse_extra_info(handle)
        real = e.real_topic(topic, group)
        resp = await self.mq.invoke(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ChangeInvisibleTimeRequestHeader(
            group, real, e.queue_id, handle, e.queue_offset, invisible))
        if resp.code != ResponseCode.SUCCESS:
            return resp, handle
        h = resp.decode_header(ChangeInvisibleTimeResponseHeader)
        new = f"{e.queue_offset if not e.is_order else e.ck_queue_offset} {h.pop_time} {h.invisible_time} " \
              f"{h.revive_qid} {e.retry} {e.broker_name} {e.queue_id} {e.queue_offset}"
        return resp, new


async def set_retry_max_times(pc: PopClient, group: str, times: int) -> None:
    body = encode_body(SubscriptionGroupConfig(group, retry_max_times=times), pc.dialect)
    resp = await pc.mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
