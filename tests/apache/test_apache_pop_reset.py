"""A per-queue offset reset (INVOKE_BROKER_TO_RESET_OFFSET with a queue id, as 5.5.0's admin sends it) and POP
consumers: the same raw requests to pocketmq and to Apache RocketMQ 5.5.0's broker (native protocol). The group's
next pop of the queue takes the reset (ending the hold on its commits), lets go of an orderly batch still out and
pops from the reset offset; an orderly ack meanwhile does not commit over it."""

from __future__ import annotations

import time
import uuid
from typing import Any

from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import parse_extra_info, parse_start_offset_info, receipt_handle
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import call, request
from .differential_requests import create_group, create_topic, send_v2


class Side:
    def __init__(self, broker: str, broker_name: str) -> None:
        self.broker, self.broker_name = broker, broker_name
        self.topic = f"PopRst{uuid.uuid4().hex[:8]}"

    def prepare(self, *groups: str) -> None:
        assert call(self.broker, create_topic(self.topic, 2)).code == 0
        for group in groups:
            assert call(self.broker, create_group(group)).code == 0
        for i in range(6):
            assert call(self.broker, send_v2(self.topic, b"%d" % i, queue_id=0)).code == 0
        deadline = time.monotonic() + 30
        max_offset = request(R.GET_MAX_OFFSET, {"topic": self.topic, "queueId": 0})
        while call(self.broker, max_offset).ext.get("offset") != "6":
            assert time.monotonic() < deadline, "the messages never reached the consume queue"
            time.sleep(0.1)

    def pop(self, group: str, n: int, order: bool = False) -> tuple[int, list[int], list[str]]:
        a = call(self.broker, request(R.POP_MESSAGE, {
            "consumerGroup": group, "topic": self.topic, "queueId": 0, "maxMsgNums": n, "invisibleTime": 60_000,
            "pollTime": 0, "bornTime": int(time.time() * 1000), "initMode": 1, "expType": "TAG", "exp": "*",
            "order": order}))
        if a.code != 0:
            return a.code, [], []
        starts = parse_start_offset_info(a.ext.get("startOffsetInfo"))
        messages = decode_all(a.raw_body or b"")
        handles = [receipt_handle(m.topic, m.queue_id, m.queue_offset, m.properties.get(PROPERTY_POP_CK), starts,
                                  int(a.ext["popTime"]), int(a.ext["invisibleTime"]), int(a.ext["reviveQid"]),
                                  self.broker_name) for m in messages]
        return a.code, [m.queue_offset for m in messages], handles

    def ack(self, group: str, handles: list[str]) -> list[int]:
        codes = []
        for h in handles:
            e = parse_extra_info(h)
            codes.append(call(self.broker, request(R.ACK_MESSAGE, {
                "consumerGroup": group, "topic": self.topic, "queueId": e.queue_id, "extraInfo": h,
                "offset": e.queue_offset})).code)
        return codes

    def offset(self, group: str, want: int | None = None) -> str | None:
        """The group's offset of queue 0; with ``want``, once it is that (a pop's commit may come after it)."""
        deadline = time.monotonic() + 30
        while True:
            got = call(self.broker, request(R.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": group, "topic": self.topic, "queueId": 0})).ext.get("offset")
            if want is None or got == str(want) or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def commit(self, group: str, offset: int) -> tuple[int, str | None]:
        a = call(self.broker, request(R.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": group, "topic": self.topic, "queueId": 0, "commitOffset": offset}))
        return a.code, a.remark

    def reset(self, group: str, offset: int) -> int:
        self.commit(group, offset)  # as the admin's resetOffsetByQueueId does first
        return call(self.broker, request(R.INVOKE_BROKER_TO_RESET_OFFSET, {
            "topic": self.topic, "group": group, "timestamp": 0, "isForce": False, "queueId": 0,
            "offset": offset})).code

    def pull(self, group: str, offset: int) -> int:
        return call(self.broker, request(R.PULL_MESSAGE, {
            "consumerGroup": group, "topic": self.topic, "queueId": 0, "queueOffset": offset, "maxMsgNums": 32,
            "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*",
            "expressionType": "TAG"})).code


def _rows(s: Side) -> list[Any]:
    g, go, gc = "GPopRst", "GOrdRst", "GOrdAckRst"
    s.prepare(g, go, gc)
    rows: list[Any] = []
    code, offsets, _ = s.pop(g, 3)
    rows += [code, offsets, s.reset(g, 1), s.commit(g, 4), s.offset(g)]
    code, offsets, handles = s.pop(g, 32)
    rows += [code, offsets, s.ack(g, handles), s.offset(g, 6), s.commit(g, 3), s.offset(g), s.pull(g, 6)]
    code, offsets, out = s.pop(go, 2, order=True)
    rows += [code, offsets, s.pop(go, 2, order=True)[:2], s.reset(go, 4)]
    code, offsets, after = s.pop(go, 2, order=True)
    rows += [code, offsets, s.ack(go, out), s.offset(go), s.ack(go, after), s.offset(go, 6)]
    s.commit(gc, 1)
    code, offsets, out = s.pop(gc, 3, order=True)
    rows += [code, offsets, s.reset(gc, 0), s.ack(gc, out), s.offset(gc), s.pop(gc, 2, order=True)[:2],
             s.commit(gc, 5), s.offset(gc)]
    return rows


def test_pop_after_a_per_queue_reset_as_apache_5(apache_rocketmq5: ApacheRocketMQ, tmp_path: Any) -> None:
    want = _rows(Side(apache_rocketmq5.broker_addr, apache_rocketmq5.broker_name))
    held = (0, "Offset has been previously reset")
    assert want == [
        0, [0, 1, 2], 0, held, "1", 0, [1, 2, 3, 4, 5], [0] * 5, "6", (0, None), "3", ResponseCode.PULL_NOT_FOUND,
        0, [0, 1], (ResponseCode.POLLING_TIMEOUT, []), 0, 0, [4, 5], [0, 0], "4", [0, 0], "6",
        0, [1, 2, 3], 0, [0, 0, 0], "0", (0, [0, 1]), (0, None), "5",
    ]
    # (pocketmq's default enablePopBufferMerge=true: a pop's offset is committed once its messages are acked)
    with ThreadedCluster(tmp_path) as pocket:
        assert _rows(Side(pocket.broker_addr, "broker-a")) == want


def _orderly_ack_rows(s: Side) -> list[Any]:
    """An orderly batch out while the group's offset is committed past part of it (a pull-mode member's commit): an
    ack commits the batch's first offset not yet acked, backwards too, so what the batch has not acked comes
    again."""
    g = "GOrdBack"
    s.prepare(g)
    code, offsets, out = s.pop(g, 3, order=True)
    rows: list[Any] = [code, offsets, s.commit(g, 2)[0], s.offset(g)]
    for i in (2, 0, 1):
        rows += [s.ack(g, [out[i]]), s.offset(g)]
    return [*rows, s.pop(g, 2, order=True)[:2]]


def test_an_orderly_ack_commits_the_batchs_next_offset_even_backwards_as_apache(apache_rocketmq5: ApacheRocketMQ,
                                                                                tmp_path: Any) -> None:
    want = _orderly_ack_rows(Side(apache_rocketmq5.broker_addr, apache_rocketmq5.broker_name))
    assert want == [0, [0, 1, 2], 0, "2", [0], "0", [0], "1", [0], "3", (0, [3, 4])]
    with ThreadedCluster(tmp_path) as pocket:
        assert _orderly_ack_rows(Side(pocket.broker_addr, "broker-a")) == want


def _full_pop_rows(s: Side) -> list[Any]:
    """Both queues of the topic reset while the group is away; one pop of a single message from any queue: it fills
    from the first queue it reads, and still takes the other queue's reset (its commits count again after it)."""
    g = "GPopFull"
    s.prepare(g)
    for i in range(3):
        assert call(s.broker, send_v2(s.topic, b"q1-%d" % i, queue_id=1)).code == 0
    deadline = time.monotonic() + 30
    while call(s.broker, request(R.GET_MAX_OFFSET, {"topic": s.topic, "queueId": 1})).ext.get("offset") != "3":
        assert time.monotonic() < deadline, "queue 1's messages never reached its consume queue"
        time.sleep(0.1)
    rows: list[Any] = []
    for q in (0, 1):
        rows += [call(s.broker, request(R.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": g, "topic": s.topic, "queueId": q, "commitOffset": 2})).code,
            call(s.broker, request(R.INVOKE_BROKER_TO_RESET_OFFSET, {
                "topic": s.topic, "group": g, "timestamp": 0, "isForce": False, "queueId": q, "offset": 1})).code]
    a = call(s.broker, request(R.POP_MESSAGE, {
        "consumerGroup": g, "topic": s.topic, "queueId": -1, "maxMsgNums": 1, "invisibleTime": 60_000,
        "pollTime": 0, "bornTime": int(time.time() * 1000), "initMode": 1, "expType": "TAG", "exp": "*"}))
    rows += [a.code, [m.queue_offset for m in decode_all(a.raw_body or b"")]]
    for q in (0, 1):
        commit = call(s.broker, request(R.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": g, "topic": s.topic, "queueId": q, "commitOffset": 3}))
        rows.append((commit.code, commit.remark))
    return rows


def test_a_full_pop_still_takes_the_reset_of_the_queues_it_did_not_read_as_apache(
        apache_rocketmq5: ApacheRocketMQ, tmp_path: Any) -> None:
    want = _full_pop_rows(Side(apache_rocketmq5.broker_addr, apache_rocketmq5.broker_name))
    assert want == [0, 0, 0, 0, 0, [1], (0, None), (0, None)]
    with ThreadedCluster(tmp_path) as pocket:
        assert _full_pop_rows(Side(pocket.broker_addr, "broker-a")) == want


def _offline_pull_rows(s: Side) -> list[Any]:
    """A pulling group with no consumer online: queue 0 (6 messages) committed at 6, reset to 2 by queue id; a commit
    while the reset is held; a pull at 6 without the subscription flag (refused before the reset is looked at, the
    hold stays), then one with it (sysFlag 4, as a pull consumer with no heartbeat sends it: it takes the reset);
    a commit after it."""
    g = "GPullRstOff"
    s.prepare(g)
    rows: list[Any] = [s.commit(g, 6)[0], s.offset(g)]
    rows.append(call(s.broker, request(R.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": s.topic, "group": g, "timestamp": "0", "isForce": "false", "queueId": "0", "offset": "2"})).code)
    rows += [s.offset(g), s.commit(g, 5)[0], s.offset(g)]
    for sys_flag in (0, 4):
        a = call(s.broker, request(R.PULL_MESSAGE, {
            "consumerGroup": g, "topic": s.topic, "queueId": 0, "queueOffset": 6, "maxMsgNums": 32,
            "sysFlag": sys_flag, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0,
            "expressionType": "TAG"}))
        rows += [a.code, a.ext.get("nextBeginOffset"), s.commit(g, 4)[0], s.offset(g)]
    return rows


def test_a_per_queue_reset_of_an_offline_pulling_group_as_apache(apache_rocketmq5: ApacheRocketMQ,
                                                                tmp_path: Any) -> None:
    want = _offline_pull_rows(Side(apache_rocketmq5.broker_addr, apache_rocketmq5.broker_name))
    assert want == [
        0, "6", ResponseCode.SUCCESS, "2", 0, "2",
        ResponseCode.SUBSCRIPTION_NOT_EXIST, None, 0, "2",  # no consumer online and no subscription flag: held still
        ResponseCode.PULL_OFFSET_MOVED, "2", 0, "4",
    ]
    with ThreadedCluster(tmp_path) as pocket:
        assert _offline_pull_rows(Side(pocket.broker_addr, "broker-a")) == want
