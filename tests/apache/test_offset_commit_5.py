"""UPDATE_CONSUMER_OFFSET (15) sent to Apache RocketMQ 5.5.0's broker and to pocketmq's: a commit for a group or a
topic the broker does not have is refused, with the same code and remark (4.9.7 kept any offset for good:
test_differential.py); a refused commit does not create the group (autoCreateSubscriptionGroup is for heartbeats
and pulls); a consumer's heartbeat does, after which its commit is kept. The offset of a group new to an empty queue
is not found on 5.5.0, 0 on pocketmq (and 4.9.7). A send to a queue id the topic has not is INVALID_PARAMETER on
5.5.0, SYSTEM_ERROR on pocketmq (and 4.9.7), with the same remark. QUERY_CONSUMER_OFFSET's setZeroIfNotFound: "false"
(or any text but "true" in some case) answers QUERY_NOT_FOUND for a group without an offset of the queue, whatever
the queue holds, on both."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from pocketmq.common.message import properties_to_string
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import call, request

RUN = uuid.uuid4().hex[:6]
TOPIC, GROUP, NEW_GROUP = f"Commit{RUN}", f"commit_g_{RUN}", f"commit_hb_{RUN}"


def commit(group: str, topic: str = TOPIC, queue_id: int = 0, offset: int = 1) -> RemotingCommand:
    return request(R.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                              "commitOffset": offset})


def heartbeat(group: str) -> RemotingCommand:
    consumer = {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [], "unitMode": False}
    body = {"clientID": f"127.0.0.1@commit{RUN}", "producerDataSet": [], "consumerDataSet": [consumer]}
    return request(R.HEART_BEAT, None, json.dumps(body).encode())


def create_topic(broker: str, topic: str = TOPIC) -> None:
    create = request(R.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4,
                                                 "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
                                                 "topicSysFlag": 0, "order": False})
    assert call(broker, create).code == 0


def answers(broker: str) -> dict[str, Any]:
    create_topic(broker)
    group = request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps({"groupName": GROUP}).encode())
    assert call(broker, group).code == 0
    steps = {
        "unknown group": commit(f"none_{RUN}"),
        "unknown group, again (the refusal created nothing)": commit(f"none_{RUN}"),
        "unknown group and topic (the group is checked first)": commit(f"none_{RUN}", f"NoSuch{RUN}"),
        "unknown topic": commit(GROUP, f"NoSuch{RUN}"),
        "known group and topic": commit(GROUP, offset=7),
        "the offset read back": request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC,
                                                                  "queueId": 0}),
        "the offset of a queue with no message and no commit": request(
            R.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 1}),
        "a group before its consumer's heartbeat": commit(NEW_GROUP),
        "its consumer's heartbeat": heartbeat(NEW_GROUP),
        "the group after the heartbeat": commit(NEW_GROUP, offset=3),
    }
    out = {}
    for name, command in steps.items():
        answer = call(broker, command)
        out[name] = (answer.code, answer.remark, answer.ext.get("offset"))
    return out


def test_a_commit_for_a_group_or_topic_the_broker_does_not_have_is_refused_as_by_apache_5(
    apache_rocketmq5: ApacheRocketMQ, tmp_path: Any
) -> None:
    apache = answers(apache_rocketmq5.broker_addr)
    with ThreadedCluster(tmp_path) as pocket:
        pocketmq = answers(pocket.broker_addr)
        # A deliberate difference (docs/compatibility.md): 5.5.0 keeps an offset of any queue id, pocketmq only of
        # the topic's queues.
        beyond = [call(broker, commit(GROUP, queue_id=99)) for broker in (apache_rocketmq5.broker_addr,
                                                                          pocket.broker_addr)]
    # A deliberate difference (docs/compatibility.md): pocketmq answers 0, as 4.9.7 (test_differential.py).
    empty_queue = "the offset of a queue with no message and no commit"
    assert [apache.pop(empty_queue)[0], pocketmq.pop(empty_queue)] == [22, (0, None, "0")]
    assert pocketmq == apache
    assert [a.code for a in beyond] == [0, 29], beyond
    assert apache["unknown group"] == (26, f"Group none_{RUN} not exist!", None)
    assert apache["unknown topic"] == (17, f"Topic NoSuch{RUN} not exist!", None)
    assert apache["the offset read back"][::2] == (0, "7")
    assert apache["the group after the heartbeat"][0] == 0


def send_to_queue(queue_id: int, topic: str = TOPIC) -> RemotingCommand:
    return request(R.SEND_MESSAGE_V2, {"a": f"commit_p_{RUN}", "b": topic, "c": "TBW102", "d": 4, "e": queue_id,
                                       "f": 0, "g": int(time.time() * 1000), "h": 0,
                                       "i": properties_to_string({"TAGS": "t"}), "j": 0, "k": False, "m": False},
                   b"body")


def test_a_send_to_a_queue_the_topic_has_not_is_refused_with_4_9_7s_code(
    apache_rocketmq5: ApacheRocketMQ, tmp_path: Any
) -> None:
    with ThreadedCluster(tmp_path) as pocket:
        sides = {"apache": apache_rocketmq5.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in sides.values():
            create_topic(broker)
        refused = {name: call(broker, send_to_queue(4)) for name, broker in sides.items()}
        stored = {name: call(broker, send_to_queue(3)).code for name, broker in sides.items()}
    assert stored == {"apache": 0, "pocketmq": 0}
    # A deliberate difference (docs/compatibility.md): pocketmq answers SYSTEM_ERROR, as 4.9.7 (test_differential.py).
    assert {name: answer.code for name, answer in refused.items()} == {"apache": 29, "pocketmq": 1}
    remarks = {name: re.sub(r" Producer: .*$", "", answer.remark or "") for name, answer in refused.items()}
    assert remarks["pocketmq"].startswith("request queueId[4] is illegal, TopicConfig [topicName="), remarks
    assert remarks["apache"].split(", ")[:2] == remarks["pocketmq"].split(", ")[:2], remarks


ZERO_TOPIC, ZERO_GROUP = f"ZeroIf{RUN}", f"zero_g_{RUN}"
# setZeroIfNotFound as sent: absent, and texts Java's Boolean.parseBoolean reads as true ("true" in any case) or false.
SET_ZERO = (None, "true", "TRUE", "false", "yes", "")
QUEUES = {0: "an empty queue", 1: "two messages, no commit", 2: "two messages, committed at 1"}


def zero_if_answers(broker: str) -> dict[tuple[str, str | None], tuple[int, str | None, str | None]]:
    create_topic(broker, ZERO_TOPIC)
    group = request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps({"groupName": ZERO_GROUP}).encode())
    assert call(broker, group).code == 0
    for queue_id in (1, 1, 2, 2):
        assert call(broker, send_to_queue(queue_id, ZERO_TOPIC)).code == 0
    assert call(broker, commit(ZERO_GROUP, ZERO_TOPIC, queue_id=2, offset=1)).code == 0
    # The consume queues are written after the send answers: wait until both queues show their messages.
    maxes: list[str | None] = []
    for _ in range(200):
        maxes = [call(broker, request(R.GET_MAX_OFFSET, {"topic": ZERO_TOPIC, "queueId": q})).ext.get("offset")
                 for q in (1, 2)]
        if maxes == ["2", "2"]:
            break
        time.sleep(0.05)
    assert maxes == ["2", "2"], maxes
    out = {}
    for queue_id, name in QUEUES.items():
        for set_zero in SET_ZERO:
            answer = call(broker, request(R.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": ZERO_GROUP, "topic": ZERO_TOPIC, "queueId": queue_id, "setZeroIfNotFound": set_zero}))
            out[(name, set_zero)] = (answer.code, answer.remark, answer.ext.get("offset"))
    return out


def test_set_zero_if_not_found_answers_as_apache_5(apache_rocketmq5: ApacheRocketMQ, tmp_path: Any) -> None:
    apache = zero_if_answers(apache_rocketmq5.broker_addr)
    with ThreadedCluster(tmp_path) as pocket:
        pocketmq = zero_if_answers(pocket.broker_addr)
    # A deliberate difference (docs/compatibility.md): a group new to an empty queue that lets the broker answer 0
    # gets 0 from pocketmq (as from 4.9.7), QUERY_NOT_FOUND from 5.5.0.
    for set_zero in (None, "true", "TRUE"):
        assert apache.pop(("an empty queue", set_zero))[0] == 22
        assert pocketmq.pop(("an empty queue", set_zero)) == (0, None, "0")
    assert pocketmq == apache
    not_found = (22, "Not found, do not set to zero, maybe this group boot first", None)
    for set_zero in SET_ZERO:
        committed = apache[("two messages, committed at 1", set_zero)]
        assert committed == (0, None, "1"), (set_zero, committed)
        expected = (0, None, "0") if set_zero in (None, "true", "TRUE") else not_found
        assert apache[("two messages, no commit", set_zero)] == expected, set_zero
    for set_zero in ("false", "yes", ""):
        assert apache[("an empty queue", set_zero)] == not_found, set_zero
