"""The rows of the differential table (test_differential.py): what each sends, and where the answers differ on
purpose, why (docs/compatibility.md lists those rows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pocketmq.common.message import properties_to_string
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand

from .differential import NO_ANSWER, request
from .differential_requests import (
    GROUP,
    RUN,
    SINK,
    TOPIC,
    Side,
    batch,
    commit,
    create_topic,
    half_message,
    heartbeat,
    largest_message,
    offset_msg_id,
    pull,
    resume_check,
    send_v1,
    send_v2,
)


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
    # (Each side lists its own settings under its own values: only the code is compared; tests/apache/mqadmin/ compares
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
                                                    body=batch([b"one", b"two"])), ext_values=False),
    Case("batch send whose header carries a delay level", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=batch([b"one"]),
                           i=properties_to_string({"DELAY": "1"}))),
    Case("batch send of a message with a delay level", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=batch([b"one"], delay_level=1)),
         differs=(0, 13, "4.9.7 stores the batch's messages undelayed, their DELAY ignored; pocketmq refuses the "
                  "batch (MESSAGE_ILLEGAL, 'a batch cannot carry a delay level') rather than drop what was asked "
                  "for silently. The Java client refuses such a batch itself")),
    Case("batch send of messages with DELAY 0 and -1 (no delay)", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True,
                           body=batch([b"one"], props={"DELAY": "0"}) + batch([b"two"], props={"DELAY": "-1"})),
         ext_values=False),
    Case("batch send of a message with a timer (TIMER_DELAY_SEC)", "broker",
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True,
                           body=batch([b"one"], props={"TIMER_DELAY_SEC": "30"})),
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
         lambda s: send_v2(SINK, code=R.SEND_BATCH_MESSAGE, m=True, body=batch([b"one"]),
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
    Case("resume the check of a half message", "broker", lambda s: resume_check(half_message(s)), remark=True),
    Case("resume the check of a message that is no half message", "broker",
         lambda s: resume_check(s.sent[0].ext["msgId"]), remark=True),
    Case("resume the check of an id in lower case with text after it", "broker",
         lambda s: resume_check(s.sent[1].ext["msgId"].lower() + "zz"), remark=True),
    Case("resume the check without a message id", "broker", lambda s: resume_check(None), remark=True),
    Case("resume the check of an id that is none", "broker", lambda s: resume_check("nonsense"), remark=True),
    Case("resume the check of an id naming an offset past the commit log", "broker",
         lambda s: resume_check(offset_msg_id(s, 2**40)), remark=True),
    Case("resume the check of an id whose port is out of range", "broker",
         lambda s: resume_check(offset_msg_id(s, 0, port=70000)), remark=True),
    Case("resume the check of a message whose properties the check count takes past 32767 bytes", "broker",
         lambda s: resume_check(largest_message(s)), remark=True),
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

