"""test_differential_fuzz_send.py's idea for RocketMQ 5's timer and delay messages, with Apache RocketMQ 5.5.0
(timerWheelEnable on, as the suite's broker runs) as the oracle: hypothesis builds SEND_MESSAGE_V2 and
SEND_BATCH_MESSAGE requests whose properties carry TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS and DELAY,
together or apart, due in the past, now, soon, past timerMaxDelaySec, on a slot's edge, not numbers, negative or
huge (and the properties a broker writes itself: TIMER_OUT_MS, REAL_TOPIC, TIMER_DEL_UNIQKEY), sends each to 5.5.0
and to pocketmq and asserts the same answer: its code and remark, its recall handle, the record it stored (the
topic and queue it is parked in, REAL_TOPIC / REAL_QID, TIMER_OUT_MS rounded to timerPrecisionMs) and, for a
message not parked, that a pull finds it in its own queue at the answered offset. A second test sends short
timers and delay levels to both and waits until they are delivered, never before their time.

Values relative to now are resolved against each broker's send time, so the two see the same relation to their
clock. A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Every topic is
this module's. Cases that differ on purpose (docs/compatibility.md, "Differences") are left out, each with the
reason."""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import commit_log_offset_of, decode, decode_all
from pocketmq.common.message import properties_to_string, string_to_properties
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, request
from .send_fuzz_bodies import encode_item
from .test_differential import create_group, create_topic

RUN = uuid.uuid4().hex[:6]
TOPIC = f"TimerFuzz{RUN}"  # 4 queues
DELIVERY_TOPIC = f"TimerFuzzD{RUN}"  # the delivery test's, which reads it whole
GROUP = f"cgTimer{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
PRECISION = 1000  # timerPrecisionMs, both brokers' default
MAX_DELAY_MS = 3 * 86400 * 1000  # timerMaxDelaySec, both brokers' default
LONG = 2**63
STAMPED = frozenset({"MSG_REGION", "TRACE_ON", "CLUSTER", "WAIT"})  # stamped by one side or both: not compared
TIMER_KEYS = ("TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS")  # in the order the broker reads them
TIMER_REMARKS = ("timer message", "accurate timer message")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# A value is ("rel", d): now + d at the side's send; ("aligned", k): the k-th slot boundary from ALIGN_MARGIN ms
# after now; or text. No relative value within a few ms of timerMaxDelaySec: 5.5.0 reads the clock twice, so there
# either side of the edge is a race of its own. The margin is that race at the next boundary: one a few ms away had
# passed by the time a loaded 5.5.0 read its clock, so it stored the message undelayed where pocketmq parked it.
ALIGN_MARGIN = 300  # as the nearest future relative value
relative = st.sampled_from([-10_000, -1, 0, 300, 1_500, 2_500, 3_600_000, MAX_DELAY_MS - 5_000,
                            MAX_DELAY_MS + 5_000]).map(lambda d: ("rel", d))
aligned = st.sampled_from([-2, 1, 2, 3]).map(lambda k: ("aligned", k))
numbers = st.sampled_from(["0", "-1", "1", str(LONG - 1), str(-LONG), "99999999999999999999", "abc", "", "1.5",
                           "+5", "-0", "007"])
deliver_values = st.one_of(relative, relative, aligned, numbers)
delay_sec_values = st.sampled_from(["-1", "0", "1", "2", "3600", str(MAX_DELAY_MS // 1000),
                                    str(MAX_DELAY_MS // 1000 + 1), "-3600", "abc", "", "+2", "99999999999999999999"])
delay_ms_values = st.sampled_from(["-1", "0", "1", "999", "1000", "1001", "2500", "3600000", str(MAX_DELAY_MS),
                                   str(MAX_DELAY_MS + 1000), "-5000", "abc", "", "1e3", "99999999999999999999"])
delay_levels = st.sampled_from(["0", "1", "2", "18", "19", "-1", "abc"])


@st.composite
def timer_properties(draw: Any) -> dict[str, Any]:
    """The drawn properties, values still symbolic (resolved per side by ``resolve``)."""
    # Always a UNIQ_KEY, as every client sets: 5.5.0 gives a message without one its own, pocketmq stores it as
    # sent, as 4.9.7 (docs/compatibility.md, "a single send without UNIQ_KEY")
    props: dict[str, Any] = {"UNIQ_KEY": uuid.uuid4().hex.upper(), "TAGS": "T"}
    for key, values in (("TIMER_DELIVER_MS", deliver_values), ("TIMER_DELAY_SEC", delay_sec_values),
                        ("TIMER_DELAY_MS", delay_ms_values)):
        if draw(st.integers(0, 2)) == 0:
            props[key] = draw(values)
    if draw(st.integers(0, 4)) == 0:
        props["DELAY"] = draw(delay_levels)
    if draw(st.integers(0, 9)) == 0:  # what the broker writes itself, set by the producer
        props[draw(st.sampled_from(["TIMER_OUT_MS", "REAL_TOPIC", "TIMER_DEL_UNIQKEY", "REAL_QID"]))] = draw(
            st.sampled_from(["123", "abc", TOPIC, ("rel", 2_500)]))
    return props


def resolve(value: Any, now: int) -> str:
    if isinstance(value, str):
        return value
    kind, n = value
    return str(now + n) if kind == "rel" else str(((now + ALIGN_MARGIN) // PRECISION + n) * PRECISION)


def java_long(text: str) -> int | None:
    """Long.parseLong's number (ASCII digits only), None where it throws."""
    n = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None
    return n if n is not None and -LONG <= n < LONG else None


def java_deliver(props: dict[str, str], now: int) -> int | None:
    """HookUtils.transformTimerMessage's deliverMs in Java's long arithmetic; None where Long.parseLong fails."""
    def wrap(n: int) -> int:
        return (n + LONG) % (2 * LONG) - LONG

    key = next((k for k in TIMER_KEYS if props.get(k)), None)  # (an empty value is no property: never stored)
    if key is None:
        return None
    n = java_long(props[key])
    if n is None:
        return None
    return wrap(now + wrap(n * 1000)) if key == "TIMER_DELAY_SEC" else wrap(now + n) if key == "TIMER_DELAY_MS" else n


def left_out(send: dict[str, Any], props: dict[str, str], now: int) -> bool:
    """Sends that differ on purpose (docs/compatibility.md), never sent to 5.5.0."""
    level = props.get("DELAY") or "0"
    no_level = re.fullmatch(r"[+-]?[0-9]{1,9}", level) is not None and int(level) <= 0
    if send["batch"] and "TIMER_OUT_MS" not in props and no_level and \
            (deliver := java_deliver(props, now)) is not None and now < deliver <= now + MAX_DELAY_MS:
        # "a batch whose header asks for a timer": 5.5.0 parks the batch's records in the wheel's topic without
        # the TIMER_OUT_MS its enqueue reads, which then fails on them over and over (the session's broker would
        # hold its wheel there), where pocketmq refuses the batch
        return True
    if not send["batch"] and ("REAL_TOPIC" in props or not no_level) and "TIMER_OUT_MS" in props and \
            java_long(props["TIMER_OUT_MS"]) is None:
        # "a TIMER_OUT_MS set by the producer" (with REAL_TOPIC, or a delay level, whose routing writes it): 5.5.0
        # stores the message, then never answers the send
        return True
    return overflows(props, now)


def overflows(props: dict[str, str], now: int) -> bool:
    """Left out, deliberate (docs/compatibility.md, "a TIMER_DELAY_SEC or TIMER_DELAY_MS whose arithmetic overflows
    Java's long"): 5.5.0 wraps, pocketmq refuses."""
    deliver = java_deliver(props, now)
    key = next((k for k in TIMER_KEYS if props.get(k)), None)
    if deliver is None or key == "TIMER_DELIVER_MS" or key is None:
        return False
    n = int(props[key])
    return deliver != now + (n * 1000 if key == "TIMER_DELAY_SEC" else n)


@st.composite
def sends(draw: Any) -> dict[str, Any]:
    batch = draw(st.integers(0, 4)) == 0
    return {"batch": batch, "props": draw(timer_properties()), "queue": draw(st.integers(0, 3)),
            "topic": draw(st.sampled_from([TOPIC, TOPIC, TOPIC, f"%RETRY%{GROUP}"])),
            "inner": [uuid.uuid4().hex.upper() for _ in range(draw(st.integers(1, 2)))] if batch else []}


def build(send: dict[str, Any], now: int) -> tuple[dict[str, str], Any]:
    props = {k: resolve(v, now) for k, v in send["props"].items()}
    # (a batch's messages carry no timer or delay of their own: docs/compatibility.md, "a batch of messages with a
    # timer" and "... with a delay level", where pocketmq refuses what 5.5.0 stores undelayed)
    body = b"".join(encode_item(0, b"m", properties_to_string({"UNIQ_KEY": k}).encode()) for k in send["inner"]) \
        if send["batch"] else b"timer"
    ext = {"a": "pgTimer", "b": send["topic"], "c": "TBW102", "d": 4, "e": send["queue"], "f": 0, "g": now, "h": 0,
           "i": properties_to_string(props), "j": 0, "k": "false", "m": str(send["batch"]).lower()}
    return props, request(R.SEND_BATCH_MESSAGE if send["batch"] else R.SEND_MESSAGE_V2, ext, body)


def symbolic(send: dict[str, Any], sent: dict[str, str], stored: dict[str, str], t0: int, t1: int
             ) -> dict[str, str]:
    """``stored`` with what depends on the side's clock in a form both sides share: a value as sent by its
    symbol, a TIMER_OUT_MS the broker wrote (checked to be the slot of the delivery time at the send) by a mark."""
    out = {k: v for k, v in stored.items() if k not in STAMPED}
    for key, value in send["props"].items():
        if not isinstance(value, str) and out.get(key) == sent[key]:
            out[key] = repr(value)
    if "TIMER_OUT_MS" in out and "TIMER_OUT_MS" not in sent:
        slots = sorted(slot_of(d) for d in (java_deliver(sent, t0), java_deliver(sent, t1)) if d is not None)
        assert slots and slots[0] <= int(out["TIMER_OUT_MS"]) <= slots[-1], (sent, out, t0, t1)
        out["TIMER_OUT_MS"] = "<the slot before the delivery time>"
    return out


def slot_of(deliver: int) -> int:
    return deliver - PRECISION if deliver % PRECISION == 0 else deliver // PRECISION * PRECISION


def pull(topic: str, queue_id: int, offset: int, count: int = 32) -> Any:
    return request(R.PULL_MESSAGE, {"consumerGroup": GROUP, "topic": topic, "queueId": queue_id,
                                    "queueOffset": offset, "maxMsgNums": count, "sysFlag": 4, "commitOffset": 0,
                                    "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*",
                                    "expressionType": "TAG"})


def pulled(broker: str, topic: str, queue_id: int, offset: int, count: int, wait: float = 30.0) -> list[Any]:
    """The ``count`` messages at ``offset`` once dispatched (a send is answered before its consume queue entry is
    written): generous, as it only waits for what is there."""
    deadline = time.monotonic() + wait
    while True:
        answer = call(broker, pull(topic, queue_id, offset, count), 5.0)
        if answer.code == C.SUCCESS and answer.raw_body:
            msgs = decode_all(answer.raw_body)
            if len(msgs) >= count:
                return msgs[:count]
        if time.monotonic() > deadline:
            return []
        time.sleep(0.05)


def recall_parts(handle: str | None) -> list[str] | None:
    if handle is None:
        return None
    return base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)).decode().split(" ")


def outcome(broker: str, send: dict[str, Any], sent: dict[str, str], answer: Answer, t0: int, t1: int
            ) -> dict[str, Any]:
    """What the two sides must agree on of one send."""
    if answer.code != C.SUCCESS:
        # The timer refusals' texts are the broker's settings, compared; others are pocketmq's own words (a
        # DELAY that is no int: 5.5.0's answer is its exception's stack)
        remark = answer.remark or ""
        return {"code": answer.code, "remark": remark if remark.startswith(TIMER_REMARKS) else "<other>"}
    records, stored = [], []
    for msg_id in answer.ext["msgId"].split(","):
        view = call(broker, request(R.VIEW_MESSAGE_BY_ID, {"offset": commit_log_offset_of(msg_id)}), 5.0)
        assert view.code == C.SUCCESS and view.raw_body, view
        m = decode(view.raw_body)
        stored.append(string_to_properties(m.properties_string))
        records.append({"topic": m.topic, "queue_id": m.queue_id, "body": m.body,
                        "properties": symbolic(send, sent, string_to_properties(m.properties_string), t0, t1)})
    # (5.5.0 answers a single send's UNIQ_KEY as its transactionId, pocketmq as 4.9.7 does not: the same row)
    out: dict[str, Any] = {"code": answer.code, "records": records,
                           "ext": sorted(set(answer.ext) - {"transactionId"})}
    parts = recall_parts(answer.ext.get("recallHandle"))
    if parts is not None:  # v1 <real topic> <broker> <TIMER_OUT_MS + 1> <UNIQ_KEY>
        stored_out = stored[0]["TIMER_OUT_MS"]
        assert parts[3] == str(int(stored_out) + 1), (parts, stored_out)
        out["recall"] = parts[:3] + parts[4:]
    if records[0]["topic"] == send["topic"]:  # not parked: consumable at once, where the answer says
        got = pulled(broker, send["topic"], int(answer.ext["queueId"]), int(answer.ext["queueOffset"]),
                     len(records))
        out["pulled"] = [m.properties.get("UNIQ_KEY") for m in got]
    return out


@pytest.fixture(scope="module")
def servers(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with ThreadedCluster(tmp_path_factory.mktemp("fuzz-timer")) as pocket:
        sides = {"apache": apache_rocketmq5.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in sides.values():
            for topic in (TOPIC, DELIVERY_TOPIC):
                assert call(broker, create_topic(topic)).code == C.SUCCESS
            assert call(broker, create_group(GROUP)).code == C.SUCCESS
        yield sides
    listing = call(apache_rocketmq5.broker_addr, request(R.GET_ALL_TOPIC_CONFIG))
    for topic in (listing.body or {}).get("topicConfigTable", {}):  # what this module created on the session's broker
        if topic.startswith(TOPIC[:-len(RUN)]) and topic.endswith(RUN) or topic.endswith(GROUP):
            call(apache_rocketmq5.broker_addr, request(R.DELETE_TOPIC_IN_BROKER, {"topic": topic}))
            call(apache_rocketmq5.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}))


@settings(max_examples=EXAMPLES or 60, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(sends())
def test_same_answer_and_stored_timer_message_as_apache_5(servers: dict[str, str], send: dict[str, Any]) -> None:
    outcomes = {}
    for name, broker in servers.items():
        t0 = now_ms()
        sent, req = build(send, t0)
        if left_out(send, sent, t0):
            return
        answer = call(broker, req, 5.0)
        outcomes[name] = outcome(broker, send, sent, answer, t0, now_ms())
    assert outcomes["pocketmq"] == outcomes["apache"], send


# (key, value relative to the send, the least delay it asks for in ms): short timers, the one that counts among
# several, a delay level over a timer, one due already
DELIVERIES: list[tuple[dict[str, Any], int]] = [
    ({"TIMER_DELIVER_MS": ("rel", 1_200)}, 1_200),
    ({"TIMER_DELIVER_MS": ("aligned", 2)}, 1_000),
    ({"TIMER_DELAY_SEC": "1"}, 1_000),
    ({"TIMER_DELAY_MS": "1500"}, 1_500),
    ({"TIMER_DELAY_MS": "1000", "TIMER_DELIVER_MS": ("rel", 3_600_000)}, 1_000),
    ({"TIMER_DELAY_SEC": "2", "TIMER_DELAY_MS": "3600000"}, 2_000),
    ({"DELAY": "1", "TIMER_DELIVER_MS": ("rel", 3_600_000)}, 1_000),  # (5.5.0's level 1 is 1 s, as pocketmq's)
    ({"TIMER_DELIVER_MS": ("rel", -5_000)}, 0),
    ({"TIMER_DELAY_MS": "0"}, 0),
]
DELIVERED_VOLATILE = ("TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_DELIVER_MS")
# (5.5.0 delivers a delay level's message still carrying DELAY, pocketmq drops it: docs/compatibility.md, "DELAY on
# a redelivered message")
DELIVERED_LEFT_OUT = STAMPED | {"UNIQ_KEY", "DELAY"}


def test_timer_messages_delivered_not_before_their_time_as_apache_5(servers: dict[str, str]) -> None:
    due: dict[str, dict[str, int]] = {name: {} for name in servers}  # each side's UNIQ_KEY: the least store time
    for props, least in DELIVERIES:  # (both sides' timers run at once: the test waits for them once)
        for name, broker in servers.items():
            key = uuid.uuid4().hex.upper()
            t0 = now_ms()
            sent, req = build({"batch": False, "props": {**props, "UNIQ_KEY": key}, "queue": 0,
                               "topic": DELIVERY_TOPIC, "inner": []}, t0)
            assert call(broker, req, 5.0).code == C.SUCCESS, (name, sent)
            due[name][key] = t0 + least
    delivered: dict[str, list[dict[str, str]]] = {}
    for name, broker in servers.items():
        got = pulled(broker, DELIVERY_TOPIC, 0, 0, len(DELIVERIES), wait=90.0)
        assert len(got) == len(DELIVERIES), (name, [m.properties for m in got])
        for m in got:
            assert m.store_timestamp >= due[name][m.properties["UNIQ_KEY"]], (name, m.properties, m.store_timestamp)
        order = list(due[name])
        delivered[name] = [{k: ("<set>" if k in DELIVERED_VOLATILE else v) for k, v in m.properties.items()
                            if k not in DELIVERED_LEFT_OUT}
                           for m in sorted(got, key=lambda m: order.index(m.properties["UNIQ_KEY"]))]
    assert delivered["pocketmq"] == delivered["apache"], json.dumps(delivered, indent=1)
