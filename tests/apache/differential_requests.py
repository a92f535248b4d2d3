"""The requests of the differential table (test_differential.py) and of the modules that send the same ones to
Apache RocketMQ and to pocketmq: each builder fills RocketMQ's header fields as its Java client does, so a row
changes only what it tests."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pocketmq.client.batch import encode_messages
from pocketmq.client.message import Message
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE
from pocketmq.common.message import properties_to_string
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand

from .differential import Answer, call, request

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



def resume_check(msg_id: str | None) -> RemotingCommand:
    return request(R.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})


def half_message(side: Side) -> str:
    """The offsetMsgId of a half message sent to ``side`` (its producer never says more)."""
    props = {"TAGS": "TagA", "TRAN_MSG": "true", "PGROUP": PRODUCER}
    answer = call(side.broker, send_v2(SINK, b"half", props=props, f=TRANSACTION_PREPARED_TYPE))
    assert answer.code == 0, (side.name, answer)
    return answer.ext["msgId"]


def offset_msg_id(side: Side, offset: int, port: int | None = None) -> str:
    """An offsetMsgId of ``side``'s broker address (its port, or ``port``) naming ``offset``."""
    host, _, own_port = side.broker.rpartition(":")
    ip = "".join(f"{int(part):02X}" for part in host.split("."))
    return f"{ip}{port if port is not None else int(own_port):08X}{offset:016X}"


def largest_message(side: Side) -> str:
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


def batch(bodies: list[bytes], delay_level: int = 0, props: dict[str, str] | None = None) -> bytes:
    msgs = [Message(SINK, b, tags="TagA", delay_time_level=delay_level) for b in bodies]
    for m in msgs:
        m.properties.update(props or {})  # (system properties too, which Message's own setters check)
    return encode_messages(msgs)


