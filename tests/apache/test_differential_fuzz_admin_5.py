"""test_differential_fuzz.py's idea for the remoting requests of RocketMQ 5 that no other fuzz sends, with Apache
RocketMQ 5.5.0 as the oracle: GET_TOPIC_CONFIG, GET_SUBSCRIPTIONGROUP_CONFIG, UPDATE_AND_CREATE_TOPIC_LIST,
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE, GET_ALL_PRODUCER_INFO,
LITE_PULL_MESSAGE, RECALL_MESSAGE, GET_BROKER_HA_STATUS, POP_ROLLBACK and GET_TOPIC_NAME_LIST (23, which 5.5.0's
broker does not serve) to the broker, BROKER_HEARTBEAT to the name server. Valid and invalid header fields and
bodies; each answer must be of the same class of code, and the bodies of the reads (a topic's or a group's config,
the queues assigned, this module's producer, the HA status) and what a list stored must be equal, masked.

All requests of a side go over one connection, on which the fixture's heartbeat keeps a producer of PRODUCER and a
consumer of GROUP (subscribed to TOPIC) online. Everything written is this module's own (names starting with its
prefixes) and is deleted at its end. A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew
each run. Cases that differ on purpose (docs/compatibility.md) are left out of the strategies, each with the
reason."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from . import admin_fuzz_bodies as b
from .differential import NO_ANSWER, Answer, invoke, java_ints, java_longs, mask, mostly, optional, request
from .differential_requests import create_group, create_topic, send_v2
from .test_differential_fuzz import EXAMPLES, bodies, flags, foreign_names

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzAdm{RUN}"  # 4 queues, one message in queue 0
GROUP = f"cgAdm{RUN}"  # a consumer of TOPIC online on the module's connection
PRODUCER = f"pgAdm{RUN}"  # a producer online on the module's connection
CLIENT = f"127.0.0.1@adm{RUN}"
OWN_TOPIC = f"FuzzAdmOwn{RUN}"  # the topics UPDATE_AND_CREATE_TOPIC_LIST creates all start with it
OWN_GROUP = f"cgAdmOwn{RUN}"  # ... and the groups of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
NOT_THERE = {C.TOPIC_NOT_EXIST, C.SUBSCRIPTION_GROUP_NOT_EXIST, C.SUBSCRIPTION_NOT_EXIST, C.SUBSCRIPTION_NOT_LATEST,
             C.PULL_NOT_FOUND, C.PULL_RETRY_IMMEDIATELY, C.PULL_OFFSET_MOVED}
# Never TBW102 nor %RETRY%g: other modules use both on the session's Apache (test_differential_fuzz_config.py)
names = foreign_names.filter(lambda n: n not in ("TBW102", "%RETRY%g"))
own_topics = b.own_names(OWN_TOPIC)
# Groups of at most 120 characters: 5.5.0 creates no longer group (GROUP_MAX_LENGTH), pocketmq up to 255, as 4.9.x
# (docs/compatibility.md)
own_groups = b.own_names(OWN_GROUP, 120)
topics = st.one_of(st.sampled_from([TOPIC, TOPIC, f"NoSuch{RUN}", "%RETRY%" + GROUP, f"%LMQ%{RUN}"]), own_topics,
                   names)
# Groups a read may name: 5.5.0 creates a group a GET_SUBSCRIPTIONGROUP_CONFIG or a SET_MESSAGE_REQUEST_MODE names
# (autoCreateSubscriptionGroup), so only this module's
groups = st.one_of(st.sampled_from([GROUP, GROUP]), own_groups)
HEARTBEAT_EVERY = 20.0  # s; 5.5.0 drops a client silent for 120 s


def code_class(code: int) -> str:
    if code == C.SUCCESS:
        return "ok"
    if code == NO_ANSWER:
        return "no answer"
    if code == C.REQUEST_CODE_NOT_SUPPORTED:
        return "not supported"
    return "not there" if code in NOT_THERE else "refused"


def reads(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    code = draw(st.sampled_from([R.GET_TOPIC_CONFIG, R.GET_SUBSCRIPTIONGROUP_CONFIG, R.GET_ALL_PRODUCER_INFO,
                                 R.GET_BROKER_HA_STATUS, R.POP_ROLLBACK, R.GET_TOPIC_NAME_LIST]))
    if code == R.GET_TOPIC_CONFIG:
        return "broker", code, optional(draw, {"topic": draw(topics)}, "lo", flags), draw(bodies)
    if code == R.GET_SUBSCRIPTIONGROUP_CONFIG:
        return "broker", code, {"group": draw(groups)}, draw(bodies)
    # (no header field these take: random ones, which both ignore)
    ext = optional(draw, {}, draw(st.sampled_from(["topic", "group", "x"])), names)
    return "broker", code, ext, draw(bodies)


def lists(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    if draw(st.booleans()):
        topic_names = st.one_of(own_topics, own_topics, st.sampled_from(b.SYSTEM_TOPICS))
        body = b.listing(draw, "topicConfigList", lambda d, first: b.topic_config(d, topic_names, first))
        return "broker", R.UPDATE_AND_CREATE_TOPIC_LIST, {}, body
    body = b.listing(draw, "groupConfigList", lambda d, first: b.group_config(d, own_groups, first))
    return "broker", R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, {}, body


def assignments(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    assign_topics = st.sampled_from([TOPIC, TOPIC, f"NoSuch{RUN}", "%RETRY%" + GROUP, f"%LMQ%{RUN}", OWN_TOPIC])
    if draw(st.booleans()):
        body = b.json_body(draw, {
            "topic": assign_topics, "consumerGroup": groups,
            "clientId": st.sampled_from([CLIENT, CLIENT, "", "other@1"]),
            "strategyName": st.sampled_from(["AVG", "AVG", "AVG_BY_CIRCLE", "CONFIG", ""]),
            "messageModel": st.sampled_from(["CLUSTERING", "CLUSTERING", "BROADCASTING", "x"])})
        return "broker", R.QUERY_ASSIGNMENT, {}, body
    # Modes of this module's topics and groups only: 5.5.0 keeps them in its messageRequestMode.json
    body = b.json_body(draw, {"topic": assign_topics, "consumerGroup": groups,
                              "mode": st.sampled_from(["PULL", "POP"]),
                              "popShareQueueNum": st.integers(-1, 3)})
    return "broker", R.SET_MESSAGE_REQUEST_MODE, {}, body


def lite_pulls(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    # sysFlag never with the suspend bit (2): 5.5.0 holds such a pull of no message until its hold service's next
    # look, up to 5 s later
    ext = {"consumerGroup": draw(st.sampled_from([GROUP, OWN_GROUP + "Pull"])), "topic": draw(topics),
           "queueId": draw(mostly(st.integers(-1, 4), java_ints)),
           "queueOffset": draw(mostly(st.integers(-1, 3), java_longs)), "maxMsgNums": draw(st.integers(1, 40)),
           "sysFlag": draw(st.sampled_from([0, 1, 4, 5, 16, 20])), "commitOffset": draw(st.integers(-1, 2)),
           "suspendTimeoutMillis": 0, "subVersion": draw(st.sampled_from([0, 1, 2**62])),
           "subscription": draw(st.sampled_from(["*", "TagA", "TagA || TagB", ""])), "expressionType": "TAG"}
    return "broker", R.LITE_PULL_MESSAGE, ext, None


def recalls(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    ext = {"topic": draw(topics), "recallHandle": draw(st.one_of(st.sampled_from(["", "x", "djEgeA=="]), names))}
    optional(draw, ext, "producerGroup", st.sampled_from([PRODUCER, ""]))
    return "broker", R.RECALL_MESSAGE, optional(draw, ext, "bname", st.sampled_from(["broker-a", "x"])), None


def broker_heartbeats(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    ext: dict[str, Any] = {"clusterName": draw(st.sampled_from(["DefaultCluster", f"C{RUN}", ""])),
                           "brokerAddr": draw(st.sampled_from([f"127.0.0.9:{RUN[:2]}", "", "x"])),
                           "brokerName": draw(st.sampled_from([f"b{RUN}", ""]))}
    for key, values in (("brokerId", java_longs), ("epoch", java_ints), ("maxOffset", java_longs),
                        ("confirmOffset", java_longs), ("heartbeatTimeoutMills", java_longs),
                        ("electionPriority", java_ints)):
        optional(draw, ext, key, values)
    return "namesrv", R.BROKER_HEARTBEAT, ext, draw(bodies)


@st.composite
def requests(draw: Any) -> tuple[str, int, dict[str, Any], bytes | None]:
    kind = draw(st.sampled_from([reads, reads, lists, assignments, lite_pulls, recalls, broker_heartbeats]))
    return kind(draw)


# --- what must agree ---

def own(name: Any) -> bool:
    return isinstance(name, str) and name.startswith((TOPIC, GROUP, OWN_TOPIC, OWN_GROUP, PRODUCER))


def assigned(body: Any) -> Any:
    queues = (body or {}).get("messageQueueAssignments")
    if not isinstance(queues, list):
        return queues
    return sorted((q["messageQueue"]["topic"], q["messageQueue"]["brokerName"], q["messageQueue"]["queueId"],
                   q.get("mode")) for q in queues)


def producers(body: Any) -> Any:
    return [{**p, "remoteIP": "<addr>", "lastUpdateTimestamp": "<time>"}
            for p in (body or {}).get("data", {}).get(PRODUCER, [])]


def shape(code: int, ext: dict[str, Any], answer: Answer) -> Any:
    """What of a successful answer's body both must have."""
    if code == R.GET_TOPIC_CONFIG and own(ext["topic"]) or code == R.GET_SUBSCRIPTIONGROUP_CONFIG:
        return mask(answer.body)
    if code == R.QUERY_ASSIGNMENT:
        return assigned(answer.body)
    if code == R.GET_ALL_PRODUCER_INFO:
        return producers(answer.body)
    if code == R.GET_BROKER_HA_STATUS:
        return mask({**answer.body, "masterCommitLogMaxOffset": "<offset>"})
    return None


def view(code: int, ext: dict[str, Any], answer: Answer) -> dict[str, Any]:
    out: dict[str, Any] = {"class": code_class(answer.code)}
    if answer.code == C.REQUEST_CODE_NOT_SUPPORTED:
        out["remark"] = answer.remark
    if answer.code == C.SUCCESS:
        out["body"] = shape(code, ext, answer)
    return out


def listed_names(code: int, body: bytes | None) -> list[str]:
    """The own names a list request named (what it stored is compared after it)."""
    key = "topicConfigList" if code == R.UPDATE_AND_CREATE_TOPIC_LIST else "groupConfigList"
    name = "topicName" if code == R.UPDATE_AND_CREATE_TOPIC_LIST else "groupName"
    try:
        items = json.loads(body or b"").get(key)
    except (ValueError, AttributeError):
        return []
    return [i[name] for i in items if isinstance(i, dict) and own(i.get(name))] if isinstance(items, list) else []


class Side:
    """One broker and its name server, and the connection this module talks to both over."""

    def __init__(self, runner: asyncio.Runner, broker: str, namesrv: str) -> None:
        self.runner, self.addrs = runner, {"broker": broker, "namesrv": namesrv}
        self.client = runner.run(self._connect())
        self.beat_at = 0.0

    @staticmethod
    async def _connect() -> RemotingClient:
        return RemotingClient(wire_protocol=WireProtocol.NATIVE)

    def ask(self, code: int, ext: dict[str, Any] | None = None, body: bytes | None = None,
            target: str = "broker") -> Answer:
        return self.runner.run(invoke(self.client, self.addrs[target], request(code, ext, body), 5.0))

    def keep_online(self) -> None:
        if time.monotonic() - self.beat_at > HEARTBEAT_EVERY:
            subscription = {"topic": TOPIC, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 1,
                            "expressionType": "TAG"}
            consumer = {"groupName": GROUP, "consumeType": "CONSUME_ACTIVELY", "messageModel": "CLUSTERING",
                        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [subscription],
                        "unitMode": False}
            heartbeat = {"clientID": CLIENT, "producerDataSet": [{"groupName": PRODUCER}],
                         "consumerDataSet": [consumer]}
            assert self.ask(R.HEART_BEAT, None, json.dumps(heartbeat).encode()).code == C.SUCCESS
            self.beat_at = time.monotonic()

    def delete_own(self) -> None:
        topics = self.ask(R.GET_ALL_TOPIC_CONFIG).body.get("topicConfigTable", {})
        for topic in filter(own, topics):
            self.ask(R.DELETE_TOPIC_IN_BROKER, {"topic": topic})
            self.ask(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}, target="namesrv")
        table = self.ask(R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body.get("subscriptionGroupTable", {})
        for group in filter(own, table):
            self.ask(R.DELETE_SUBSCRIPTIONGROUP, {"groupName": group, "removeOffset": True})


@pytest.fixture(scope="module")
def sides(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    # (recalls off, as 5.5.0's default: docs/compatibility.md, "recallMessageEnable defaults to true")
    with ThreadedCluster(tmp_path_factory.mktemp("fuzz-admin"), recall_message_enable=False) as pocket, \
            asyncio.Runner() as runner:
        out = {"apache": Side(runner, apache_rocketmq5.broker_addr, apache_rocketmq5.namesrv_addr),
               "pocketmq": Side(runner, pocket.broker_addr, pocket.namesrv_addr)}
        try:
            for name, side in out.items():
                for step in (create_topic(TOPIC), create_group(GROUP), send_v2(TOPIC, b"m")):
                    assert side.ask(step.code, step.ext_fields, step.body).code == C.SUCCESS, (name, step)
                side.keep_online()
            yield out
        finally:
            for side in out.values():
                side.delete_own()
                runner.run(side.client.close())


@settings(max_examples=EXAMPLES or 50, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(requests())
def test_same_answer_as_apache_5(sides: dict[str, Side], req: tuple[str, int, dict[str, Any], bytes | None]) -> None:
    target, code, ext, body = req
    if code == R.UPDATE_AND_CREATE_TOPIC_LIST:
        # Lists of new topics only: 5.5.0 answers SUCCESS at the first topic whose config is unchanged, creating
        # none of the list and checking none after it; pocketmq checks and creates each (docs/compatibility.md)
        apache = sides["apache"]
        assume(all(apache.ask(R.GET_TOPIC_CONFIG, {"topic": name}).code != C.SUCCESS
                   for name in listed_names(code, body)))
    for side in sides.values():
        side.keep_online()
    answers = {name: side.ask(code, ext, body, target) for name, side in sides.items()}
    views = {name: view(code, ext, a) for name, a in answers.items()}
    assert views["pocketmq"] == views["apache"], (code, ext, body, answers)
    if code == R.GET_ALL_PRODUCER_INFO and answers["apache"].code == C.SUCCESS:
        assert views["apache"]["body"], answers  # (the module's producer is online: the bodies held something)
    if answers["apache"].code == C.SUCCESS:
        read, key = ((R.GET_TOPIC_CONFIG, "topic") if code == R.UPDATE_AND_CREATE_TOPIC_LIST
                     else (R.GET_SUBSCRIPTIONGROUP_CONFIG, "group"))
        for name in listed_names(code, body) if code in (R.UPDATE_AND_CREATE_TOPIC_LIST,
                                                         R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST) else []:
            stored = {side_name: view(read, {key: name}, side.ask(read, {key: name}))
                      for side_name, side in sides.items()}
            assert stored["pocketmq"] == stored["apache"], (code, body, name, stored)
