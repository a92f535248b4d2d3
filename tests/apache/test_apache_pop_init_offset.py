"""A group's first POP of queues it has no offset of, empty ones among them, against Apache RocketMQ 5.5.0's broker
(native protocol): initMode MIN and MAX, orderly and not, all queues (queueId -1) and one, over an empty topic and
over one whose queue 1 holds two messages. What the pop leaves: QUERY_CONSUMER_OFFSET of each queue, the group's
row of the broker's offset table (GET_ALL_CONSUMER_OFFSET, as consumerOffset.json holds it) and GET_CONSUME_STATS;
then two messages sent to every queue and popped with the other initMode, and once more: the same messages from
both brokers, none lost, none twice.

Both brokers run with initPopOffsetByCheckMsgInMem=false (Apache's set by UPDATE_BROKER_CONFIG and put back after
the module, pocketmq's at its start): with it on, a MAX pop of a queue whose first message is still in memory reads
from 0, as MIN does, and the offset the first pop committed would not show in what the second pop returns."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import parse_extra_info, parse_start_offset_info, receipt_handle
from pocketmq.common.mq_version import V5_0_0
from pocketmq.common.pop_ack_constants import CONSUME_INIT_MODE_MAX, CONSUME_INIT_MODE_MIN, PROPERTY_POP_CK
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.admin_stats import ConsumeStats
from pocketmq.remoting.body_codec import decode_body
from pocketmq.remoting.codes import BodyDialect, ResponseCode
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import call, request
from .differential_requests import create_group, create_topic, send_v2

RUN = uuid.uuid4().hex[:6]
QUEUES = 4
ONE_QUEUE = 2  # the queue a single-queue pop names: empty before the sends, in both topics
FILLED = 1  # the queue that holds two messages before the first pop, in the partly filled topic
CHECK_IN_MEM = "initPopOffsetByCheckMsgInMem"

CASES = list(itertools.product((CONSUME_INIT_MODE_MIN, CONSUME_INIT_MODE_MAX), (False, True), (-1, ONE_QUEUE),
                               (False, True)))


def _case_id(case: tuple[int, bool, int, bool]) -> str:
    mode, order, queue_id, filled = case
    return "-".join(("min" if mode == CONSUME_INIT_MODE_MIN else "max", "orderly" if order else "concurrent",
                     "all" if queue_id == -1 else f"q{queue_id}", "partly" if filled else "empty"))


class Side:
    def __init__(self, broker: str, broker_name: str, case: tuple[int, bool, int, bool]) -> None:
        self.broker, self.broker_name = broker, broker_name
        self.mode, self.order, self.queue_id, self.filled = case
        self.topic = f"PopInit{RUN}{CASES.index(case)}"
        self.group = f"GPopInit{RUN}{CASES.index(case)}"
        self.sent = [0] * QUEUES

    def send(self, queue_id: int, n: int) -> None:
        for _ in range(n):
            body = b"q%d-%d" % (queue_id, self.sent[queue_id])
            assert call(self.broker, send_v2(self.topic, body, queue_id=queue_id)).code == 0
            self.sent[queue_id] += 1
        deadline = time.monotonic() + 30
        max_offset = request(R.GET_MAX_OFFSET, {"topic": self.topic, "queueId": queue_id})
        while call(self.broker, max_offset).ext.get("offset") != str(self.sent[queue_id]):
            assert time.monotonic() < deadline, "the messages never reached the consume queue"
            time.sleep(0.05)

    def pop(self, mode: int) -> tuple[int, list[str]]:
        """One pop (its messages acked at once): its code and the bodies it returned."""
        a = call(self.broker, request(R.POP_MESSAGE, {
            "consumerGroup": self.group, "topic": self.topic, "queueId": self.queue_id, "maxMsgNums": 32,
            "invisibleTime": 60_000, "pollTime": 0, "bornTime": int(time.time() * 1000), "initMode": mode,
            "expType": "TAG", "exp": "*", "order": self.order}))
        if a.code != ResponseCode.SUCCESS:
            return a.code, []
        starts = parse_start_offset_info(a.ext.get("startOffsetInfo"))
        messages = decode_all(a.raw_body or b"")
        for m in messages:
            handle = receipt_handle(m.topic, m.queue_id, m.queue_offset, m.properties.get(PROPERTY_POP_CK), starts,
                                    int(a.ext["popTime"]), int(a.ext["invisibleTime"]), int(a.ext["reviveQid"]),
                                    self.broker_name)
            e = parse_extra_info(handle)
            ack = call(self.broker, request(R.ACK_MESSAGE, {
                "consumerGroup": self.group, "topic": self.topic, "queueId": e.queue_id, "extraInfo": handle,
                "offset": e.queue_offset}))
            assert ack.code == ResponseCode.SUCCESS, ack.remark
        return a.code, sorted(m.body.decode() for m in messages)

    def offsets(self) -> dict[str, Any]:
        """What the broker says of the group's offsets: QUERY_CONSUMER_OFFSET of each queue (code, offset), the
        group's row of the offset table (GET_ALL_CONSUMER_OFFSET) and GET_CONSUME_STATS of the topic (each queue's
        broker, consumer and pull offsets; whether it has a last consumed time)."""
        queried = []
        for q in range(QUEUES):
            a = call(self.broker, request(R.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": self.group, "topic": self.topic, "queueId": q}))
            queried.append((a.code, a.ext.get("offset")))
        everything = call(self.broker, request(R.GET_ALL_CONSUMER_OFFSET)).body["offsetTable"]
        table = {k.replace(self.group, "<group>").replace(self.topic, "<topic>"): v for k, v in everything.items()
                 if k.endswith(f"@{self.group}")}
        stats_request = request(R.GET_CONSUME_STATS, {"consumerGroup": self.group, "topic": self.topic})
        stats_request.version = V5_0_0  # (as a 5.x client asks: each queue's pullOffset answered)
        a = call(self.broker, stats_request)
        assert a.code == ResponseCode.SUCCESS, a.remark
        stats = decode_body(a.raw_body, ConsumeStats, BodyDialect.FASTJSON)
        rows = {mq.queue_id: (w.broker_offset, w.consumer_offset, w.pull_offset, w.last_timestamp > 0)
                for mq, w in stats.offset_table.items() if mq.topic == self.topic}
        return {"queried": queried, "table": table, "stats": [rows.get(q) for q in range(QUEUES)]}

    def settled_offsets(self, want: dict[str, Any] | None) -> dict[str, Any]:
        """The offsets; with ``want``, once they are that (pocketmq's pop buffer commits an acked pop's offset
        shortly after the ack, Apache's at the pop)."""
        deadline = time.monotonic() + 30
        while True:
            got = self.offsets()
            if want is None or got == want or time.monotonic() > deadline:
                return got
            time.sleep(0.05)


def _rows(s: Side, want: list[Any] | None = None) -> list[Any]:
    assert call(s.broker, create_topic(s.topic, QUEUES)).code == 0
    assert call(s.broker, create_group(s.group)).code == 0
    if s.filled:
        s.send(FILLED, 2)
    rows: list[Any] = [s.pop(s.mode)]
    rows.append(s.settled_offsets(want[1] if want else None))
    for q in range(QUEUES):
        s.send(q, 2)
    other = CONSUME_INIT_MODE_MAX if s.mode == CONSUME_INIT_MODE_MIN else CONSUME_INIT_MODE_MIN
    rows += [s.pop(other), s.pop(other)]
    rows.append(s.settled_offsets(want[4] if want else None))
    return rows


def _as_pocketmq(rows: list[Any]) -> list[Any]:
    """Apache's rows as pocketmq must answer them: a QUERY_CONSUMER_OFFSET of a queue the group has no offset of
    and whose offset 0 holds no message 5.5.0 answers QUERY_NOT_FOUND, pocketmq 0 as 4.9.7 (docs/compatibility.md,
    "QUERY_CONSUMER_OFFSET of a group new to an empty queue"). The offset table, which tells the two apart, is
    compared as it is."""
    out = []
    for row in rows:
        if isinstance(row, dict):
            queried = [(0, "0") if q == (ResponseCode.QUERY_NOT_FOUND, None) else q for q in row["queried"]]
            row = {**row, "queried": queried}
        out.append(row)
    return out


@pytest.fixture(scope="module")
def brokers(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    apache = apache_rocketmq5.broker_addr
    was = call(apache, request(R.GET_BROKER_CONFIG)).raw_body or b""
    before = next(line.split("=", 1)[1] for line in was.decode().splitlines() if line.startswith(CHECK_IN_MEM + "="))
    off = request(R.UPDATE_BROKER_CONFIG, body=f"{CHECK_IN_MEM}=false\n".encode())
    assert call(apache, off).code == 0
    try:
        with ThreadedCluster(tmp_path_factory.mktemp("pop-init-offset"),
                             init_pop_offset_by_check_msg_in_mem=False) as pocket:
            yield apache, pocket.broker_addr
    finally:
        back = request(R.UPDATE_BROKER_CONFIG, body=f"{CHECK_IN_MEM}={before}\n".encode())
        assert call(apache, back).code == 0


def _expected_of_apache(case: tuple[int, bool, int, bool]) -> list[Any]:
    """What 5.5.0 answers, as far as it follows from the case: every queue the first pop reads gets offset 0 in the
    table if it is empty (whatever the initMode; from MAX a queue holding messages starts at its last one), and
    the second pop, from the committed offsets, brings what was sent after the first, once."""
    mode, _, queue_id, filled = case
    read = range(QUEUES) if queue_id == -1 else [queue_id]
    first = ["q1-0", "q1-1"] if mode == CONSUME_INIT_MODE_MIN else ["q1-1"]
    first_pop = (0, first) if filled and queue_id == -1 else (ResponseCode.POLLING_TIMEOUT, [])
    after_first = {str(q): 2 if filled and q == FILLED else 0 for q in read}
    sent = sorted(f"q{q}-{i}" for q in read for i in ((2, 3) if filled and q == FILLED else (0, 1)))
    after_second = {str(q): 4 if filled and q == FILLED else 2 for q in read}
    return [first_pop, {"<topic>@<group>": after_first}, (0, sent), (ResponseCode.POLLING_TIMEOUT, []),
            {"<topic>@<group>": after_second}]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_a_first_pop_of_empty_queues_commits_and_answers_as_apache_5(
        brokers: tuple[str, str], apache_rocketmq5: ApacheRocketMQ, case: tuple[int, bool, int, bool]) -> None:
    apache, pocket = brokers
    want = _rows(Side(apache, apache_rocketmq5.broker_name, case))
    assert [r["table"] if isinstance(r, dict) else r for r in want] == _expected_of_apache(case)
    got = _rows(Side(pocket, "broker-a", case), _as_pocketmq(want))
    assert got == _as_pocketmq(want)
