"""test_differential_fuzz.py's idea for RocketMQ 5's POP family, with Apache RocketMQ 5.5.0 as the oracle:
hypothesis builds POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, PEEK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
NOTIFICATION and POLLING_INFO requests, valid and not (receipt handles of real pops and of random text, queue ids
-2..8, times 0, negative and huge, the module's own topic and group and odd names), sends each to 5.5.0 and to
pocketmq in RocketMQ's native protocol, and asserts the two answer in the same class of code.

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Cases that differ on
purpose (docs/compatibility.md, "Differences") are left out of the strategies, each with the reason."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import NO_ANSWER, call, request
from .differential_requests import create_group, create_topic, send_v2

RUN = uuid.uuid4().hex[:6]
TOPIC = f"PopFuzz{RUN}"  # 4 queues, two messages each at the start
GROUP = f"PopFuzzG{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
JAVA_LONG = 2**64
MAX_LONG = 2**63 - 1
HOUR = 3_600_000
# Stand-ins for the receipt handles of the fixture's pops, each side's own put in at send time.
REAL_HANDLES = ("<handle of queue 0>", "<orderly handle of queue 1>")
EMPTY = {C.NO_MESSAGE, C.POLLING_TIMEOUT, C.POLLING_FULL, C.PULL_NOT_FOUND}
NOT_THERE = {C.TOPIC_NOT_EXIST, C.SUBSCRIPTION_GROUP_NOT_EXIST, C.SUBSCRIPTION_NOT_EXIST}
# Whether a pop or a peek finds messages depends on when each broker revives what earlier examples popped (a pop
# of invisibleTime 0 is back at once on one, a second later on the other): found and not found are one class.
VISIBILITY_BOUND = {R.POP_MESSAGE, R.PEEK_MESSAGE}


def code_class(request_code: int, code: int) -> str:
    if code == NO_ANSWER:
        return "no answer"
    if code in NOT_THERE:
        return "not there"
    if code == C.SUCCESS or code in EMPTY:
        if request_code in VISIBILITY_BOUND:
            return "answered"
        return "ok" if code == C.SUCCESS else "empty"
    return "refused"


def java_long(n: int) -> int:
    """``n`` wrapped as Java's long arithmetic wraps it."""
    return (n + 2**63) % JAVA_LONG - 2**63


topics = st.one_of(st.just(TOPIC), st.just(TOPIC), st.just("TBW102"), st.just(""), st.just(f"NoSuch{RUN}"),
                   st.just("%RETRY%" + GROUP), st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF),
                                                       max_size=12),
                   st.text("abcXYZ09_-%|", min_size=120, max_size=260))
# Groups of at most 120 characters: 5.5.0 auto-creates no longer group (GROUP_MAX_LENGTH), pocketmq up to 255, as
# 4.9.x (docs/compatibility.md).
groups = st.one_of(st.just(GROUP), st.just(GROUP), st.just(""), st.just(f"Bad!Group{RUN}"),
                   st.just("%RETRY%" + GROUP), st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF),
                                                       max_size=12),
                   st.text("abcXYZ09_-%|", min_size=100, max_size=120))
# Revive queues the brokers have (reviveQueueNum 8) and the orderly one: pocketmq refuses an ack or a change naming
# another, where 5.5.0 writes its ack record to a revive queue no revive service reads (docs/compatibility.md).
revive_qids = st.one_of(st.integers(0, 7), st.just(999))
queue_ids = st.integers(-2, 8)
offsets = st.one_of(st.integers(-2, 12), st.just(MAX_LONG), st.just(-(2**63)))
booleans = st.sampled_from(["true", "false", "TRUE", "", "yes"])


def now_ms() -> int:
    return int(time.time() * 1000)


# A receipt handle: a real one, one built of the fields RocketMQ's ExtraInfoUtil writes (some naming other queues,
# offsets, topics), or text.
handles = st.one_of(
    st.sampled_from(REAL_HANDLES),
    st.builds(lambda ck, pop_time, inv, rq, topic, q, off: build_extra_info(ck, pop_time, inv, rq, topic, "broker-a",
                                                                             q, off),
              offsets, st.sampled_from([0, 1, now_ms()]), st.sampled_from([0, 60_000, HOUR]), revive_qids,
              # Handles of the original topics only: for one of a retry topic pocketmq acks the retry topic the
              # handle names, where 5.5.0 acks the header's topic (docs/compatibility.md).
              st.sampled_from([TOPIC, f"NoSuch{RUN}"]), queue_ids, offsets),
    st.sampled_from(["", " ", "0 1 2 3 0 broker-a 0 0", "1 2 3", "a b c d e f g h", "0 0 0 0 0 broker-a 0 0 0"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=40),
)


def poll_and_born(draw: Any) -> tuple[int, int]:
    """A poll time and a born time whose wait ends within 0.3 s (Apache waits until bornTime + pollTime, in Java's
    long arithmetic), so that no example holds the run."""
    born = draw(st.sampled_from(["now", 0, -1, 1, "past", MAX_LONG, -(2**63)]))
    born_ms = now_ms() if born == "now" else now_ms() - 10_000 if born == "past" else born
    poll = draw(st.one_of(st.sampled_from([0, 1, 100, 300, -1, -(2**63), MAX_LONG, 2**31, 2**40]),
                          st.integers(0, 250)))
    born_for_apache = now_ms() if born_ms == 0 else born_ms  # (5.5.0 takes a bornTime "0" for now)
    too_late = java_long(java_long(now_ms() - born_for_apache) - poll) > 500  # (answered at once)
    if java_long(born_for_apache + poll) - now_ms() > 300 and not too_late:
        poll = 0
    return poll, born_ms


@st.composite
def requests(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    code = draw(st.sampled_from([R.POP_MESSAGE, R.ACK_MESSAGE, R.BATCH_ACK_MESSAGE, R.PEEK_MESSAGE,
                                 R.CHANGE_MESSAGE_INVISIBLETIME, R.NOTIFICATION, R.POLLING_INFO]))
    ext: dict[str, Any]
    if code == R.POP_MESSAGE:
        poll, born = poll_and_born(draw)
        # Left out, deliberate (docs/compatibility.md, "a bad pop request"): maxMsgNums 0 (5.5.0 parks the pop),
        # a negative invisibleTime or pollTime (5.5.0 serves them) and an invisibleTime past timerMaxDelaySec (5.5.0
        # serves it, its message never coming back): pocketmq refuses each with INVALID_PARAMETER.
        ext = {"consumerGroup": draw(groups), "topic": draw(topics), "queueId": draw(queue_ids),
               "maxMsgNums": draw(st.one_of(st.integers(1, 33), st.sampled_from([-1, 64, 2**31 - 1]))),
               "invisibleTime": draw(st.sampled_from([0, 1, 1000, 60_000, HOUR, 3 * 24 * HOUR])),
               "pollTime": max(poll, 0), "bornTime": born, "initMode": draw(st.sampled_from([0, 1, 2, -1]))}
        if draw(st.booleans()):
            # (no expType "": 5.5.0 then parses no tags, so any expression but "*", a malformed one too, matches
            # nothing; pocketmq reads it as TAG, docs/compatibility.md)
            ext["expType"] = draw(st.sampled_from(["TAG", "SQL92", "tag"]))
            ext["exp"] = draw(st.sampled_from(["*", "TagA", "TagA || TagB", "", "a > 1", "||", "a >>> 1"]))
        if draw(st.booleans()):
            ext["order"] = draw(booleans)
        if draw(st.booleans()):
            ext["attemptId"] = draw(st.sampled_from(["", "attempt-1", uuid.uuid4().hex]))
        return code, ext, None
    if code in (R.ACK_MESSAGE, R.CHANGE_MESSAGE_INVISIBLETIME):
        ext = {"consumerGroup": draw(groups), "topic": draw(topics), "queueId": draw(queue_ids),
               "extraInfo": draw(handles), "offset": draw(offsets)}
        if code == R.CHANGE_MESSAGE_INVISIBLETIME:
            # Left out, deliberate (docs/compatibility.md): a time outside 0 to 12 h, which 5.5.0 takes.
            ext["invisibleTime"] = draw(st.sampled_from([0, 1, 1000, 30_000, 12 * HOUR]))
        return code, ext, None
    if code == R.BATCH_ACK_MESSAGE:
        acks = draw(st.lists(st.fixed_dictionaries({
            # (no retry type but 0, 1 and 2: 5.5.0 fails on another, an IllegalArgumentException, SYSTEM_ERROR,
            # where pocketmq skips the ack)
            "c": groups, "t": topics, "r": st.sampled_from(["0", "1", "2"]), "so": offsets, "q": queue_ids,
            "rq": revive_qids, "pt": st.sampled_from([0, now_ms()]), "it": st.sampled_from([0, 60_000]),
            # No "b" of "": 5.5.0 reads it as no BitSet and fails (a NullPointerException, SYSTEM_ERROR) where pocketmq
            # acks nothing (SUCCESS).
            "b": st.sampled_from(["AQ==", "Aw==", "/w==", "not base64"])}), max_size=3))
        body = draw(st.one_of(st.just(json.dumps({"brokerName": "broker-a", "acks": acks}).encode()),
                              st.just(json.dumps({"brokerName": "other", "acks": acks}).encode()),
                              # (not "}": 5.5.0's fastjson reads it as no body, NO_MESSAGE; pocketmq's JSON reader
                              # refuses it, SYSTEM_ERROR, as either refuses any other text that is not JSON)
                              st.none(), st.binary(max_size=24).filter(lambda b: not b.strip().startswith(b"}"))))
        return code, {}, body
    if code == R.PEEK_MESSAGE:
        ext = {"topic": draw(topics), "queueId": draw(queue_ids), "consumerGroup": draw(groups),
               # Never near 2^31: 5.5.0 sizes three ArrayLists by it (an OutOfMemoryError in the session's broker).
               "maxMsgNums": draw(st.one_of(st.integers(-1, 40), st.just(1000)))}
        return code, ext, None
    if code == R.NOTIFICATION:
        poll, born = poll_and_born(draw)
        ext = {"consumerGroup": draw(groups), "topic": draw(topics), "queueId": draw(queue_ids),
               "pollTime": poll, "bornTime": born}
        if draw(st.booleans()):
            ext["order"] = draw(booleans)
        return code, ext, None
    return code, {"consumerGroup": draw(groups), "topic": draw(topics), "queueId": draw(queue_ids)}, None


def popped_handle(broker: str, queue_id: int, order: bool) -> str:
    answer = call(broker, request(R.POP_MESSAGE, {
        "consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id, "maxMsgNums": 1, "invisibleTime": HOUR,
        "pollTime": 0, "bornTime": now_ms(), "initMode": 0, "expType": "TAG", "exp": "*", "order": order}))
    assert answer.code == C.SUCCESS, answer
    offset = decode_all(answer.raw_body or b"")[0].queue_offset  # (the handle a client builds of the answer)
    return build_extra_info(offset, int(answer.ext["popTime"]), int(answer.ext["invisibleTime"]),
                            int(answer.ext["reviveQid"]), TOPIC, "broker-a", queue_id, offset)


@pytest.fixture(scope="module")
def servers(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, dict[str, str]]]:
    """Per side: the broker's address and the receipt handles of a pop of queue 0 and an orderly pop of queue 1."""
    with ThreadedCluster(tmp_path_factory.mktemp("fuzz-pop")) as pocket:
        sides = {"apache": apache_rocketmq5.broker_addr, "pocketmq": pocket.broker_addr}
        out = {}
        for name, broker in sides.items():
            assert call(broker, create_topic(TOPIC)).code == C.SUCCESS
            assert call(broker, create_group(GROUP)).code == C.SUCCESS
            for queue_id in (0, 0, 1, 1, 2, 2, 3, 3):
                assert call(broker, send_v2(TOPIC, b"m", queue_id=queue_id)).code == C.SUCCESS
            deadline = time.monotonic() + 30
            for queue_id in range(4):  # (a send is answered before its consume queue entry is written)
                while call(broker, request(R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": queue_id})).ext.get(
                        "offset") != "2":
                    assert time.monotonic() < deadline, f"{name}: queue {queue_id} not dispatched"
                    time.sleep(0.05)
            out[name] = {"broker": broker, REAL_HANDLES[0]: popped_handle(broker, 0, False),
                         REAL_HANDLES[1]: popped_handle(broker, 1, True)}
        yield out


def for_side(side: dict[str, str], ext: dict[str, Any]) -> dict[str, Any]:
    """The request's fields with the side's own receipt handles in place of their stand-ins."""
    return {k: side.get(v, v) if isinstance(v, str) else v for k, v in ext.items()}


@settings(max_examples=EXAMPLES or 100, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(requests())
def test_same_class_of_answer_as_apache_5(servers: dict[str, dict[str, str]],
                                          req: tuple[int, dict[str, Any], bytes | None]) -> None:
    code, ext, body = req
    answers = {name: call(side["broker"], request(code, for_side(side, ext), body), 5.0)
               for name, side in servers.items()}
    classes = {name: code_class(code, a.code) for name, a in answers.items()}
    assert classes["pocketmq"] == classes["apache"], (code, ext, answers)
