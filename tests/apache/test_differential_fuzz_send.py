"""test_differential_fuzz.py's idea for the send variants and their bodies: hypothesis builds SEND_MESSAGE (10, the
v1 header), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320, batch bodies valid and corrupted) and SEND_REPLY_MESSAGE
(324) and its V2 (325), with property texts that stress MessageDecoder.string2messageProperties, sends each to
Apache RocketMQ 4.9.7 and to pocketmq, and asserts the same class of answer; where both stored the message, what
VIEW_MESSAGE_BY_ID then answers of each record (topic, flag, body, system flag, properties) must be the same too.

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Every topic is this
module's (TOPIC's prefix, its group's retry and dead-letter topics): no other test's data on the session's Apache
is written. Cases that differ on purpose (docs/compatibility.md, "Differences") are left out, each with the reason."""

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

from pocketmq.common.codec import CorruptRecordError, commit_log_offset_of, decode
from pocketmq.common.message import asks_for_a_timer, properties_to_string, string_to_properties
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import NO_ANSWER, Answer, call, request
from .send_fuzz_bodies import batch_bodies, properties_texts

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzSend{RUN}"  # 4 queues; the auto-created topics start with it too
GROUP = f"cgSend{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
# Properties one side adds or leaves on a stored message and the other not (docs/compatibility.md, "properties a
# broker adds"): 4.9.7 adds CLUSTER and drops WAIT, pocketmq stamps MSG_REGION and TRACE_ON.
STAMPED = frozenset({"CLUSTER", "WAIT", "MSG_REGION", "TRACE_ON"})
# Properties texts this close to the 32,767 bytes a record's take, as sent or decoded and encoded again: 4.9.7
# re-encodes them (CLUSTER added, WAIT and the last separator dropped) and pocketmq stores them as sent (encoded
# again only when they do not fit so), so one of them fits where the other does not
NEAR_LIMIT = (32767 - 200, 32767 + 64)


def code_class(code: int) -> str:
    if code == C.SUCCESS:
        return "ok"
    if code == NO_ANSWER:
        return "no answer"
    return "not there" if code in (C.TOPIC_NOT_EXIST, C.SUBSCRIPTION_GROUP_NOT_EXIST) else "refused"


odd_numbers = st.sampled_from(["", "x", "1.5", " 1", "99999999999999999999999"])
java_ints = st.one_of(st.integers(-3, 40), st.integers(-(2**31), 2**31 - 1))


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` seven times in eight, else ``odd``."""
    return st.integers(0, 7).flatmap(lambda i: odd if i == 0 else valid)


topics = st.one_of(st.just(TOPIC), st.just(TOPIC), st.just(TOPIC + "Auto"), st.just(f"%RETRY%{GROUP}"),
                   st.just(f"%DLQ%{GROUP}"), st.just(f"%RETRY%NoSuch{RUN}"), st.just(""), st.just(TOPIC + "!"),
                   st.just(TOPIC + "x" * 120), st.just(TOPIC + "x" * 230))
bodies = st.one_of(st.just(b"body"), st.binary(min_size=1, max_size=64))


@st.composite
def sends(draw: Any) -> tuple[int, dict[str, Any], bytes, bool]:
    """(request code, its header fields in the form its code reads, body, whether the body is a batch)."""
    code = draw(st.sampled_from([R.SEND_MESSAGE, R.SEND_MESSAGE_V2, R.SEND_BATCH_MESSAGE, R.SEND_BATCH_MESSAGE,
                                 R.SEND_REPLY_MESSAGE, R.SEND_REPLY_MESSAGE_V2]))
    batch = code == R.SEND_BATCH_MESSAGE or (code == R.SEND_MESSAGE and draw(st.integers(0, 5)) == 0)
    topic = draw(topics)
    # The v1 header's numbers are always numbers of their Java type: 4.9.7 decodes that header reflectively and
    # leaves a field that does not parse unset, where pocketmq refuses (docs/compatibility.md, "a header number
    # that does not parse"); the V2 header's fast decoder refuses it, as pocketmq
    v1 = code in (R.SEND_MESSAGE, R.SEND_REPLY_MESSAGE)
    odd = java_ints if v1 else st.one_of(odd_numbers, java_ints)
    odd_flags = st.sampled_from([3]) if v1 else odd_numbers  # (never the IPv6 host bits: above)
    # sysFlag of the commit or rollback type (8, 12) only in a batch, refused by both: a single message of it
    # pocketmq refuses and 4.9.7 stores (docs/compatibility.md, only END_TRANSACTION commits). Never the IPv6
    # host bits (16, 32): 4.9.7 would write a record whose host fields disagree with them into the session's
    # commit log.
    sys_flags = st.sampled_from([0, 0, 1, 2, 4, 8, 12] if batch else [0, 0, 1, 2, 4])
    fields: dict[str, Any] = {
        "producerGroup": draw(st.sampled_from(["pg", "PG_" + RUN])), "topic": topic, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": draw(mostly(st.just(4), odd)),
        "queueId": draw(mostly(st.integers(-1, 4), odd)), "sysFlag": draw(mostly(sys_flags, odd_flags)),
        "bornTimestamp": int(time.time() * 1000), "flag": draw(mostly(java_ints, odd)),
    }
    if draw(st.integers(0, 7)):
        fields["properties"] = draw(properties_texts())
    if topic.startswith("%RETRY%") or draw(st.integers(0, 3)) == 0:
        fields["reconsumeTimes"] = draw(st.sampled_from([0, 1, 15, 16, 17, -1, 2**31 - 1]))
        if draw(st.booleans()):
            fields["maxReconsumeTimes"] = draw(st.sampled_from([0, 1, 16, -1]))
    if draw(st.integers(0, 3)) == 0:
        fields["unitMode"] = draw(st.sampled_from(["false", "true", "x"]))
    if batch or draw(st.integers(0, 7)) == 0:
        fields["batch"] = "true" if batch else draw(st.sampled_from(["false", "FALSE", "yes"]))
    body = draw(batch_bodies())[1] if batch else draw(bodies)
    if code in (R.SEND_MESSAGE_V2, R.SEND_BATCH_MESSAGE, R.SEND_REPLY_MESSAGE_V2):
        fields = {V2[k]: v for k, v in fields.items()}
    return code, fields, body, batch


V2 = {"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
      "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j", "unitMode": "k",
      "maxReconsumeTimes": "l", "batch": "m"}


def stored(broker: str, answer: Answer, header_queue: Any, masked: frozenset[str] = STAMPED) -> list[dict[str, Any]]:
    """Each record a send's answer names (its offsetMsgIds), as VIEW_MESSAGE_BY_ID answers it: what a consumer
    reads of it, the properties as MessageDecoder decodes them, but for the ``masked`` ones."""
    out: list[dict[str, Any]] = []
    for msg_id in answer.ext.get("msgId", "").split(","):
        offset = commit_log_offset_of(msg_id)
        view = call(broker, request(R.VIEW_MESSAGE_BY_ID, {"offset": offset}), 5.0)
        if view.code != C.SUCCESS or not view.raw_body:
            out.append({"code": view.code})
            continue
        try:
            m = decode(view.raw_body, text_errors="replace")
        except CorruptRecordError:
            out.append({"corrupt": True})
            continue
        props = {k: v for k, v in string_to_properties(m.properties_string).items() if k not in masked}
        topic = m.topic
        if topic == "SCHEDULE_TOPIC_XXXX" and props.get("REAL_TOPIC", "").startswith("%DLQ%"):
            # docs/compatibility.md, "DELAY on a redelivered message": 4.9.7 delays a send rerouted to the DLQ
            topic = props.pop("REAL_TOPIC")
            props.pop("DELAY", None)
        fixed_queue = isinstance(header_queue, int) and header_queue >= 0 and not topic.startswith("%DLQ%")
        if not fixed_queue:
            props.pop("REAL_QID", None)
        if topic.startswith("%DLQ%"):
            props.pop("DELAY", None)
        out.append({"topic": topic, "flag": m.flag, "body": m.body, "sys_flag": m.sys_flag,
                    "reconsume_times": m.reconsume_times, "queue_id": m.queue_id if fixed_queue else "<any>",
                    "properties": props})
    return out


def prepared_flag_alone(fields: dict[str, Any]) -> bool:
    """A single message whose sysFlag says prepared and whose properties have no TRAN_MSG=true: 4.9.7 stores it
    in its topic as it is, where its consume queue never lists it (it dispatches no prepared record), pocketmq
    takes it for a half message (docs/compatibility.md, "a send with the prepared flag and no TRAN_MSG")."""
    sys_flag = fields.get("sysFlag", fields.get("f"))
    props = string_to_properties(fields.get("properties", fields.get("i")) or "")
    return isinstance(sys_flag, int) and sys_flag & 0xC == 4 and props.get("TRAN_MSG", "").lower() != "true"


def retry_at_the_maximum(fields: dict[str, Any]) -> bool:
    """A send to a group's retry topic whose reconsume times equal the maximum (the header's, else the group's
    16; both create a group that does not exist): 4.9.7 puts it in the DLQ, pocketmq in the retry topic as 5.x
    (docs/compatibility.md, "a producer's send to %RETRY%group ... whose reconsume times equal the maximum")."""
    topic = str(fields.get("topic", fields.get("b")))
    times = fields.get("reconsumeTimes", fields.get("j", 0))
    return topic.startswith("%RETRY%") and times == fields.get("maxReconsumeTimes", fields.get("l", 16))


def known_difference(code: int, fields: dict[str, Any], batch: bool, answers: dict[str, Answer]) -> bool:
    """A difference docs/compatibility.md lists: a batch 4.9.7 stores and pocketmq refuses, whose TOTALSIZE
    disagrees with its parts, whose properties are not UTF-8, or one of whose messages asks for a delay or a
    timer or has an empty body, or one to a retry topic, or a message whose properties with the header's pass
    32,767 bytes ("a batch whose TOTALSIZE disagrees with its parts", "a batch whose properties are not UTF-8", "a
    batch of messages with a delay level", "a send with an empty body", "a batch sent to a retry topic", "a batch
    record whose properties with the batch header's pass 32,767 bytes")."""
    apache, pocket = answers["apache"], answers["pocketmq"]
    props = fields.get("properties", fields.get("i")) or ""
    if asks_for_a_timer(string_to_properties(props), int(time.time() * 1000)):
        return True  # "__STARTDELIVERTIME delays delivery": 4.9.7 has no timers, pocketmq has 5.x's
    sizes = (len(props.encode()), len(properties_to_string(string_to_properties(props)).encode()))
    if not batch and any(NEAR_LIMIT[0] < n <= NEAR_LIMIT[1] for n in sizes):
        return True  # "properties a broker adds": whether the CLUSTER 4.9.7 adds fits is its own count
    if batch and sizes[1] > NEAR_LIMIT[0]:
        return True  # "a batch header's properties": 4.9.7 refuses a header too long to append to each record
    if not batch or apache.code != C.SUCCESS or pocket.code != C.MESSAGE_ILLEGAL:
        return False
    remark = pocket.remark or ""
    return any(s in remark for s in ("TOTALSIZE", "not UTF-8", "delay level", "timer", "body length is zero",
                                     "does not support retry group", "exceed 32767"))


@pytest.fixture(scope="module")
def servers(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with ThreadedCluster(tmp_path_factory.mktemp("fuzzsend")) as pocket:
        sides = {"apache": apache_rocketmq.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in sides.values():
            create = {"topic": TOPIC, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4,
                      "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
            assert call(broker, request(R.UPDATE_AND_CREATE_TOPIC, create)).code == 0
            group = request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps({"groupName": GROUP}).encode())
            assert call(broker, group).code == 0
        yield sides
    # What the sends created on the session's Apache goes, so that the tests after it see none of it
    listing = call(apache_rocketmq.broker_addr, request(R.GET_ALL_TOPIC_CONFIG))
    for topic in (listing.body or {}).get("topicConfigTable", {}):
        if topic.startswith(TOPIC) or topic.endswith(GROUP):
            call(apache_rocketmq.broker_addr, request(R.DELETE_TOPIC_IN_BROKER, {"topic": topic}))
            call(apache_rocketmq.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}))


@settings(max_examples=EXAMPLES or 50, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(sends())
def test_same_class_of_answer_and_stored_message_as_apache(servers: dict[str, str],
                                                           send: tuple[int, dict[str, Any], bytes, bool]) -> None:
    code, fields, body, batch = send
    answers = {name: call(broker, request(code, fields, body), 5.0) for name, broker in servers.items()}
    if known_difference(code, fields, batch, answers):
        return
    classes = {name: code_class(a.code) for name, a in answers.items()}
    assert classes["pocketmq"] == classes["apache"], (code, fields, body, answers)
    if classes["apache"] == "ok" and code not in (R.SEND_REPLY_MESSAGE, R.SEND_REPLY_MESSAGE_V2) and not (
            not batch and (prepared_flag_alone(fields) or retry_at_the_maximum(fields))):
        queue = fields.get("queueId", fields.get("e"))
        # 4.9.7 appends a batch header's properties to each record, pocketmq does not (docs/compatibility.md, "a
        # batch header's properties"): the keys it names are left out of both sides' records
        header_props = fields.get("properties", fields.get("i")) or ""
        masked = STAMPED | set(string_to_properties(header_props)) if batch else STAMPED
        views = {name: stored(servers[name], a, queue, frozenset(masked)) for name, a in answers.items()}
        if batch and {"corrupt": True} in views["apache"]:
            # 4.9.7 writes a record's properties length as a short: a message whose properties with the batch
            # header's (and CLUSTER) pass 32,767 bytes is stored with a length that does not add up, which no
            # reader decodes (docs/compatibility.md, "a batch record whose properties with the batch header's
            # pass 32,767 bytes"); pocketmq stores it whole when it fits without CLUSTER, else refuses it
            return
        assert views["pocketmq"] == views["apache"], (code, fields, body)
