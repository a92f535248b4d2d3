"""Issue 28's differential table: one request at a time sent to Apache RocketMQ 4.9.7 and to pocketmq over RocketMQ's
native protocol, the answers compared field by field (code, ext fields, JSON body; addresses, times and ids
masked, see differential.py). Each row says what it sends; a row whose answers differ on purpose says why, and
docs/compatibility.md lists it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.admin_body import GetConsumerStatusBody, ResetOffsetBody
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import BodyDialect
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, invoke, request
from .differential_cases import CASES, Case
from .differential_requests import (
    GROUP,
    RUN,
    SINK,
    TOPIC,
    V3_0_6,
    V3_0_7_SNAPSHOT,
    Side,
    commit,
    create_group,
    create_topic,
    heartbeat,
    send_v2,
)


def _prepare(side: Side) -> None:
    assert call(side.broker, create_topic(TOPIC)).code == 0
    assert call(side.broker, create_topic(SINK)).code == 0
    for tags in ("TagA", "TagB", "TagA"):
        answer = call(side.broker, send_v2(TOPIC, f"m-{tags}".encode(), props={"TAGS": tags, "KEYS": "k"}))
        assert answer.code == 0, (side.name, answer)
        side.sent.append(answer)
    # (the groups exist before their commits: pocketmq refuses a commit for a group it does not have, as 5.x)
    for group in (GROUP, f"span{RUN}"):
        assert call(side.broker, create_group(group)).code == 0
    assert call(side.broker, commit(GROUP)).code == 0
    deadline = time.monotonic() + 30
    while call(side.namesrv, request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})).code != 0:
        assert time.monotonic() < deadline, f"{side.name}: no route of {TOPIC}"
        time.sleep(0.2)
    # Apache's StoreStatsService takes its first sample a second after the start; until then its runtime info
    # fails (NoSuchElementException from an empty LinkedList.getLast), which is not what the case compares.
    while call(side.broker, request(R.GET_BROKER_RUNTIME_INFO)).code != 0:
        assert time.monotonic() < deadline, f"{side.name}: no runtime info"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def sides(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    with ThreadedCluster(tmp_path_factory.mktemp("differential"), enable_property_filter=True,
                         trace_topic_enable=True) as pocket:
        apache = Side("apache", apache_rocketmq.namesrv_addr, apache_rocketmq.broker_addr, "broker-a")
        pocketmq = Side("pocketmq", pocket.namesrv_addr, pocket.broker_addr, "broker-a")
        for side in (apache, pocketmq):
            _prepare(side)
        yield apache, pocketmq



@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_same_answer_as_apache(case: Case, sides: tuple[Side, Side]) -> None:
    answers = [call(getattr(side, case.target), case.build(side), case.timeout) for side in sides]
    if case.differs is not None:
        assert (answers[0].code, answers[1].code) == case.differs[:2], (case.name, answers)
        return
    apache, pocket = (a.view(ext_values=case.ext_values, body=case.body, remark=case.remark) for a in answers)
    assert pocket == apache, (
        f"{case.name}: pocketmq and Apache RocketMQ differ\n  apache:   {answers[0]}\n  pocketmq: {answers[1]}")


def test_schedule_progress_in_the_runtime_info_as_apache(sides: tuple[Side, Side]) -> None:
    """buildRunningStats: once a level-1 message is delivered, each broker's runtime info has
    scheduleMessageOffset_1 = "<delivered up to>,<the level queue's max offset>", the two equal (mqadmin brokerStatus
    prints it). The broker is shared with other modules, so the figures themselves are not compared."""
    for side in sides:
        assert call(side.broker, send_v2(SINK, props={"DELAY": "1"})).code == 0
    deadline = time.monotonic() + 30
    for side in sides:
        while True:
            table = call(side.broker, request(R.GET_BROKER_RUNTIME_INFO)).body["table"]
            delivered, _, stored = table.get("scheduleMessageOffset_1", "0,").partition(",")
            if stored and int(delivered) == int(stored) > 0:
                break
            assert time.monotonic() < deadline, (side.name, {k: v for k, v in table.items() if "schedule" in k})
            time.sleep(0.2)


def test_consumer_status_of_clients_on_the_wire_as_apache(sides: tuple[Side, Side]) -> None:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS with a group's client a connection of the test's own: one of
    V3_0_7_SNAPSHOT that answers its offset of a queue, relayed whether asked for it alone or for the group, and
    nothing for a client id the group has not; one of V3_0_6, in a group of its own, refused (too old) either
    way. (Two clients in one group would be walked in a different order: Apache's channel table is a hash map.)"""
    answers = [asyncio.run(_consumer_status_answers(side)) for side in sides]
    # (the remarks of the refusals; 4.9.7's successes keep createResponseCommand's "not set any response code")
    apache, pocket = ([(a.code, a.remark if a.code else None, _status_body(a)) for a in side_answers]
                      for side_answers in answers)
    assert pocket == apache
    assert [code for code, _, _ in apache] == [0, 0, 0, 1, 1]


async def _consumer_status_answers(side: Side) -> list[Answer]:
    good, old = f"10.0.0.1@good{RUN}", f"10.0.0.2@old{RUN}"
    mq = MessageQueue(TOPIC, side.broker_name, 2)

    async def answer(channel: Any, ask: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(ask, body=ask.encode_body(GetConsumerStatusBody({mq: 5})))

    asks = [(f"status_g_{RUN}", addr) for addr in (good, None, f"10.0.0.9@none{RUN}")]
    asks += [(f"status_old_{RUN}", addr) for addr in (None, old)]
    clients = [RemotingClient(wire_protocol=WireProtocol.NATIVE) for _ in range(2)]
    try:
        for client, (client_id, version, group) in zip(
                clients, ((good, V3_0_7_SNAPSHOT, asks[0][0]), (old, V3_0_6, asks[-1][0])), strict=True):
            client.register_processor(R.GET_CONSUMER_STATUS_FROM_CLIENT, answer)
            joined = request(R.HEART_BEAT, body=heartbeat(client_id, group=group))
            joined.version = version
            assert (await client.invoke(side.broker, joined, 15.0)).code == 0, side.name
        out = []
        for group, client_addr in asks:
            ask = request(R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                          {"topic": TOPIC, "group": group, "clientAddr": client_addr})
            out.append(await _ask_once(side.broker, ask))
        return out
    finally:
        for client in clients:
            await client.close()


async def _ask_once(addr: str, ask: RemotingCommand) -> Answer:
    asker = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    try:
        resp = await asker.invoke(addr, ask, 15.0)
    finally:
        await asker.close()
    return Answer(resp.code, resp.remark, {}, None, resp.body)


def _reset_body(answer: Answer) -> ResetOffsetBody | None:
    if answer.raw_body is None:
        return None
    return decode_body(answer.raw_body, ResetOffsetBody, BodyDialect.FASTJSON)


def _status_body(answer: Answer) -> GetConsumerStatusBody | None:
    if answer.raw_body is None:
        return None
    return decode_body(answer.raw_body, GetConsumerStatusBody, BodyDialect.FASTJSON)


def test_version_rules_of_requests_forwarded_to_clients_as_apache(sides: tuple[Side, Side]) -> None:
    """GET_CONSUMER_RUNNING_INFO and INVOKE_BROKER_TO_RESET_OFFSET for a client of a given version, each alone in a
    group with offsets of TOPIC: V3_0_6 (27) is too old for either, V3_1_2_SNAPSHOT (50) takes a reset but is
    too old for the running info, 100 takes both (MQVersion's ordinals: V3_0_7_SNAPSHOT is 28, V3_1_8_SNAPSHOT
    62). The refusals name the version as getVersionDesc does; what is forwarded reaches the client."""
    answers = [asyncio.run(_forwarded_answers(side)) for side in sides]
    # (a reset's offsets are a HashMap on Apache's side: compared decoded; the running info is the client's bytes)
    apache, pocket = ([(a.code, a.remark if a.code else None,
                        _reset_body(a) if n % 2 else a.raw_body) for n, a in enumerate(side_answers)]
                      for side_answers in answers)
    assert pocket == apache
    assert [code for code, _, _ in apache] == [1, 1, 1, 0, 0, 0]


async def _forwarded_answers(side: Side) -> list[Answer]:
    reached: list[tuple[str, int]] = []

    def answering(client_id: str) -> Any:
        async def answer(channel: Any, ask: RemotingCommand) -> RemotingCommand | None:
            reached.append((client_id, ask.code))
            body = json.dumps({"properties": {"consumerGroup": client_id}}).encode()
            return None if ask.code == R.RESET_CONSUMER_CLIENT_OFFSET else RemotingCommand.response_to(ask, body=body)
        return answer

    clients = {f"10.0.0.{version}@v{version}{RUN}": version for version in (27, 50, 100)}
    connections = []
    out = []
    try:
        for client_id, version in clients.items():
            group = f"forward_{version}_{RUN}"
            client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
            connections.append(client)
            for code in (R.GET_CONSUMER_RUNNING_INFO, R.RESET_CONSUMER_CLIENT_OFFSET):
                client.register_processor(code, answering(client_id))
            joined = request(R.HEART_BEAT, body=heartbeat(client_id, group=group))
            joined.version = version
            assert (await client.invoke(side.broker, joined, 15.0)).code == 0, side.name
            for queue_id in range(4):  # (4.9.7 resets only a group with an offset of every queue)
                commit_offset = commit(group, queue_id=queue_id, offset=0)
                assert (await client.invoke(side.broker, commit_offset, 15.0)).code == 0, side.name
            out.append(await _ask_once(side.broker, request(
                R.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": group, "clientId": client_id, "jstackEnable": False})))
            out.append(await _ask_once(side.broker, request(
                R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": TOPIC, "group": group, "timestamp": -1, "isForce": True})))
        deadline = time.monotonic() + 15
        while len(reached) < 3 and time.monotonic() < deadline:  # (the resets are one-way)
            await asyncio.sleep(0.05)
    finally:
        for client in connections:
            await client.close()
    assert sorted(reached) == sorted([(f"10.0.0.50@v50{RUN}", R.RESET_CONSUMER_CLIENT_OFFSET),
                                      (f"10.0.0.100@v100{RUN}", R.GET_CONSUMER_RUNNING_INFO),
                                      (f"10.0.0.100@v100{RUN}", R.RESET_CONSUMER_CLIENT_OFFSET)]), side.name
    return out


def test_running_info_of_a_client_that_does_not_answer_as_apache(sides: tuple[Side, Side]) -> None:
    """GET_CONSUMER_RUNNING_INFO for a group's client that takes the request and never answers: CONSUME_MSG_TIMEOUT
    once the broker's wait (10 s on both) runs out, the remark naming group and client before the timeout's own
    text (Java's exception and stack frame on Apache's side). Both sides asked at once: the test takes one wait."""
    async def both() -> list[Answer]:
        return list(await asyncio.gather(*(_silent_client_answer(side) for side in sides)))

    apache, pocket = asyncio.run(both())
    client_id = f"10.0.0.7@silent{RUN}"
    prefix = f"consumer <silent_{RUN}> <{client_id}> Timeout: "
    assert (apache.code, apache.remark[:len(prefix)]) == (207, prefix), apache
    assert (pocket.code, pocket.remark[:len(prefix)], pocket.raw_body) == (apache.code, prefix, apache.raw_body)


async def _silent_client_answer(side: Side) -> Answer:
    client_id, group = f"10.0.0.7@silent{RUN}", f"silent_{RUN}"
    asked = asyncio.Event()

    async def never(channel: Any, ask: RemotingCommand) -> RemotingCommand | None:
        asked.set()
        await asyncio.sleep(60)
        return None

    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    try:
        client.register_processor(R.GET_CONSUMER_RUNNING_INFO, never)
        joined = request(R.HEART_BEAT, body=heartbeat(client_id, group=group))
        joined.version = 100
        assert (await client.invoke(side.broker, joined, 15.0)).code == 0, side.name
        answer = await _ask_once(side.broker, request(
            R.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": group, "clientId": client_id, "jstackEnable": False}))
        assert asked.is_set(), side.name
        return answer
    finally:
        await client.close()


# --- CLONE_GROUP_OFFSET (314) and QUERY_CORRECTION_OFFSET (308): a scenario on one connection per side ---------

CLONE_SRC, CLONE_A, CLONE_B = f"cloneSrc{RUN}", f"CloneA{RUN}", f"CloneB{RUN}"
CORR = f"Corr{RUN}"  # a topic, and a group of the same name (4.9.7's compare-group key: below)
CMP = f"Cmp{RUN}"  # a group, and a topic of the same name
BLANK_CLONE = "the blank topic's destination, queue 0 of A"


def clone(dest: str, topic: str | None, offline: bool | None = None, src: str | None = CLONE_SRC) -> RemotingCommand:
    return request(R.CLONE_GROUP_OFFSET, {"srcGroup": src, "destGroup": dest, "topic": topic, "offline": offline})


def correction(compare: str | None, topic: str | None = CORR, filter_groups: str | None = None) -> RemotingCommand:
    return request(R.QUERY_CORRECTION_OFFSET, {"compareGroup": compare, "topic": topic, "filterGroups": filter_groups})


def query_offset(group: str, topic: str, queue_id: int = 0) -> RemotingCommand:
    return request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id})


def subscribing_heartbeat(group: str, topic: str) -> RemotingCommand:
    subscription = {"topic": topic, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0,
                    "expressionType": "TAG"}
    consumer = {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [subscription],
                "unitMode": False}
    body = {"clientID": f"clone-{RUN}", "producerDataSet": [], "consumerDataSet": [consumer]}
    return request(R.HEART_BEAT, body=json.dumps(body).encode())


Step = tuple[str | None, RemotingCommand]  # a step named is compared; one unnamed must succeed


CLONE_STEPS: list[Step] = [
    *((None, create_topic(t, 2)) for t in (CLONE_A, CLONE_B)),
    (None, create_group(CLONE_SRC)),
    *((None, commit(CLONE_SRC, t, q, o)) for t, q, o in ((CLONE_A, 0, 5), (CLONE_A, 1, 7), (CLONE_B, 0, 3))),
    ("clone a topic of a group with no consumer online", clone(f"d1{RUN}", CLONE_A)),
    ("the clone's queue 0", query_offset(f"d1{RUN}", CLONE_A, 0)),
    ("the clone's queue 1", query_offset(f"d1{RUN}", CLONE_A, 1)),
    ("the other topic, not cloned", query_offset(f"d1{RUN}", CLONE_B, 0)),
    ("clone a topic the broker has not", clone(f"d2{RUN}", f"NoSuch{RUN}")),
    ("clone a group without offsets", clone(f"d2{RUN}", CLONE_A, src=f"none{RUN}")),
    ("nothing cloned from a group without offsets", query_offset(f"d2{RUN}", CLONE_A, 0)),
    ("clone without a topic", clone(f"d4{RUN}", None)),
    (BLANK_CLONE, query_offset(f"d4{RUN}", CLONE_A, 0)),
    ("clone without its destination group", clone(None, CLONE_A)),
    # The source group online (this connection's consumer), subscribed to B alone.
    (None, subscribing_heartbeat(CLONE_SRC, CLONE_B)),
    ("clone a topic the online consumers do not subscribe to", clone(f"d3{RUN}", CLONE_A, offline=False)),
    ("the topic they do not subscribe to, not cloned", query_offset(f"d3{RUN}", CLONE_A, 0)),
    ("clone the topic they subscribe to", clone(f"d3{RUN}", CLONE_B)),
    ("the topic they subscribe to, cloned", query_offset(f"d3{RUN}", CLONE_B, 0)),
    ("clone the other topic offline", clone(f"d3{RUN}", CLONE_A, offline=True)),
    ("the other topic, cloned offline", query_offset(f"d3{RUN}", CLONE_A, 0)),
]

# Queue 0 holds 3 messages, queue 1 one; 2 and 3 none. G3 is filtered out below; G4's -1 is before queue 2's first
# offset (0 on both: RocketMQ's store makes an empty queue for a queue it has not). 4.9.7 looks the compare group
# CMP up as CMP@CORR (queryOffset's arguments swapped), the offsets of topic CMP by group CORR: 0 on queue 1, below
# the lowest there (1), so queue 1 answers Long.MAX_VALUE.
CORRECTION_STEPS: list[Step] = [
    *((None, create_topic(t, 4)) for t in (CORR, CMP)),
    *((None, create_group(g)) for g in (f"G1{RUN}", f"G2{RUN}", f"G3{RUN}", f"G4{RUN}", CORR)),
    *((None, send_v2(CORR, b"c", queue_id=q)) for q in (0, 0, 0, 1)),
    *((None, commit(f"{g}{RUN}", CORR, q, o)) for g, q, o in (("G1", 0, 3), ("G1", 1, 1), ("G2", 0, 2), ("G2", 3, 0),
                                                              ("G3", 0, 0), ("G3", 1, 1), ("G4", 2, -1))),
    (None, commit(CORR, CMP, 1, 0)),
    ("the lowest offsets, the compare group's key past the lowest on queue 1", correction(CMP)),
    ("the lowest offsets, a compare group without that key", correction(f"G1{RUN}")),
    ("the lowest offsets of a topic without offsets", correction(f"G1{RUN}", f"NoOffsets{RUN}")),
    ("blank filter groups", correction(f"G1{RUN}", filter_groups=" ")),
    ("the lowest offsets of the groups not filtered out", correction(f"G1{RUN}", filter_groups=f"G3{RUN}")),
    ("G3's offset of queue 1, after it was filtered out", query_offset(f"G3{RUN}", CORR, 1)),
    (None, commit(CORR, CMP, 2, 5)),
    ("the compare group's key on a queue without a lowest offset (4.9.7: a NullPointerException)", correction(CMP)),
    # (G3 filtered out too: 4.9.7 deleted its offsets above, pocketmq kept them)
    ("the compare group's key filtered out", correction(CMP, filter_groups=f"G3{RUN},{CORR}")),
    ("correction offsets without the compare group", correction(None)),
    ("correction offsets without the topic", correction(f"G1{RUN}", None)),
]


async def _run_steps(side: Side, steps: list[Step]) -> dict[str, Answer]:
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    answers: dict[str, Answer] = {}
    try:
        for name, req in steps:
            answer = await invoke(client, side.broker, req)
            if name is None:
                assert answer.code == 0, (side.name, req, answer)
            else:
                answers[name] = answer
    finally:
        await client.close()
    return answers


# What differs on purpose (docs/compatibility.md): step -> (Apache's answer, pocketmq's), as (code, offset).
DIFFERENT_STEPS = {
    # RocketMQ walks the source group's topics for a blank topic, then clones topic null: nothing.
    BLANK_CLONE: ((0, "0"), (0, "5")),
    # RocketMQ deleted the filtered group's offsets (the queue's first offset is then its answer).
    "G3's offset of queue 1, after it was filtered out": ((0, "0"), (0, "1")),
    # A field the header class marks @CFNotNull: 4.9.7 logs the decoding error and goes on with null.
    "clone without its destination group": ((0, None), (1, None)),
    "correction offsets without the compare group": ((0, None), (1, None)),
}


@pytest.mark.parametrize("steps", [CLONE_STEPS, CORRECTION_STEPS], ids=["clone", "correction"])
def test_clone_and_correction_offsets_as_apache(steps: list[Step], sides: tuple[Side, Side]) -> None:
    """CLONE_GROUP_OFFSET and QUERY_CORRECTION_OFFSET answered as 4.9.7 answers them (code, remark, body, the
    body's bytes), and the offsets they leave the same but where docs/compatibility.md says otherwise."""
    apache, pocket = (asyncio.run(_run_steps(side, steps)) for side in sides)
    for name, theirs in apache.items():
        mine = pocket[name]
        if name in DIFFERENT_STEPS:
            assert [(a.code, a.ext.get("offset")) for a in (theirs, mine)] == list(DIFFERENT_STEPS[name]), name
            continue
        if theirs.code == 1:  # (Java's remark is the exception and its first stack frame; pocketmq's says why)
            assert (mine.code, mine.body) == (1, theirs.body), (name, theirs, mine)
            continue
        assert mine.view(remark=True) == theirs.view(remark=True), (name, theirs, mine)
        assert mine.raw_body == theirs.raw_body, (name, theirs.raw_body, mine.raw_body)
