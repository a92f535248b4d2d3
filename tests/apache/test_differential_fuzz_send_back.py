"""What CONSUMER_SEND_MSG_BACK (36, a consumer's RECONSUME_LATER) does, fuzzed against Apache RocketMQ 4.9.7: not only
its answer (test_differential_fuzz_consumer.py compares that) but the record it stores. Hypothesis draws a message
stored in this module's topic (tags, keys, user properties, UNIQ_KEY or none, a flag, a body; now and then already a
retried one: RETRY_TOPIC, ORIGIN_MESSAGE_ID, REAL_TOPIC / REAL_QID, reconsume times up to Java's int), a group of the
module's (one of a few reused or a new one; its SubscriptionGroupConfig's retryQueueNums and retryMaxTimes set by
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP or left as they are, so created by the send-back itself; its retry or dead-letter
topic now and then created beforehand with a drawn perm), then the send-back's header: the message's commit-log
offset, or one naming another record (the previous example's message, or what the previous send-back stored),
inside a record (its magic code or queue id read as a size) or no record at all; delayLevel -1, 0, 1 to 18, past
18, Java's int's ends; originMsgId and originTopic present, absent or wrong; maxReconsumeTimes absent, 0, 1, 16, the
int's largest, -1; unitMode; a client version before V3_4_9 (maxReconsumeTimes not read) or not.

The same example runs on both servers, and both must agree on: the answer's code (and its remark, but a Java
exception's text); WHERE the new record went, %RETRY%group (a random queue below retryQueueNums), %DLQ%group or
SCHEDULE_TOPIC_XXXX (queue level - 1), or nowhere, found by GET_MAX_OFFSET on those queues before and after and
QUERY_CONSUME_QUEUE's entries (the tags code too, but the schedule topic's, a time); the record VIEW_MESSAGE_BY_ID
then reads (topic, queue, body, flag, system flag, born timestamp, reconsume times, properties: RETRY_TOPIC,
REAL_TOPIC, REAL_QID, DELAY, ORIGIN_MESSAGE_ID, UNIQ_KEY, TAGS, KEYS, WAIT and the user's); and the group's retry and
dead-letter topic configs after it (queue counts, perm, topic system flag). Masked: the properties a broker stamps
(CLUSTER, MSG_REGION, TRACE_ON), a record's offsetMsgId (named by the record it names), the random retry queue.
A record is this example's by its FUZZ_CASE property and by its commit-log offset, before a marker sent after the
send-back (a delayed record delivered from the schedule topic since comes after it); the marker's consume-queue
entry says both stores dispatched what came before it.

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Left out, each with its row
in docs/compatibility.md ("Differences"): a dead letter's DELAY=0 ("DELAY on a redelivered message", masked in
%DLQ% records); groups past 120 characters (their retry topic past 127, "CONSUMER_SEND_MSG_BACK for a group of more
than 120 characters"); properties near 32,767 bytes (each broker stamps its own; "properties a broker adds")."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import CorruptRecordError, commit_log_offset_of, decode
from pocketmq.common.message import properties_to_string, string_to_properties
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC as SCHEDULE
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, delete_owned, invoke, request

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzBack{RUN}"  # the messages sent back, 4 queues
MARKER = f"{TOPIC}Mark"  # one queue: a send after each send-back, whose dispatch says the send-back's was
GROUP = f"cgBack{RUN}"  # every group of the module starts with it
POOL = [f"{GROUP}p{i}" for i in range(3)]  # groups reused across examples: their topics and configs stay
PRODUCER = f"pgBack{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
CASE = "FUZZ_CASE"  # the property naming an example's message and every copy of it
RETRY_QUEUES = 4  # retry queues looked at: retryQueueNums is drawn up to 3
DELAY_LEVELS = 18
# Properties one broker stamps on what it stores and the other not (docs/compatibility.md, "properties a broker
# adds"): the original's, which its copies keep.
STAMPED = frozenset({"CLUSTER", "MSG_REGION", "TRACE_ON"})
OLD_CLIENT = 120  # a version before V3_4_9 (121): its maxReconsumeTimes is not read
INT_MAX = 2**31 - 1
FAKE_MSG_ID = "0A0000010000270F00000000DEADBEEF"
DEFAULT_RETRY_QUEUES = 1  # a SubscriptionGroupConfig's, for a group a send-back created
texts = st.text("abcXYZ019 _-.:", max_size=8)


@st.composite
def cases(draw: Any) -> dict[str, Any]:
    props: dict[str, str] = {}
    tags = draw(st.sampled_from([None, "TagA", "TagB", "Tag A", ""]))
    if tags is not None:
        props["TAGS"] = tags
    keys = draw(st.sampled_from([None, "k1", "k1 k2", ""]))
    if keys is not None:
        props["KEYS"] = keys
    props.update(draw(st.fixed_dictionaries({}, optional={k: texts for k in ("color", "n", "a_b", "x")})))
    reconsume = 0
    if draw(st.integers(0, 2)) == 0:  # a message a consumer got from its retry topic
        retry_topic = draw(st.sampled_from([TOPIC, f"{TOPIC}Other", "", None]))
        if retry_topic is not None:
            props["RETRY_TOPIC"] = retry_topic
        reconsume = draw(st.sampled_from([1, 2, 3, 15, 16, 17, INT_MAX - 3, INT_MAX - 1, INT_MAX, -1]))
        if draw(st.booleans()):
            props["REAL_TOPIC"], props["REAL_QID"] = f"%RETRY%{GROUP}", draw(st.sampled_from(["0", "2"]))
        if draw(st.integers(0, 3)) == 0:
            props["DELAY"] = draw(st.sampled_from(["0", "-1"]))  # (a level above 0 would delay the message itself)
    origin = draw(st.sampled_from([None, None, FAKE_MSG_ID, " ", ""]))
    if origin is not None:
        props["ORIGIN_MESSAGE_ID"] = origin
    message = {"props": props, "uniq": draw(st.booleans()), "reconsume": reconsume,
               "body": draw(st.binary(min_size=1, max_size=24)), "queue": draw(st.integers(0, 3)),
               "flag": draw(st.one_of(st.integers(-3, 40), st.integers(-(2**31), INT_MAX))),
               "sys_flag": draw(st.sampled_from([0, 0, 0, 1]))}
    group = draw(st.one_of(st.sampled_from(POOL), st.none()))  # None: a new group of its own
    config = draw(st.one_of(st.none(), st.fixed_dictionaries({
        "retryQueueNums": st.sampled_from([1, 1, 1, 1, 2, 3, 0, -1]),  # (0 or less: no retries, nothing stored)
        "retryMaxTimes": st.sampled_from([16, 0, 1, 2, 3, -1, INT_MAX])})))
    topics = {}  # the group's retry or DLQ topic created beforehand: (queues, perm)
    if draw(st.integers(0, 7)) == 0:
        topics["%RETRY%"] = (draw(st.sampled_from([1, 2])), draw(st.sampled_from([6, 4, 2])))
    if draw(st.integers(0, 7)) == 0:
        topics["%DLQ%"] = (1, draw(st.sampled_from([6, 4, 2])))
    # The offset: the message's, or another record's, or inside the message (its magic code read as a size, its
    # queue id), or none at all
    offset = draw(st.sampled_from(["message"] * 6 + ["previous", "landed", "+4", "+12", -1, -(2**63), 2**62,
                                                      2**63 - 1]))
    header: dict[str, Any] = {
        "group": group, "delayLevel": draw(st.one_of(
            st.sampled_from([-1, 0, 0, 1, 2, 3, 17, 18, 19, 100, -2, INT_MAX, -(2**31)]), st.integers(1, 18))),
        "originMsgId": draw(st.sampled_from([None, "message", FAKE_MSG_ID, ""])),
        "originTopic": draw(st.sampled_from([None, TOPIC, f"{TOPIC}Other", ""])),
        "maxReconsumeTimes": draw(st.sampled_from([None, None, 0, 1, 2, 16, INT_MAX, -1])),
        "unitMode": draw(st.sampled_from([None, "true", "false"])),
    }
    return {"message": message, "group": group, "config": config, "topics": topics, "offset": offset,
            "header": header, "old_client": draw(st.integers(0, 5)) == 0}


@dataclass
class Side:
    """A server's broker, a connection of the module's to it, and what the examples so far stored there."""

    loop: asyncio.AbstractEventLoop
    broker: str
    client: RemotingClient = field(default_factory=lambda: RemotingClient(wire_protocol=WireProtocol.NATIVE))
    previous: int | None = None  # the previous example's message's commit-log offset
    landed: int | None = None  # the commit-log offset of the last record a send-back stored
    names: dict[str, str] = field(default_factory=dict)  # offsetMsgId -> the record it names, by example
    retry_queues: dict[str, int] = field(default_factory=dict)  # group -> its retryQueueNums as last set

    async def ask(self, req: RemotingCommand) -> Answer:
        return await invoke(self.client, self.broker, req, 10.0)

    async def ask_all(self, reqs: list[RemotingCommand]) -> list[Answer]:
        return list(await asyncio.gather(*(self.ask(r) for r in reqs)))


def send(topic: str, body: bytes, queue: int, props: dict[str, str], flag: int = 0, sys_flag: int = 0,
         reconsume: int = 0, born: int | None = None) -> RemotingCommand:
    return request(R.SEND_MESSAGE_V2, {"a": PRODUCER, "b": topic, "c": "TBW102", "d": 4, "e": queue, "f": sys_flag,
                                       "g": born if born is not None else int(time.time() * 1000), "h": flag,
                                       "i": properties_to_string(props), "j": reconsume, "k": False, "m": False}, body)


def topic_config(topic: str, queues: int, perm: int) -> RemotingCommand:
    return request(R.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues,
                                               "writeQueueNums": queues, "perm": perm,
                                               "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False})


def max_offset(answer: Answer) -> int:
    return int(answer.ext["offset"]) if answer.code == C.SUCCESS else 0


def places(group: str) -> list[tuple[str, int]]:
    """Every queue a send-back for ``group`` may write to."""
    return ([(f"%RETRY%{group}", q) for q in range(RETRY_QUEUES)] + [(f"%DLQ%{group}", 0)]
            + [(SCHEDULE, q) for q in range(DELAY_LEVELS)])


async def snapshot(side: Side, group: str) -> dict[tuple[str, int], int]:
    where = places(group)
    answers = await side.ask_all([request(R.GET_MAX_OFFSET, {"topic": t, "queueId": q}) for t, q in where])
    return {place: max_offset(a) for place, a in zip(where, answers, strict=True)}


async def wait_for_marker(side: Side, case: int) -> int:
    """A marker sent after the send-back, once its consume-queue entry is written: its commit-log offset."""
    sent = await side.ask(send(MARKER, b"marker", 0, {CASE: str(case)}))
    assert sent.code == C.SUCCESS, sent
    queue_offset = int(sent.ext["queueOffset"])
    for _ in range(400):
        if max_offset(await side.ask(request(R.GET_MAX_OFFSET, {"topic": MARKER, "queueId": 0}))) > queue_offset:
            offset = commit_log_offset_of(sent.ext["msgId"])
            assert offset is not None, sent
            return offset
        await asyncio.sleep(0.01)
    raise AssertionError(f"{side.broker} never dispatched the marker")


def record_view(side: Side, place: tuple[str, int], group: str, entry: dict[str, Any], raw: bytes) -> dict[str, Any]:
    """What both servers must agree on of a record a send-back stored."""
    m = decode(raw, text_errors="replace")
    props = {k: v for k, v in string_to_properties(m.properties_string).items() if k not in STAMPED}
    if "ORIGIN_MESSAGE_ID" in props:
        props["ORIGIN_MESSAGE_ID"] = side.names.get(props["ORIGIN_MESSAGE_ID"], props["ORIGIN_MESSAGE_ID"])
    retry_queues = side.retry_queues.get(group, DEFAULT_RETRY_QUEUES)
    topic, queue = place
    random_queue = topic.startswith("%RETRY%") or topic == SCHEDULE and props.get("REAL_TOPIC") == f"%RETRY%{group}"
    if random_queue:  # (a random one of the group's retry queues: ThreadLocalRandom on both)
        at = m.queue_id if topic.startswith("%RETRY%") else int(props.get("REAL_QID", "-1"))
        assert 0 <= at < retry_queues, (side.broker, place, at, retry_queues)
        if topic == SCHEDULE:
            props["REAL_QID"] = "<retry queue>"
    if topic.startswith("%DLQ%"):
        # docs/compatibility.md, "DELAY on a redelivered message": 4.9.7's dead letter carries DELAY=0
        props.pop("DELAY", None)
    return {"topic": m.topic, "queue": "<retry queue>" if topic.startswith("%RETRY%") else m.queue_id,
            "in": topic, "body": m.body, "flag": m.flag, "sys_flag": m.sys_flag, "born": m.born_timestamp,
            "reconsume_times": m.reconsume_times, "properties": props,
            "tags_code": "<due time>" if topic == SCHEDULE else entry.get("tagsCode")}


async def landed(side: Side, group: str, before: dict[tuple[str, int], int], after: dict[tuple[str, int], int],
                 case: int, marker: int) -> list[dict[str, Any]]:
    """The records this example's send-back stored (in the order of the places looked at)."""
    out: list[dict[str, Any]] = []
    for place, end in after.items():
        start = before[place]
        if end <= start:
            continue
        topic, queue = place
        q = await side.ask(request(R.QUERY_CONSUME_QUEUE, {"topic": topic, "queueId": queue, "index": start,
                                                           "count": end - start}))
        assert q.code == C.SUCCESS and isinstance(q.body, dict), (side.broker, place, q)
        for entry in q.body.get("queueData") or []:
            offset = int(entry["physicOffset"])
            if offset >= marker:
                continue  # (a delayed record delivered since the marker)
            view = await side.ask(request(R.VIEW_MESSAGE_BY_ID, {"offset": offset}))
            assert view.code == C.SUCCESS and view.raw_body, (side.broker, place, view)
            try:
                m = decode(view.raw_body, text_errors="replace")
            except CorruptRecordError as e:
                raise AssertionError((side.broker, place, offset)) from e
            if m.properties.get(CASE) != str(case):
                continue  # (another example's delayed record, delivered into a reused group's retry topic)
            side.landed = offset
            side.names[m.offset_msg_id] = f"<stored {case}>"
            out.append(record_view(side, place, group, entry, view.raw_body))
    return out


async def topic_configs(side: Side, group: str) -> dict[str, Any]:
    listing = await side.ask(request(R.GET_ALL_TOPIC_CONFIG))
    table = (listing.body or {}).get("topicConfigTable", {})
    out = {}
    for topic in (f"%RETRY%{group}", f"%DLQ%{group}"):
        tc = table.get(topic)
        out[topic] = tc and {k: tc.get(k) for k in ("readQueueNums", "writeQueueNums", "perm", "topicSysFlag")}
    return out


async def run(side: Side, drawn: dict[str, Any], case: int, group: str) -> dict[str, Any]:
    msg = drawn["message"]
    props = {**msg["props"], CASE: str(case)}
    if msg["uniq"]:
        props["UNIQ_KEY"] = f"{RUN}{case:026X}"
    born = 1_700_000_000_000 + case
    sent = await side.ask(send(TOPIC, msg["body"], msg["queue"], props, msg["flag"], msg["sys_flag"],
                               msg["reconsume"], born))
    assert sent.code == C.SUCCESS, (side.broker, sent)
    message = commit_log_offset_of(sent.ext["msgId"])
    assert message is not None, sent
    side.names[sent.ext["msgId"]] = f"<message {case}>"
    setup: list[RemotingCommand] = []
    if drawn["config"] is not None:
        setup.append(request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                             json.dumps({"groupName": group, **drawn["config"]}).encode()))
    for prefix, (queues, perm) in drawn["topics"].items():
        setup.append(topic_config(prefix + group, queues, perm))
    for answer in await side.ask_all(setup):
        assert answer.code == C.SUCCESS, (side.broker, answer)
    if drawn["config"] is not None:
        side.retry_queues[group] = drawn["config"]["retryQueueNums"]
    offset = drawn["offset"]
    if isinstance(offset, str):
        offset = {"message": message, "previous": side.previous if side.previous is not None else message,
                  "landed": side.landed if side.landed is not None else message, "+4": message + 4,
                  "+12": message + 12}[offset]
    side.previous = message
    header = {**drawn["header"], "offset": offset, "group": group}
    if header["originMsgId"] == "message":
        header["originMsgId"] = sent.ext["msgId"]
    before = await snapshot(side, group)
    back = request(R.CONSUMER_SEND_MSG_BACK, header)
    if drawn["old_client"]:
        back.version = OLD_CLIENT
    answer = await side.ask(back)
    marker = await wait_for_marker(side, case)
    after = await snapshot(side, group)
    records = await landed(side, group, before, after, case, marker)
    remark = answer.remark and answer.remark.replace(str(offset), "<offset>")  # (each side's own offsets)
    return {"code": answer.code, "remark": remark, "stored": records, "topics": await topic_configs(side, group)}


@pytest.fixture(scope="module")
def servers(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    loop = asyncio.new_event_loop()
    with ThreadedCluster(tmp_path_factory.mktemp("fuzzback")) as pocket:
        brokers = {"apache": apache_rocketmq.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in brokers.values():
            assert call(broker, topic_config(TOPIC, 4, 6)).code == C.SUCCESS
            assert call(broker, topic_config(MARKER, 1, 6)).code == C.SUCCESS
        sides = {name: Side(loop, broker) for name, broker in brokers.items()}
        try:
            yield sides
        finally:
            for side in sides.values():
                loop.run_until_complete(side.client.close())
            loop.close()
            delete_owned(apache_rocketmq.broker_addr, apache_rocketmq.namesrv_addr, TOPIC, GROUP)


CASES = itertools.count()


@settings(max_examples=EXAMPLES or 100, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(cases())
def test_same_send_back_record_as_apache(servers: dict[str, Side], drawn: dict[str, Any]) -> None:
    case = next(CASES)
    group = drawn["group"] or f"{GROUP}n{case}"
    loop = servers["apache"].loop

    async def both() -> list[dict[str, Any]]:
        return await asyncio.gather(*(run(side, drawn, case, group) for side in servers.values()))

    seen = dict(zip(servers, loop.run_until_complete(both()), strict=True))
    if "Exception" in (seen["apache"]["remark"] or ""):
        # A Java exception's text (an offset inside a record whose bytes read as a negative size): pocketmq answers
        # the same code with its own remark
        for view in seen.values():
            view["remark"] = "<exception>"
    event(f"send-back answered {seen['apache']['code']}, stored in "
          f"{[r['in'].split(GROUP)[0] for r in seen['apache']['stored']]}")
    assert seen["pocketmq"] == seen["apache"], (case, group, drawn)
