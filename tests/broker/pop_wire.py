"""POP over a raw connection (``broker_harness.MQ``): pop, ack, batch ack and change invisible time, receipt
handles made as RocketMQ's client makes them. Shared by the broker's POP tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker_harness import MQ

from pocketmq.common.codec import decode_all
from pocketmq.common.constants import PROPERTY_REAL_TOPIC, PROPERTY_TIMER_OUT_MS
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
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC

# The revive service every 20 ms, timer slots of 50 ms, checkpoints in their revive queue 50 ms before they are due
# and revived 50 ms after the acks due with them could be (RocketMQ: 1 s, 1 s and 1 s + 1 s).
FAST_REVIVE: dict[str, Any] = dict(revive_interval=0.02, timer_precision_ms=50, pop_ack_time_interval=0.05,
                                   pop_revive_margin=0.05)


def read_queue(store: Any, topic: str, queue_id: int) -> list[MessageExt]:
    out: list[MessageExt] = []
    offset = 0
    while True:
        result = store.get_message("x", topic, queue_id, offset, 32)
        if not result.message_count:
            return out
        out += decode_all(result.body)
        offset = result.next_begin_offset


def revive_records(broker: Any) -> list[MessageExt]:
    """Every checkpoint and ack record written so far: those waiting in the timer wheel's queue for their deliver
    time, and those put in their revive queue at once (due when written); not the timer's delivered copies."""
    revive_topic = broker.pop_message_processor.revive_log.revive_topic
    out = [m for m in read_queue(broker.store, TIMER_TOPIC, 0) if m.properties.get(PROPERTY_REAL_TOPIC) == revive_topic]
    for q in range(broker.broker_config.revive_queue_num):
        out += [m for m in read_queue(broker.store, revive_topic, q) if PROPERTY_TIMER_OUT_MS not in m.properties]
    return out


async def settle_revive(broker: Any, guard: float = 120.0, each_round: Callable[[], None] | None = None) -> None:
    """Revive rounds until every checkpoint and ack written so far has come through the timer to its revive queue
    and been read, and the service holds nothing: each checkpoint is revived or acked. ``guard``: a bound for a
    loaded machine, not an expectation; ``each_round``: called after each round."""
    revive = broker.pop_revive_service
    store = broker.store
    deadline = time.monotonic() + guard
    while True:
        await asyncio.to_thread(store.wait_dispatched, 5.0)
        await revive.revive_all()
        if each_round is not None:
            each_round()
        # (what the round wrote, a re-put checkpoint or a done mark, counted below once dispatched)
        await asyncio.to_thread(store.wait_dispatched, 5.0)
        ends = [store.get_max_offset_in_queue(revive.revive_topic, q.queue_id) for q in revive.queues]
        read = all(q.offset == end or end <= 0 for q, end in zip(revive.queues, ends, strict=True))
        if read and not revive.held_count and sum(ends) == len(revive_records(broker)):
            return
        assert time.monotonic() < deadline, f"revive not settled: {revive.held_count} held"
        await asyncio.sleep(0.01)


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
