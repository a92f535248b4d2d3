"""Issue 28's differential table: one request at a time sent to Apache RocketMQ 4.9.7 and to pocketmq over RocketMQ's
native protocol, the answers compared field by field (code, ext fields, JSON body; addresses, times and ids
masked, see differential.py). Each row says what it sends; a row whose answers differ on purpose says why, and
docs/compatibility.md lists it."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pocketmq.client.batch import encode_messages
from pocketmq.client.message import Message
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE
from pocketmq.common.message import properties_to_string
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

from .differential import NO_ANSWER, Answer, call, invoke, request

RUN = uuid.uuid4().hex[:6]
TOPIC = f"Diff{RUN}"  # 3 messages in queue 0, read by the pull and offset rows
SINK = f"Sink{RUN}"  # what the send rows write (a row's order must not matter)
GROUP = f"diff_g_{RUN}"
PRODUCER = f"diff_p_{RUN}"
V3_0_6, V3_0_7_SNAPSHOT = 27, 28  # MQVersion.Version ordinals


@dataclass
class Side:
    name: str
    namesrv: str
    broker: str
    broker_name: str
    sent: list[Answer] = field(default_factory=list)


def send_v2(topic: str, body: bytes = b"body", queue_id: int = 0, props: dict[str, str] | None = None,
            code: int = R.SEND_MESSAGE_V2, **overrides: Any) -> RemotingCommand:
    ext: dict[str, Any] = {"a": PRODUCER, "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
                           "g": int(time.time() * 1000), "h": 0,
                           "i": properties_to_string(props if props is not None else {"TAGS": "TagA", "KEYS": "k"}),
                           "j": 0, "k": False, "m": False}
    ext.update(overrides)
    return request(code, ext, body)


def send_v1(topic: str, body: bytes = b"body", **overrides: Any) -> RemotingCommand:
    ext: dict[str, Any] = {"producerGroup": PRODUCER, "topic": topic, "defaultTopic": "TBW102",
                           "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0,
                           "bornTimestamp": int(time.time() * 1000), "flag": 0,
                           "properties": properties_to_string({"TAGS": "TagA"}), "reconsumeTimes": 0,
                           "unitMode": False, "batch": False}
    ext.update(overrides)
    return request(R.SEND_MESSAGE, ext, body)


def pull(topic: str = TOPIC, offset: int = 0, queue_id: int = 0, subscription: str | None = "*",
         expression_type: str | None = "TAG", sys_flag: int = 2, **overrides: Any) -> RemotingCommand:
    ext: dict[str, Any] = {"consumerGroup": GROUP, "topic": topic, "queueId": queue_id, "queueOffset": offset,
                           "maxMsgNums": 32, "sysFlag": sys_flag, "commitOffset": 0, "suspendTimeoutMillis": 0,
                           "subVersion": 0, "subscription": subscription, "expressionType": expression_type}
    ext.update(overrides)
    return request(R.PULL_MESSAGE, ext)


def create_topic(topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
    return request(R.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues,
                                               "writeQueueNums": queues, "perm": perm,
                                               "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False})


def create_group(group: str) -> RemotingCommand:
    return request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps({"groupName": group}).encode())


def commit(group: str, topic: str = TOPIC, queue_id: int = 0, offset: int = 1) -> RemotingCommand:
    return request(R.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                              "commitOffset": offset})


def heartbeat(client_id: str, extra: dict[str, Any] | None = None, group: str = GROUP) -> bytes:
    """A consumer's HEART_BEAT body; ``extra`` adds fields RocketMQ's classes do not have."""
    subscription = {"topic": TOPIC, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0,
                    "expressionType": "TAG"}
    consumer = {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [subscription],
                "unitMode": False, **(extra or {})}
    return json.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [consumer],
                       **(extra or {})}).encode()


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


@dataclass
class Case:
    name: str
    target: str  # "broker" or "namesrv"
    build: Callable[[Side], RemotingCommand]
    ext_values: bool = True  # compare ext field values, not only their names
    body: bool = True
    remark: bool = False  # compare the remark too (addresses masked)
    # A deliberate difference (docs/compatibility.md): Apache's code, pocketmq's code, and why.
    differs: tuple[int, int, str] | None = None
    timeout: float = 15.0


CASES = [
    # --- name server ---
    Case("route of a known topic", "namesrv", lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})),
    Case("route of an unknown topic", "namesrv",
         lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": f"NoSuch{RUN}"}), remark=True),
    Case("route request without its topic", "namesrv", lambda s: request(R.GET_ROUTEINFO_BY_TOPIC),
         differs=(17, 1, "a field RocketMQ's header class marks @CFNotNull is missing: pocketmq answers SYSTEM_ERROR "
                  "naming it; 4.9.7's name server looks up the topic null")),
    Case("put a KV config", "namesrv",
         lambda s: request(R.PUT_KV_CONFIG, {"namespace": f"ns{RUN}", "key": "k", "value": "v"})),
    Case("get a KV config", "namesrv", lambda s: request(R.GET_KV_CONFIG, {"namespace": f"ns{RUN}", "key": "k"})),
    Case("get a missing KV config", "namesrv",
         lambda s: request(R.GET_KV_CONFIG, {"namespace": f"ns{RUN}", "key": "nope"})),
    Case("KV list of a missing namespace", "namesrv",
         lambda s: request(R.GET_KVLIST_BY_NAMESPACE, {"namespace": f"none{RUN}"})),
    Case("delete a KV config", "namesrv",
         lambda s: request(R.DELETE_KV_CONFIG, {"namespace": f"ns{RUN}", "key": "k"})),
    Case("KV list of a namespace whose last key was deleted", "namesrv",
         lambda s: request(R.GET_KVLIST_BY_NAMESPACE, {"namespace": f"ns{RUN}"})),
    # (Each side's broker serves its own number of topics: the counts are not compared.)
    Case("wipe the write permission of a broker", "namesrv",
         lambda s: request(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": s.broker_name}), ext_values=False),
    Case("a route once the broker's write permission is wiped", "namesrv",
         lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})),
    Case("add the write permission of a broker back", "namesrv",
         lambda s: request(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": s.broker_name}), ext_values=False),
    # (Each side lists its own settings under its own values: only the code is compared; test_mqadmin.py compares
    # the keys both have.)
    Case("name server config", "namesrv", lambda s: request(R.GET_NAMESRV_CONFIG), body=False),
    Case("turn order messages on at run time", "namesrv",
         lambda s: request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")),
    Case("put a topic's order conf", "namesrv", lambda s: request(
        R.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": TOPIC, "value": f"{s.broker_name}:2"})),
    Case("a route with its order conf", "namesrv", lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})),
    Case("change the name server's KV config path", "namesrv",
         lambda s: request(R.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/tmp/elsewhere.json\n")),
    Case("change a name server setting read only at start", "namesrv",
         lambda s: request(R.UPDATE_NAMESRV_CONFIG, body=b"listenPort=1\n"),
         differs=(0, 1, "4.9.7 keeps any key and answers SUCCESS, though the setting changes nothing until a restart "
                  "(or nothing at all, for a key it does not have); pocketmq answers SYSTEM_ERROR naming the keys "
                  "it can change at run time, as its UPDATE_BROKER_CONFIG does")),
    Case("turn order messages off again", "namesrv",
         lambda s: request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=false\n")),
    Case("a route once order messages are off", "namesrv",
         lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})),
    Case("delete a topic's order conf", "namesrv",
         lambda s: request(R.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": TOPIC})),
    Case("an unknown request code (name server)", "namesrv", lambda s: request(9999), timeout=3.0,
         differs=(NO_ANSWER, 3, "4.9.7's name server never answers a code it does not know (the caller times out); "
                  "pocketmq's answers REQUEST_CODE_NOT_SUPPORTED at once, as RocketMQ's broker does")),
    # --- sends ---
    Case("send, v1 header", "broker", lambda s: send_v1(SINK), ext_values=False),
    Case("send, v2 header", "broker", lambda s: send_v2(SINK, queue_id=1), ext_values=False),
    Case("send to a queue id the topic has not", "broker", lambda s: send_v2(SINK, queue_id=99), ext_values=False,
         remark=True),
    Case("send to an illegal topic name", "broker", lambda s: send_v2("bad topic!")),
    Case("send to a topic name of 128 characters", "broker", lambda s: send_v2("T" * 128)),
    Case("send to the default topic TBW102", "broker", lambda s: send_v2("TBW102")),
    Case("send an empty body", "broker", lambda s: send_v2(SINK, b""),
         differs=(0, 13, "the Java client refuses an empty body itself (MESSAGE_ILLEGAL, this remark); pocketmq's "
                  "broker gives clients that do not check the same answer")),
    Case("send a body over 4 MiB", "broker", lambda s: send_v2(SINK, b"x" * (4 * 1024 * 1024 + 1)), remark=True),
    Case("send without its producer group", "broker", lambda s: send_v2(SINK, a=None),
         differs=(0, 1, "a field RocketMQ's header class marks @CFNotNull is missing: pocketmq answers SYSTEM_ERROR "
                  "naming it; 4.9.7's fast header decoding for SEND_MESSAGE_V2 skips the check")),
    Case("send with a queue id that is not a number", "broker", lambda s: send_v2(SINK, e="zero")),
    Case("send to a topic that does not exist (auto-created from TBW102)", "broker",
         lambda s: send_v2(f"Auto{RUN}"), ext_values=False),
    Case("batch send", "broker", lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True,
                                                    body=_batch([b"one", b"two"])), ext_values=False),
    Case("batch send whose header carries a delay level", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=_batch([b"one"]),
                           i=properties_to_string({"DELAY": "1"}))),
    Case("batch send of a message with a delay level", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=_batch([b"one"], delay_level=1)),
         differs=(0, 13, "4.9.7 stores the batch's messages undelayed, their DELAY ignored; pocketmq refuses the "
                  "batch (MESSAGE_ILLEGAL, 'a batch cannot carry a delay level') rather than drop what was asked "
                  "for silently. The Java client refuses such a batch itself")),
    Case("batch send of messages with DELAY 0 and -1 (no delay)", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True,
                           body=_batch([b"one"], props={"DELAY": "0"}) + _batch([b"two"], props={"DELAY": "-1"})),
         ext_values=False),
    Case("batch send of a message with a timer (TIMER_DELAY_SEC)", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True,
                           body=_batch([b"one"], props={"TIMER_DELAY_SEC": "30"})),
         differs=(0, 13, "4.9.7 has no timer and stores the batch (5.5.0 too, its batch put reads no timer: both "
                  "deliver at once); pocketmq refuses the batch (MESSAGE_ILLEGAL, 'a batch cannot carry a timer') "
                  "as it refuses a delay level")),
    # (RocketMQ's put reads DELAY with Integer.parseInt: what it cannot read fails the put, SYSTEM_ERROR)
    Case("send with a DELAY that is no number", "broker", lambda s: send_v2(SINK, props={"DELAY": "abc"})),
    Case("send with DELAY ' 1' (parseInt takes no space)", "broker", lambda s: send_v2(SINK, props={"DELAY": " 1"})),
    Case("send with DELAY '1_0'", "broker", lambda s: send_v2(SINK, props={"DELAY": "1_0"})),
    Case("send with a DELAY past the int's range", "broker",
         lambda s: send_v2(SINK, props={"DELAY": "99999999999"})),
    Case("send with DELAY '+1' (level 1)", "broker", lambda s: send_v2(SINK, props={"DELAY": "+1"}),
         ext_values=False),
    Case("batch send whose header's DELAY is no number", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=_batch([b"one"]),
                           i=properties_to_string({"DELAY": "x"}))),
    # --- pulls ---
    Case("pull from offset 0", "broker", lambda s: pull(), body=False),
    Case("pull at the max offset", "broker", lambda s: pull(offset=3)),
    Case("pull beyond the max offset", "broker", lambda s: pull(offset=10)),
    Case("pull from a queue with nothing", "broker", lambda s: pull(queue_id=2, offset=5)),
    Case("pull a topic that does not exist", "broker", lambda s: pull(topic=f"NoSuch{RUN}"), remark=True),
    Case("pull with a tag expression", "broker", lambda s: pull(subscription="TagB", sys_flag=2), body=False),
    # (FLAG_SUBSCRIPTION, 4: without it both brokers filter by the group's heartbeat and never read these.)
    Case("pull with a malformed SQL92 expression", "broker",
         lambda s: pull(subscription="a >>> 1", expression_type="SQL92", sys_flag=4),
         differs=(0, 23, "4.9.7's ConsumerFilterManager.build answers null for an expression that does not "
                  "compile, and a filter without compiled data matches every message (FOUND, all of them); "
                  "pocketmq answers SUBSCRIPTION_PARSE_FAILED with the parse error")),
    Case("pull with SQL92 '--1 = 1' (no line end: two minus signs, not a comment)", "broker",
         lambda s: pull(subscription="--1 = 1", expression_type="SQL92", sys_flag=4), body=False),
    Case("pull with a blank tag expression (no tag: nothing matches)", "broker",
         lambda s: pull(subscription=" ", sys_flag=4)),
    Case("pull with ' * ' (the tag '*', not every message)", "broker", lambda s: pull(subscription=" * ", sys_flag=4)),
    Case("pull with the tag expression '||' (subString split error)", "broker",
         lambda s: pull(subscription="||", sys_flag=4)),
    Case("pull from a queue id the topic has not", "broker", lambda s: pull(queue_id=99), remark=True),
    # --- offsets ---
    Case("query a committed offset", "broker",
         lambda s: request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0})),
    Case("query the offset of a group that has none", "broker",
         lambda s: request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": f"none{RUN}", "topic": TOPIC, "queueId": 0})),
    Case("query the offset of a group that has none, of an empty queue", "broker",
         lambda s: request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": f"none{RUN}", "topic": TOPIC, "queueId": 1})),
    Case("max offset", "broker", lambda s: request(R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0})),
    Case("min offset", "broker", lambda s: request(R.GET_MIN_OFFSET, {"topic": TOPIC, "queueId": 0})),
    Case("max offset of a queue the topic has not", "broker",
         lambda s: request(R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 99})),
    Case("search an offset by a time before every message", "broker",
         lambda s: request(R.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": TOPIC, "queueId": 0, "timestamp": 1})),
    Case("earliest message store time of an empty queue", "broker",
         lambda s: request(R.GET_EARLIEST_MSG_STORETIME, {"topic": TOPIC, "queueId": 3})),
    # --- clients ---
    Case("heartbeat with fields RocketMQ does not know", "broker",
         lambda s: request(R.HEART_BEAT, body=heartbeat(f"cid-{RUN}", {"futureField": 1}))),
    Case("consumer list of a group nobody consumes in", "broker",
         lambda s: request(R.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": f"none{RUN}"})),
    # --- admin ---
    Case("create a topic with an illegal name", "broker", lambda s: create_topic("bad topic!")),
    Case("create a topic named like the default topic", "broker", lambda s: create_topic("TBW102")),
    Case("topic stats of a topic that does not exist", "broker",
         lambda s: request(R.GET_TOPIC_STATS_INFO, {"topic": f"NoSuch{RUN}"})),
    Case("consume stats of a group without offsets", "broker",
         lambda s: request(R.GET_CONSUME_STATS, {"consumerGroup": f"none{RUN}", "topic": TOPIC})),
    Case("delete a system topic on the broker", "broker",
         lambda s: request(R.DELETE_TOPIC_IN_BROKER, {"topic": "SCHEDULE_TOPIC_XXXX"})),
    Case("delete a topic under the system prefix on the broker", "broker",
         lambda s: request(R.DELETE_TOPIC_IN_BROKER, {"topic": "rmq_sys_wheel_timer"})),
    Case("change the cluster's reply topic", "broker", lambda s: create_topic("DefaultCluster_REPLY_TOPIC", 8)),
    Case("delete the cluster's reply topic on the broker", "broker",
         lambda s: request(R.DELETE_TOPIC_IN_BROKER, {"topic": "DefaultCluster_REPLY_TOPIC"})),
    Case("delete the broker's own topic on the broker", "broker",
         lambda s: request(R.DELETE_TOPIC_IN_BROKER, {"topic": "broker-a"})),
    Case("delete a subscription group that does not exist", "broker",
         lambda s: request(R.DELETE_SUBSCRIPTIONGROUP, {"groupName": f"none{RUN}"})),
    # (4.9.7 fails with a NullPointerException for a group it has no record of: the same code, its own remark)
    Case("consumer status of a group with no consumer online", "broker",
         lambda s: request(R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": TOPIC, "group": f"none{RUN}"})),
    Case("consumer status without its group", "broker",
         lambda s: request(R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": TOPIC})),
    Case("resume the check of a half message", "broker", lambda s: resume_check(_half_message(s)), remark=True),
    Case("resume the check of a message that is no half message", "broker",
         lambda s: resume_check(s.sent[0].ext["msgId"]), remark=True),
    Case("resume the check of an id in lower case with text after it", "broker",
         lambda s: resume_check(s.sent[1].ext["msgId"].lower() + "zz"), remark=True),
    Case("resume the check without a message id", "broker", lambda s: resume_check(None), remark=True),
    Case("resume the check of an id that is none", "broker", lambda s: resume_check("nonsense"), remark=True),
    Case("resume the check of an id naming an offset past the commit log", "broker",
         lambda s: resume_check(_offset_msg_id(s, 2**40)), remark=True),
    Case("resume the check of an id whose port is out of range", "broker",
         lambda s: resume_check(_offset_msg_id(s, 0, port=70000)), remark=True),
    Case("resume the check of a message whose properties the check count takes past 32767 bytes", "broker",
         lambda s: resume_check(_largest_message(s)), remark=True),
    Case("topic stats of a topic with messages", "broker", lambda s: request(R.GET_TOPIC_STATS_INFO, {"topic": TOPIC})),
    Case("consume stats of a group with an offset", "broker",
         lambda s: request(R.GET_CONSUME_STATS, {"consumerGroup": GROUP, "topic": TOPIC})),
    Case("who consumes a topic", "broker", lambda s: request(R.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": TOPIC})),
    # (after "who consumes a topic": the group committed here would be listed there too, in HashSet order)
    Case("commit an offset at the end of a queue", "broker", lambda s: commit(f"span{RUN}", offset=3)),
    Case("commit an offset for a group the broker does not have", "broker", lambda s: commit(f"nogroup{RUN}"),
         differs=(0, 26, "4.9.7 keeps any group's offset for good; pocketmq answers as 5.x, "
                  "SUBSCRIPTION_GROUP_NOT_EXIST (tests/apache/test_offset_commit_5.py)")),
    Case("commit an offset of a topic the broker does not have", "broker",
         lambda s: commit(GROUP, f"NoSuch{RUN}"),
         differs=(0, 17, "4.9.7 keeps any topic's offset for good; pocketmq answers as 5.x, TOPIC_NOT_EXIST")),
    Case("commit an offset of a queue the topic does not have", "broker", lambda s: commit(GROUP, queue_id=4),
         differs=(0, 29, "Apache keeps any queue's offset for good; pocketmq answers INVALID_PARAMETER "
                  "(docs/compatibility.md, deliberate differences)")),
    # (the empty queues' delay is "now" less -1, a time: masked)
    Case("consume time span of a group with nothing left to consume", "broker",
         lambda s: request(R.QUERY_CONSUME_TIME_SPAN, {"topic": TOPIC, "group": f"span{RUN}"})),
    Case("consume time span of an unknown topic", "broker",
         lambda s: request(R.QUERY_CONSUME_TIME_SPAN, {"topic": f"NoSuch{RUN}", "group": GROUP})),
    Case("cluster info", "namesrv", lambda s: request(R.GET_BROKER_CLUSTER_INFO)),
    Case("topics of a cluster", "namesrv",
         lambda s: request(R.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}), body=False),
    Case("broker runtime info", "broker", lambda s: request(R.GET_BROKER_RUNTIME_INFO), body=False),
    Case("broker config", "broker", lambda s: request(R.GET_BROKER_CONFIG), ext_values=False, body=False),
    Case("every topic config", "broker", lambda s: request(R.GET_ALL_TOPIC_CONFIG), body=False),
    Case("a pull of 0 messages (one, as the Go pull consumer's default gets)", "broker",
         lambda s: pull(maxMsgNums=0)),
    Case("a pull of -1 messages", "broker", lambda s: pull(offset=1, maxMsgNums=-1)),
    Case("an unknown request code (broker)", "broker", lambda s: request(9999)),
    Case("create a topic to delete from the name server", "broker", lambda s: create_topic(f"NsDel{RUN}")),
    Case("delete a topic in the name server with an empty cluster name (everywhere)", "namesrv",
         lambda s: request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": f"NsDel{RUN}", "clusterName": ""})),
    Case("route of the topic deleted with an empty cluster name", "namesrv",
         lambda s: request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": f"NsDel{RUN}"})),
]


def resume_check(msg_id: str | None) -> RemotingCommand:
    return request(R.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})


def _half_message(side: Side) -> str:
    """The offsetMsgId of a half message sent to ``side`` (its producer never says more)."""
    props = {"TAGS": "TagA", "TRAN_MSG": "true", "PGROUP": PRODUCER}
    answer = call(side.broker, send_v2(SINK, b"half", props=props, f=TRANSACTION_PREPARED_TYPE))
    assert answer.code == 0, (side.name, answer)
    return answer.ext["msgId"]


def _offset_msg_id(side: Side, offset: int, port: int | None = None) -> str:
    """An offsetMsgId of ``side``'s broker address (its port, or ``port``) naming ``offset``."""
    host, _, own_port = side.broker.rpartition(":")
    ip = "".join(f"{int(part):02X}" for part in host.split("."))
    return f"{ip}{port if port is not None else int(own_port):08X}{offset:016X}"


def _largest_message(side: Side) -> str:
    """The offsetMsgId of a message whose properties are as long as ``side``'s broker takes (a binary search on
    the length of one property: each broker adds its own to what it stores)."""
    low, high, msg_id = 32_000, 32_767, None
    while low <= high:
        pad = (low + high) // 2
        answer = call(side.broker, send_v2(SINK, b"big", props={"TAGS": "TagA", "PAD": "x" * pad}))
        if answer.code == 0:
            low, msg_id = pad + 1, answer.ext["msgId"]
        else:
            high = pad - 1
    assert msg_id is not None, side.name
    return msg_id


def _batch(bodies: list[bytes], delay_level: int = 0, props: dict[str, str] | None = None) -> bytes:
    msgs = [Message(SINK, b, tags="TagA", delay_time_level=delay_level) for b in bodies]
    for m in msgs:
        m.properties.update(props or {})  # (system properties too, which Message's own setters check)
    return encode_messages(msgs)


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
