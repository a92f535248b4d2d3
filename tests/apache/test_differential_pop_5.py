"""Malformed and edge-case POP-family requests (and a few others an audit found answered differently) sent one at a
time to Apache RocketMQ 5.5.0's broker and to pocketmq's over RocketMQ's native protocol, the answers compared
(code, remark, ext fields, body; addresses and times masked, see differential.py).

Each case prepares what it reads on both brokers under names of its own (the 5.5.0 broker is shared by the test
session), so the cases run in any order."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, request
from .differential_requests import create_group, create_topic, send_v2

RUN = uuid.uuid4().hex[:6]
MISSING = f"NoSuchPop{RUN}"
# A group name neither broker will create ('!' is no group character): SUBSCRIPTION_GROUP_NOT_EXIST on both, though
# both create unknown groups of legal names (autoCreateSubscriptionGroup).
BAD_GROUP = f"Bad!Group{RUN}"
FAR = 2**63 - 1
# Ext fields whose values depend on the broker's history (a revive queue picked by a counter) or on the order the
# queues were read in (chosen at random by both brokers): compared by name only.
HISTORY_EXT = frozenset({"reviveQid", "startOffsetInfo", "msgOffsetInfo"})


@dataclass
class Side:
    name: str
    broker: str


@dataclass
class Case:
    name: str
    build: Callable[[Side, str], RemotingCommand]  # (side, the case's own name prefix) -> request
    prepare: Callable[[Side, str], None] | None = None
    messages: bool = False  # the body carries messages: their bodies are compared, sorted
    ext_values: bool = True  # compare the ext fields' values, not only their names
    # A deliberate difference in the ext fields (docs/compatibility.md): Apache's, pocketmq's; the rest compared.
    ext_differs: tuple[dict[str, str], dict[str, str]] | None = None


def _now() -> int:
    return int(time.time() * 1000)


def pop(topic: str, group: str, queue_id: int = -1, max_nums: int = 32, exp: str | None = "*",
        exp_type: str | None = "TAG", order: bool = False) -> RemotingCommand:
    return request(R.POP_MESSAGE, {"consumerGroup": group, "topic": topic, "queueId": queue_id, "maxMsgNums": max_nums,
                                   "invisibleTime": 60_000, "pollTime": 0, "bornTime": _now(), "initMode": 0,
                                   "expType": exp_type, "exp": exp, "order": order})


def notification(topic: str, group: str, queue_id: int = -1) -> RemotingCommand:
    return request(R.NOTIFICATION, {"consumerGroup": group, "topic": topic, "queueId": queue_id, "pollTime": 0,
                                    "bornTime": _now(), "order": False})


def peek(topic: str, group: str, queue_id: int = -1, max_nums: int = 32) -> RemotingCommand:
    return request(R.PEEK_MESSAGE, {"topic": topic, "queueId": queue_id, "maxMsgNums": max_nums,
                                    "consumerGroup": group})


def polling_info(topic: str, group: str, queue_id: int = 0) -> RemotingCommand:
    return request(R.POLLING_INFO, {"consumerGroup": group, "topic": topic, "queueId": queue_id})


def extra_info(topic: str, queue_id: int = 0, offset: int = 0) -> str:
    return build_extra_info(offset, _now(), 60_000, 0, topic, "broker-a", queue_id, offset)


def ack(topic: str, group: str, queue_id: int = 0, offset: int = 0) -> RemotingCommand:
    return request(R.ACK_MESSAGE, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                   "extraInfo": extra_info(topic, queue_id, offset), "offset": offset})


def change_invisible(topic: str, group: str, queue_id: int = 0, offset: int = 0) -> RemotingCommand:
    return request(R.CHANGE_MESSAGE_INVISIBLETIME, {
        "consumerGroup": group, "topic": topic, "queueId": queue_id, "extraInfo": extra_info(topic, queue_id, offset),
        "offset": offset, "invisibleTime": 30_000})


def with_messages(side: Side, name: str) -> None:
    """The case's topic (4 queues) with two messages in queue 0 and one in queue 2, and its group."""
    assert call(side.broker, create_topic(name)).code == 0
    assert call(side.broker, create_group(name)).code == 0
    for queue_id, body in ((0, b"q0-a"), (0, b"q0-b"), (2, b"q2-a")):
        assert call(side.broker, send_v2(name, body, queue_id=queue_id)).code == 0
    deadline = time.monotonic() + 30
    for queue_id, n in ((0, 2), (2, 1)):  # (a send is answered before its consume queue entry is written)
        while call(side.broker, request(R.GET_MAX_OFFSET, {"topic": name, "queueId": queue_id})).ext.get(
                "offset") != str(n):
            assert time.monotonic() < deadline, f"{side.name}: {name} queue {queue_id} not dispatched"
            time.sleep(0.1)


def with_group(side: Side, name: str) -> None:
    assert call(side.broker, create_topic(name)).code == 0
    assert call(side.broker, create_group(name)).code == 0


# The pop each side answered in with_one_popped, by (side, case name): a change of invisible time names what it took.
POPPED: dict[tuple[str, str], Answer] = {}


def with_one_popped(side: Side, name: str, order: bool = False) -> None:
    """with_messages, then queue 0's first message popped by the case's group."""
    with_messages(side, name)
    answer = call(side.broker, pop(name, name, queue_id=0, max_nums=1, order=order))
    assert answer.code == 0, (side.name, answer)
    POPPED[side.name, name] = answer


def _popped_handle(side: Side, name: str) -> str:
    ext = POPPED[side.name, name].ext
    return build_extra_info(0, int(ext["popTime"]), int(ext["invisibleTime"]), int(ext["reviveQid"]), name,
                            "broker-a", 0, 0)


def with_one_popped_orderly_and_acked(side: Side, name: str) -> None:
    """with_messages, then queue 0's first message popped in order by the case's group and acked (the group's
    offset moves past it)."""
    with_one_popped(side, name, order=True)
    answer = call(side.broker, request(R.ACK_MESSAGE, {"consumerGroup": name, "topic": name, "queueId": 0,
                                                       "extraInfo": _popped_handle(side, name), "offset": 0}))
    assert answer.code == 0, (side.name, answer)


def change_popped(side: Side, name: str) -> RemotingCommand:
    """A change of invisible time of what with_one_popped took, with the receipt handle its pop answer makes."""
    return request(R.CHANGE_MESSAGE_INVISIBLETIME, {"consumerGroup": name, "topic": name, "queueId": 0,
                                                    "extraInfo": _popped_handle(side, name), "offset": 0,
                                                    "invisibleTime": 30_000})


CASES = [
    # 1. a negative queue id below -1 is every queue, as -1
    Case("pop of queueId -2 (every queue)", lambda s, n: pop(n, n, queue_id=-2), with_messages, messages=True),
    Case("notification of queueId -2 (every queue)", lambda s, n: notification(n, n, queue_id=-2), with_messages),
    Case("peek of queueId -2 (every queue)", lambda s, n: peek(n, n, queue_id=-2), with_messages, messages=True),
    # 2. a batch ack without acks
    Case("batch ack without a body", lambda s, n: request(R.BATCH_ACK_MESSAGE)),
    Case("batch ack with an empty body", lambda s, n: request(R.BATCH_ACK_MESSAGE, body=b"")),
    Case("batch ack with an empty list of acks", lambda s, n: request(
        R.BATCH_ACK_MESSAGE, body=json.dumps({"brokerName": "broker-a", "acks": []}).encode())),
    Case("batch ack with an empty object", lambda s, n: request(R.BATCH_ACK_MESSAGE, body=b"{}")),
    # 3. a heartbeat of nothing
    Case("heartbeat with the body {}", lambda s, n: request(R.HEART_BEAT, body=b"{}"),
         ext_differs=({"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "true"}, {})),
    # 4. a topic the broker does not have
    Case("pop of a topic that does not exist", lambda s, n: pop(MISSING, n), with_group),
    Case("ack of a topic that does not exist", lambda s, n: ack(MISSING, n), with_group),
    Case("change invisible time of a topic that does not exist", lambda s, n: change_invisible(MISSING, n),
         with_group),
    Case("notification of a topic that does not exist", lambda s, n: notification(MISSING, n), with_group),
    Case("peek of a topic that does not exist", lambda s, n: peek(MISSING, n), with_group),
    # 5. more than 32 messages
    Case("pop of 33 messages", lambda s, n: pop(n, n, max_nums=33), with_group),
    # 6. an expression that does not parse
    Case("pop with a malformed SQL92 expression", lambda s, n: pop(n, n, exp="a >>> 1", exp_type="SQL92"),
         with_messages),
    Case("pop with the tag expression '||'", lambda s, n: pop(n, n, exp="||"), with_messages),
    # 7. a change of invisible time at or past the queue's max offset
    Case("change invisible time at the max offset", lambda s, n: change_invisible(n, n, offset=2), with_messages),
    Case("change invisible time past the max offset", lambda s, n: change_invisible(n, n, offset=9), with_messages),
    # 8. a query by key that finds nothing
    Case("query a key nothing has", lambda s, n: request(R.QUERY_MESSAGE, {
        "topic": n, "key": f"nope{RUN}", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": FAR}), with_messages),
    # 9. a peek's answer: popTime 0, restNum what the queues held before it
    Case("peek of one message of three", lambda s, n: peek(n, n, queue_id=0, max_nums=1), with_messages,
         messages=True),
    Case("peek after a pop took one", lambda s, n: peek(n, n), with_one_popped, messages=True),
    Case("peek of an empty topic", lambda s, n: peek(n, n), with_group),
    # 10. a group the broker does not have (nor creates)
    Case("pop of a group that does not exist", lambda s, n: pop(n, BAD_GROUP), with_group),
    Case("peek of a group that does not exist", lambda s, n: peek(n, BAD_GROUP), with_group),
    Case("notification of a group that does not exist", lambda s, n: notification(n, BAD_GROUP), with_group),
    Case("polling info of a group that does not exist", lambda s, n: polling_info(n, BAD_GROUP), with_group),
    # 11. a change of invisible time taken
    Case("change invisible time of a popped message", change_popped, with_one_popped),
    # 12. polling info refused
    Case("polling info of a topic that does not exist", lambda s, n: polling_info(MISSING, n), with_group),
    Case("polling info of a queue past the topic's", lambda s, n: polling_info(n, n, queue_id=4), with_group),
    # 13. polling info answered
    Case("polling info of a queue nothing waits on", lambda s, n: polling_info(n, n), with_group),
    # 14. an orderly change of invisible time of what the group acked already
    Case("change invisible time of an orderly message acked", change_popped, with_one_popped_orderly_and_acked),
]


@pytest.fixture(scope="module")
def sides(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    with ThreadedCluster(tmp_path_factory.mktemp("differential-pop")) as pocket:
        yield Side("apache", apache_rocketmq5.broker_addr), Side("pocketmq", pocket.broker_addr)


def view(answer: Answer, case: Case) -> dict[str, Any]:
    out = answer.view(ext_values=case.ext_values, body=not case.messages, remark=True)
    out["ext"] = {k: ("<set>" if k in HISTORY_EXT else v) for k, v in out["ext"].items()}
    if case.ext_differs is not None:
        del out["ext"]
    if case.messages:
        out["bodies"] = sorted(m.body for m in decode_all(answer.raw_body or b""))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_same_answer_as_apache_5(case: Case, sides: tuple[Side, Side]) -> None:
    name = f"Pop{RUN}{CASES.index(case)}"
    answers = []
    for side in sides:
        if case.prepare is not None:
            case.prepare(side, name)
        answers.append(call(side.broker, case.build(side, name)))
    if case.ext_differs is not None:
        assert (answers[0].ext, answers[1].ext) == case.ext_differs, (case.name, answers)
    apache, pocket = (view(a, case) for a in answers)
    assert pocket == apache, (
        f"{case.name}: pocketmq and Apache RocketMQ 5.5.0 differ\n  apache:   {answers[0]}\n  pocketmq: {answers[1]}")
