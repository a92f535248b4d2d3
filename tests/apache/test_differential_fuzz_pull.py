"""PULL_MESSAGE's answer and what it does to the group's offsets, fuzzed against Apache RocketMQ 4.9.7: a topic of
this module's with 4 queues holding different numbers of messages (one empty, one past a pull's 32), the same on
both servers, and a group of this module's, registered by a heartbeat (a TAG subscription of the topic) on a
connection each side keeps. Hypothesis draws a pull: the queue id (-1, each real one, past the count), the queue
offset (negative, 0, inside, at the max, past it, huge), maxMsgNums (0, 1, some, 32, over 32, negative), the sysFlag
bits (commit offset, suspend, subscription, class filter) with a commitOffset (negative, inside, past the max), a
subVersion below, at and above the heartbeat's, a small suspendTimeoutMillis, a posted TAG subscription; before it
the queue's committed offset is set to a drawn start on both (UPDATE_CONSUMER_OFFSET, -1 standing for none), after it
QUERY_CONSUMER_OFFSET reads it back. Both must answer the same code, nextBeginOffset, minOffset, maxOffset,
suggestWhichBrokerId and queue offsets of the messages, and the same committed offset after (or the same refusal).

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Left out, each with its
row in docs/compatibility.md ("Differences"): offsets committed to a queue id the topic does not have (no reset is
sent for one; a pull of such a queue is refused before its commit on both). A parked pull (suspend, nothing to
read) is answered by 4.9.7 at its hold service's next 5 s tick ("timers"): suspend is drawn rarely, and the two
servers are asked at once."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import decode_all
from pocketmq.common.pull_sys_flag import FLAG_SUSPEND
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, invoke, request
from .differential_requests import commit, create_group, create_topic, pull, send_v2

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzPull{RUN}"
GROUP = f"cgPull{RUN}"
CLIENT_ID = f"127.0.0.1@pullfuzz{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
COUNTS = [5, 0, 40, 1]  # messages per queue: queue 1 empty, queue 2 more than a pull's 32
TAGS = ["TagA", "TagB", None, "TagC"]  # of message i of a queue: TAGS[i % 4]
SUB_VERSION = 1000  # the heartbeat's subscription
HEARTBEAT_SUBSCRIPTION = "TagA || TagC"


def heartbeat_body() -> bytes:
    subscription = {"topic": TOPIC, "subString": HEARTBEAT_SUBSCRIPTION, "tagsSet": ["TagA", "TagC"],
                    "codeSet": [hash_code("TagA"), hash_code("TagC")], "subVersion": SUB_VERSION,
                    "expressionType": "TAG", "classFilterMode": False}
    consumer = {"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [subscription],
                "unitMode": False}
    return json.dumps({"clientID": CLIENT_ID, "producerDataSet": [], "consumerDataSet": [consumer]}).encode()


def hash_code(text: str) -> int:
    """Java's String.hashCode, the code of a tag."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def count_of(queue_id: int) -> int:
    return COUNTS[queue_id] if 0 <= queue_id < len(COUNTS) else 0


def offsets_around(count: int) -> st.SearchStrategy[int]:
    """Negative, 0, inside, at the max, past it, huge."""
    return st.one_of(st.sampled_from([0, count, count + 1, -1]), st.integers(0, count),
                     st.sampled_from([-5, -(2**63), count + 50, 2**31, 2**62, 2**63 - 1]))


@st.composite
def pulls(draw: Any) -> tuple[int, int, dict[str, Any]]:
    """The queue id, the start committed before the pull (-1: none), and the pull's header fields."""
    queue_id = draw(st.sampled_from([0, 1, 2, 3, 0, 2, -1, 4, 7]))
    count = count_of(queue_id)
    start = draw(st.one_of(st.just(-1), st.sampled_from([0, count, count + 1]), st.integers(0, count)))
    sys_flag = draw(st.integers(0, 15))
    if draw(st.integers(0, 5)):
        sys_flag &= ~FLAG_SUSPEND  # (rarely: a parked pull costs up to 5 s on 4.9.7)
    ext: dict[str, Any] = {
        "queueOffset": draw(offsets_around(count)),
        # (never huge: 4.9.7 allocates a list of that many)
        "maxMsgNums": draw(st.sampled_from([0, 1, 3, 32, 33, 100, -1, -(2**31)])),
        "sysFlag": sys_flag,
        "commitOffset": draw(offsets_around(count)),
        "subVersion": draw(st.sampled_from([0, 1, SUB_VERSION - 1, SUB_VERSION, SUB_VERSION + 1, -1])),
        "suspendTimeoutMillis": draw(st.integers(20, 200)) if sys_flag & FLAG_SUSPEND else draw(
            st.sampled_from([0, 20, 15_000])),
        "subscription": draw(st.sampled_from(["*", "TagA", "TagB", "TagA || TagB", "TagC||TagA", "NoSuch", "",
                                              None, " TagA ", "tagA"])),
        "expressionType": draw(st.sampled_from(["TAG", "TAG", None])),
    }
    return queue_id, start, ext


class Side:
    """A server's broker and a connection of its own, which carries the heartbeat that registers the group."""

    def __init__(self, loop: asyncio.AbstractEventLoop, broker: str) -> None:
        self.loop, self.broker = loop, broker
        self.client = RemotingClient(wire_protocol=WireProtocol.NATIVE)

    async def ask(self, req: RemotingCommand) -> Answer:
        return await invoke(self.client, self.broker, req, 15.0)


def ask_both(sides: dict[str, Side], make: Any) -> dict[str, Answer]:
    """``make()``'s request to each side, at once (a parked pull costs one wait, not one per side)."""
    loop = next(iter(sides.values())).loop

    async def each() -> list[Answer]:
        return await asyncio.gather(*(side.ask(make()) for side in sides.values()))

    return dict(zip(sides, loop.run_until_complete(each()), strict=True))


def register(sides: dict[str, Side]) -> None:
    """The group's consumer (again: 4.9.7 drops a channel idle for 2 minutes)."""
    answers = ask_both(sides, lambda: request(R.HEART_BEAT, None, heartbeat_body()))
    assert all(a.code == C.SUCCESS for a in answers.values()), answers


def queried(answer: Answer) -> dict[str, Any]:
    if answer.code == C.SUCCESS:
        return {"offset": int(answer.ext["offset"])}
    return {"code": answer.code}


def pulled(answer: Answer) -> dict[str, Any]:
    out: dict[str, Any] = {"code": answer.code}
    for key in ("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"):
        out[key] = answer.ext.get(key)
    if answer.code == C.SUCCESS and answer.raw_body:
        out["offsets"] = [m.queue_offset for m in decode_all(answer.raw_body)]
    return out


def wait_for_counts(broker: str) -> bool:
    for queue_id, count in enumerate(COUNTS):
        answer = call(broker, request(R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": queue_id}))
        if answer.code != C.SUCCESS or int(answer.ext["offset"]) != count:
            return False
    return True


@pytest.fixture(scope="module")
def servers(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    loop = asyncio.new_event_loop()
    with ThreadedCluster(tmp_path_factory.mktemp("fuzzpull")) as pocket:
        brokers = {"apache": apache_rocketmq.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in brokers.values():
            assert call(broker, create_topic(TOPIC, queues=len(COUNTS))).code == C.SUCCESS
            assert call(broker, create_group(GROUP)).code == C.SUCCESS
            for queue_id, count in enumerate(COUNTS):
                for i in range(count):
                    tag = TAGS[i % len(TAGS)]
                    answer = call(broker, send_v2(TOPIC, f"q{queue_id}m{i}".encode(), queue_id=queue_id,
                                                  props={"TAGS": tag} if tag else {}))
                    assert answer.code == C.SUCCESS and answer.ext["queueOffset"] == str(i), (broker, answer)
        for name, broker in brokers.items():  # (a send is answered before its consume queue entry is written)
            for _ in range(200):
                if wait_for_counts(broker):
                    break
                loop.run_until_complete(asyncio.sleep(0.05))
            else:
                raise AssertionError(f"{name} never listed the messages")
        sides = {name: Side(loop, broker) for name, broker in brokers.items()}
        try:
            register(sides)
            yield sides
        finally:
            for side in sides.values():
                loop.run_until_complete(side.client.close())
            loop.close()
    call(apache_rocketmq.broker_addr, request(R.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}))
    call(apache_rocketmq.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": TOPIC}))


@settings(max_examples=EXAMPLES or 60, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(pulls())
def test_same_pull_answer_and_offsets_as_apache(servers: dict[str, Side], drawn: tuple[int, int, dict[str, Any]]
                                                ) -> None:
    queue_id, start, ext = drawn
    register(servers)
    if 0 <= queue_id < len(COUNTS):
        reset = ask_both(servers, lambda: commit(GROUP, TOPIC, queue_id, start))
        assert all(a.code == C.SUCCESS for a in reset.values()), reset
    answers = ask_both(servers, lambda: pull(TOPIC, queue_id=queue_id, consumerGroup=GROUP, **ext))
    after = ask_both(servers, lambda: request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC,
                                                                         "queueId": queue_id}))
    seen = {name: {"pull": pulled(answers[name]), "committed": queried(after[name])} for name in servers}
    event(f"pull answered {answers['apache'].code}")
    assert seen["pocketmq"] == seen["apache"], (queue_id, start, ext, seen,
                                                {n: a.remark for n, a in answers.items()})
