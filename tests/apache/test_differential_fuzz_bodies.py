"""test_differential_fuzz.py's idea for the answers' bodies and header fields: hypothesis builds short sequences of
read-only queries (GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME, QUERY_CONSUMER_OFFSET,
SEARCH_OFFSET_BY_TIMESTAMP, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, QUERY_TOPIC_CONSUME_BY_WHO,
GET_CONSUMER_LIST_BY_GROUP, GET_CONSUMER_CONNECTION_LIST, QUERY_CONSUME_TIME_SPAN, QUERY_CONSUME_QUEUE,
GET_ALL_TOPIC_CONFIG, GET_SYSTEM_TOPIC_LIST_FROM_BROKER), of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ, and of the store's
clean-ups an operator asks for (CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC, DELETE_EXPIRED_COMMITLOG), sends
each to Apache RocketMQ 4.9.7 and to pocketmq, both holding the same topics, messages, offsets and online consumer,
and asserts the same answer: code, header fields and body, masked (differential.Answer.view: addresses, times and
ids), sets and tables in a fixed order; the remark too, but an exception's.

The clean-ups on the session's Apache: CLEAN_UNUSED_TOPIC destroys the consume queues of topics the broker has no
config of, which each DELETE_TOPIC_IN_BROKER of the other modules does too (4.9.7's deleteTopic calls it);
CLEAN_EXPIRED_CONSUMEQUEUE destroys queues whose messages are all before the commit log's first byte, none while
the session's commit log has lost no file; DELETE_EXPIRED_COMMITLOG deletes commit-log files past their reserved
time (72 h), none in a test session. Locks are taken for groups of each sequence's own (the lock table is in
memory, by group; a lock lives 60 s, longer than a sequence).

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import commit_log_offset_of, decode
from pocketmq.common.pop_ack_constants import REVIVE_TOPIC_PREFIX
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, invoke, java_ints, java_longs, mask, request
from .differential_requests import create_group, create_topic, send_v2
from .test_differential_fuzz import EXAMPLES, bodies, odd_numbers
from .test_differential_fuzz_config import entry_of, queue_table

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzBody{RUN}"  # 4 queues: 3 messages in queue 0, 1 in queue 1, none in 2 and 3
EMPTY = f"FuzzBodyEmpty{RUN}"  # 2 queues, never written
GROUP = f"cgBody{RUN}"  # offsets 2 of queue 0, 1 of queue 1, 0 of queue 2; online (CLIENT), subscribing TOPIC
IDLE = f"cgBodyIdle{RUN}"  # exists, no offsets, no consumer
CLIENT = f"127.0.0.1@body{RUN}"
NO_SUCH = f"NoSuch{RUN}"
SENT = [(0, "TagA"), (0, "TagB"), (0, "TagA"), (1, "TagA")]  # (queue, tag) of each message, in order
SEQUENCE = itertools.count()
topics = st.sampled_from([TOPIC, TOPIC, EMPTY, NO_SUCH, ""])
groups = st.sampled_from([GROUP, GROUP, IDLE, NO_SUCH, ""])
queue_ids = st.one_of(st.integers(-1, 5), st.sampled_from([2**31 - 1, -(2**31)]))


def search(draw: Any) -> dict[str, Any]:
    """A SEARCH_OFFSET_BY_TIMESTAMP: a message's store time, or a millisecond before it (stand-ins put in per
    side at send time, see for_side), or times before or after every message. Never a time between two messages
    of the queue or after its last: 4.9.7 answers the nearer entry, pocketmq the first stored at or after the time
    (docs/compatibility.md, "SEARCH_OFFSET_BY_TIMESTAMP")."""
    topic, queue_id = draw(topics), draw(queue_ids)
    fixed = st.one_of(st.sampled_from([0, -1, -(2**63)]), odd_numbers)
    own = [i for i, (q, _) in enumerate(SENT) if q == queue_id]
    if topic != TOPIC or not own:  # (an empty queue: 0 whatever the time)
        times = st.one_of(fixed, st.sampled_from([2**62, 2**63 - 1]), stand_ins(range(len(SENT)), ("-1", "+0", "+1")))
    else:  # the queue's own messages' times, and the times of messages stored before its first
        before = [i for i in range(len(SENT)) if i < own[0]]
        times = st.one_of(fixed, stand_ins(own, ("+0",)), stand_ins([own[0]], ("-1",)),
                          stand_ins(before, ("-1", "+0", "+1")) if before else fixed)
    return {"topic": topic, "queueId": queue_id, "timestamp": draw(times)}


def stand_ins(messages: Any, deltas: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.builds(lambda i, d: f"<t{i}{d}>", st.sampled_from(list(messages)), st.sampled_from(deltas))


def lock_body(draw: Any, group: str) -> bytes:
    queues = [{"topic": draw(st.sampled_from([TOPIC, EMPTY, NO_SUCH])), "brokerName": draw(st.sampled_from(
        ["broker-a", "broker-b"])), "queueId": draw(st.integers(0, 4))} for _ in range(draw(st.integers(0, 3)))]
    return json.dumps({"consumerGroup": group, "clientId": draw(st.sampled_from(["c1", "c2"])),
                       "mqSet": queues}).encode()


@st.composite
def operations(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    code = draw(st.sampled_from([
        R.GET_MAX_OFFSET, R.GET_MIN_OFFSET, R.GET_EARLIEST_MSG_STORETIME, R.QUERY_CONSUMER_OFFSET,
        R.SEARCH_OFFSET_BY_TIMESTAMP, R.SEARCH_OFFSET_BY_TIMESTAMP, R.GET_TOPIC_STATS_INFO, R.GET_CONSUME_STATS,
        R.QUERY_TOPIC_CONSUME_BY_WHO, R.GET_CONSUMER_LIST_BY_GROUP, R.GET_CONSUMER_CONNECTION_LIST,
        R.QUERY_CONSUME_TIME_SPAN, R.GET_ALL_TOPIC_CONFIG, R.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, R.LOCK_BATCH_MQ,
        R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ, R.CLEAN_EXPIRED_CONSUMEQUEUE, R.CLEAN_UNUSED_TOPIC,
        R.DELETE_EXPIRED_COMMITLOG, R.QUERY_CONSUME_QUEUE]))
    if code in (R.GET_MAX_OFFSET, R.GET_MIN_OFFSET, R.GET_EARLIEST_MSG_STORETIME):
        return code, {"topic": draw(topics), "queueId": draw(queue_ids)}, None
    if code == R.QUERY_CONSUMER_OFFSET:
        return code, {"consumerGroup": draw(groups), "topic": draw(topics), "queueId": draw(queue_ids)}, None
    if code == R.SEARCH_OFFSET_BY_TIMESTAMP:
        return code, search(draw), None
    if code in (R.GET_TOPIC_STATS_INFO, R.QUERY_TOPIC_CONSUME_BY_WHO):
        return code, {"topic": draw(topics)}, None
    if code == R.GET_CONSUME_STATS:
        ext = {"consumerGroup": draw(groups)}
        if draw(st.booleans()):
            ext["topic"] = draw(topics)
        return code, ext, None
    if code in (R.GET_CONSUMER_LIST_BY_GROUP, R.GET_CONSUMER_CONNECTION_LIST):
        return code, {"consumerGroup": draw(groups)}, None
    if code == R.QUERY_CONSUME_TIME_SPAN:
        return code, {"topic": draw(topics), "group": draw(groups)}, None
    if code == R.QUERY_CONSUME_QUEUE:
        # Only queues both have: 4.9.7 makes a consume queue on any lookup (GET_MAX_OFFSET...), pocketmq on a
        # message's put (docs/compatibility.md, "GET_MIN_OFFSET of a queue that does not exist"). (Every field
        # is a number of its Java type: docs/compatibility.md, "a header number that does not parse".) No index
        # whose byte offset, index * 20, passes the long's range: 4.9.7 reads the entries at the wrapped offset
        # (docs/compatibility.md, "QUERY_CONSUME_QUEUE of an index past 2^63 / 20").
        index = st.one_of(st.integers(-2, 5), java_longs.filter(lambda i: -(2**63) <= i * 20 < 2**63))
        ext = {"topic": TOPIC, "queueId": draw(st.integers(0, 1)), "index": draw(index),
               "count": draw(st.one_of(st.integers(-2, 5), java_ints))}
        if draw(st.booleans()):
            ext["consumerGroup"] = draw(groups)
        return code, ext, None
    if code in (R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ):
        # "<lock group n>": the sequence's own group n, put in at send time
        return code, {}, lock_body(draw, f"<lock group {draw(st.integers(0, 1))}>")
    # The requests that take no header field nor body, with random ones (4.9.7 reads neither)
    ext = {draw(st.sampled_from(["topic", "x"])): draw(topics)} if draw(st.booleans()) else {}
    return code, ext, draw(bodies)


# --- what must agree ---

_TPS = re.compile(rb'"consumeTps":([-0-9.Ee]+)')


def listed(body: Any, key: str) -> Any:
    """A body's set ``key`` in a fixed order (4.9.7's are HashSets)."""
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        return body
    return {**body, key: sorted(body[key], key=lambda v: json.dumps(v, sort_keys=True))}


def body_of(code: int, answer: Answer, names: dict[str, str]) -> Any:
    body = answer.body
    if code == R.GET_TOPIC_STATS_INFO:
        return mask(queue_table(answer.raw_body))
    if code == R.GET_CONSUME_STATS:
        text = (answer.raw_body or b"").decode("utf-8", "replace")
        # (consumeTps is the pulls of the last minute's samples: present, its value is each broker's timing)
        return bool(_TPS.search(answer.raw_body or b"")), mask(queue_table(entry_of(text, '"offsetTable":{').encode()))
    if code in (R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ):
        return mask(listed(body, "lockOKMQSet"))
    if code == R.QUERY_TOPIC_CONSUME_BY_WHO:
        return listed(body, "groupList")
    if code == R.GET_CONSUMER_LIST_BY_GROUP:
        return listed(body, "consumerIdList")
    if code == R.GET_CONSUMER_CONNECTION_LIST:
        return mask(listed(body, "connectionSet"))
    if code == R.QUERY_CONSUME_TIME_SPAN and isinstance(body, dict):
        # (delayTime is the time from the next message to consume to now, when each broker answered: 0 or not)
        spans = [{k: bool(v) if k == "delayTime" else v for k, v in s.items()}
                 for s in body.get("consumeTimeSpanSet", [])]
        return mask(listed({**body, "consumeTimeSpanSet": spans}, "consumeTimeSpanSet"))
    if code == R.GET_ALL_TOPIC_CONFIG and isinstance(body, dict):
        table = body.get("topicConfigTable", {})
        return sorted(body), {t: table.get(t) for t in (TOPIC, EMPTY)}
    if code == R.GET_SYSTEM_TOPIC_LIST_FROM_BROKER and isinstance(body, dict):
        # (the broker's cluster and broker names are system topics: each side's own. pocketmq's POP revive topic
        # is one too, as on 5.x; 4.9.7 has no such topic: docs/compatibility.md, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER")
        return sorted(names.get(t, t) for t in body.get("topicList", []) if not t.startswith(REVIVE_TOPIC_PREFIX))
    if code == R.QUERY_CONSUME_QUEUE and isinstance(body, dict):
        # (where each entry's message is in the commit log, and its size, are each broker's own: other tests'
        # messages are in Apache's, and each broker adds properties of its own, docs/compatibility.md)
        entries = [{**e, "physicOffset": "<offset>", "physicSize": "<size>"} for e in body.get("queueData", [])]
        return mask({**body, "queueData": entries} if "queueData" in body else body)
    return mask(body)


def view(code: int, answer: Answer, names: dict[str, str]) -> dict[str, Any]:
    out = answer.view(body=False)
    out["body"] = body_of(code, answer, names)
    # (a refusal's remark is Java's exception text on Apache's side, pocketmq's own "bad request" text on its)
    if answer.code != C.SYSTEM_ERROR or not re.search(r"Exception|^bad request", answer.remark or ""):
        out["remark"] = answer.remark
    return out


# --- the two servers ---


class Side:
    """One broker, the connection the module asks it over (its consumer CLIENT stays online while it is open), and
    the side's own values of the stand-ins."""

    def __init__(self, runner: asyncio.Runner, addr: str, cluster: str, broker: str) -> None:
        self.runner, self.addr = runner, addr
        self.names = {cluster: "<cluster>", broker: "<broker>", f"{cluster}_REPLY_TOPIC": "<cluster>_REPLY_TOPIC"}
        self.client = runner.run(self._connect())
        self.values: dict[str, Any] = {}
        self.beat_at = 0.0

    @staticmethod
    async def _connect() -> RemotingClient:
        return RemotingClient(wire_protocol=WireProtocol.NATIVE)

    def ask(self, code: int, ext: dict[str, Any] | None = None, body: bytes | None = None) -> Answer:
        return self.runner.run(invoke(self.client, self.addr, request(code, ext, body), 5.0))

    def beat(self) -> None:
        """GROUP's consumer CLIENT, subscribing TOPIC's TagA, online (4.9.7 drops a channel silent for 120 s)."""
        subscription = {"topic": TOPIC, "subString": "TagA", "tagsSet": ["TagA"], "codeSet": [hash_code("TagA")],
                        "subVersion": 0, "expressionType": "TAG"}
        consumer = {"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [subscription],
                    "unitMode": False}
        body = {"clientID": CLIENT, "producerDataSet": [], "consumerDataSet": [consumer]}
        assert self.ask(R.HEART_BEAT, None, json.dumps(body).encode()).code == C.SUCCESS
        self.beat_at = time.monotonic()

    def prepare(self) -> None:
        for step in (create_topic(TOPIC), create_topic(EMPTY, queues=2), create_group(GROUP), create_group(IDLE)):
            assert self.ask(step.code, step.ext_fields, step.body).code == C.SUCCESS, step
        for i, (queue_id, tag) in enumerate(SENT):
            time.sleep(0.005)  # (each message its own millisecond: a search between two of them is one answer)
            step = send_v2(TOPIC, f"m{i}".encode(), queue_id=queue_id, props={"TAGS": tag, "KEYS": f"k{i}"})
            sent = self.ask(step.code, step.ext_fields, step.body)
            assert sent.code == C.SUCCESS, sent
            offset = commit_log_offset_of(sent.ext["msgId"])
            viewed = self.ask(R.VIEW_MESSAGE_BY_ID, {"offset": offset})
            assert viewed.code == C.SUCCESS and viewed.raw_body, viewed
            stored = decode(viewed.raw_body).store_timestamp
            for delta in (-1, 0, 1):
                self.values[f"<t{i}{delta:+d}>"] = stored + delta
        for _ in range(200):  # until the consume queues hold them (dispatch runs behind the put on both)
            if [self.ask(R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": q}).ext.get("offset") for q in (0, 1)] == [
                    "3", "1"]:
                break
            time.sleep(0.05)
        for queue_id, offset in ((0, 2), (1, 1), (2, 0)):
            commit = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id, "commitOffset": offset}
            assert self.ask(R.UPDATE_CONSUMER_OFFSET, commit).code == C.SUCCESS
        self.beat()


def hash_code(text: str) -> int:
    """Java's String.hashCode, a tag's code in a subscription."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def for_side(side: Side, sequence: int, op: tuple[int, dict[str, Any], bytes | None]
             ) -> tuple[int, dict[str, Any], bytes | None]:
    code, ext, body = op
    ext = {k: side.values.get(v, v) if isinstance(v, str) else v for k, v in ext.items()}
    if body and code in (R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ):
        body = re.sub(rb"<lock group (\d)>", f"cgBodyLock{RUN}s{sequence}g\\1".encode(), body)
    return code, ext, body


@pytest.fixture(scope="module")
def sides(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    with ThreadedCluster(tmp_path_factory.mktemp("fuzz-bodies")) as pocket, asyncio.Runner() as runner:
        assert pocket.cluster.broker is not None
        bc = pocket.cluster.broker.broker_config
        out = {"apache": Side(runner, apache_rocketmq.broker_addr, apache_rocketmq.cluster_name,
                              apache_rocketmq.broker_name),
               "pocketmq": Side(runner, pocket.broker_addr, bc.broker_cluster_name, bc.broker_name)}
        try:
            for side in out.values():
                side.prepare()
            yield out
        finally:
            apache = out["apache"]
            for group in (GROUP, IDLE):
                apache.ask(R.DELETE_SUBSCRIPTIONGROUP, {"groupName": group, "removeOffset": True})
            for topic in (TOPIC, EMPTY, f"%RETRY%{GROUP}"):
                apache.ask(R.DELETE_TOPIC_IN_BROKER, {"topic": topic})
                call(apache_rocketmq.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}))
            for side in out.values():
                side.ask(R.UNREGISTER_CLIENT, {"clientID": CLIENT, "consumerGroup": GROUP})
                runner.run(side.client.close())


@settings(max_examples=EXAMPLES or 40, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(operations(), min_size=1, max_size=5))
def test_same_bodies_as_apache(sides: dict[str, Side], ops: list[tuple[int, dict[str, Any], bytes | None]]) -> None:
    sequence = next(SEQUENCE)
    for side in sides.values():
        if time.monotonic() - side.beat_at > 30:
            side.beat()
    for i, op in enumerate(ops):
        views = {name: view(op[0], side.ask(*for_side(side, sequence, op)), side.names)
                 for name, side in sides.items()}
        assert views["pocketmq"] == views["apache"], (i, ops)
