"""The ACL file, the requests and the connections of test_differential_fuzz_acl.py.

Both servers read the same plain_acl.yml (ACL_YAML): admins with and without resource permissions, users whose
topicPerms/groupPerms hold DENY, PUB, SUB, PUB|SUB (and SUB|PUB, a lower-case perm, a padded entry) over defaults of
each kind, accounts whose whiteRemoteAddress is one pattern of each form, and a global white list. The requests come
from loopback addresses of their own (127.0.0.x, each a connection bound to it), so the white lists match some and
not others: 127.0.0.9 is in globalWhiteRemoteAddresses."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pocketmq.common.mix_all import UNIQUE_MSG_QUERY_FLAG
from pocketmq.common.mq_version import V4_9_3, V4_9_8
from pocketmq.remoting.acl.signer import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, cal_signature, combine_request_content
from pocketmq.remoting.codes import FLAG_RESPONSE, LanguageCode, SerializeType
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import decode_native_frames, encode_native

from .differential import NO_ANSWER, Answer, parse_body
from .send_fuzz_bodies import encode_item

SECRETS = {
    "AclAdmin01": "adminSecret01", "AclAdmin02": "adminSecret02", "AclUser01": "userSecret01",
    "AclUser02": "userSecret02", "AclUser03": "userSecret03", "AclWhite01": "whiteSecret01",
    "AclWhite02": "whiteSecret02", "AclWhite03": "whiteSecret03", "AclWhite04": "whiteSecret04",
    "AclWhite05": "whiteSecret05", "AclWhite06": "whiteSecret06",
}
ADMIN = "AclAdmin01"
ACL_YAML = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 127.0.0.{8,9}
accounts:
  - accessKey: AclAdmin01
    secretKey: adminSecret01
    admin: true
  - accessKey: AclAdmin02
    secretKey: adminSecret02
    admin: true
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
    topicPerms:
      - AclTDeny=DENY
    groupPerms:
      - AclGDeny=DENY
  - accessKey: AclUser01
    secretKey: userSecret01
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTDeny=DENY
      - AclTPub=PUB
      - AclTSub=SUB
      - AclTPubSub=PUB|SUB
      - AclTSubPub=SUB|PUB
      - AclTLower=pub
      - " AclTSpaced = PUB "
      - RMQ_SYS_TRACE_TOPIC=DENY
    groupPerms:
      - AclGDeny=DENY
      - AclGPub=PUB
      - AclGSub=SUB
      - AclGPubSub=PUB|SUB
  - accessKey: AclUser02
    secretKey: userSecret02
    defaultTopicPerm: PUB|SUB
    topicPerms:
      - AclTDeny=DENY
      - AclTSub=SUB
    groupPerms:
      - AclGSub=SUB
      - AclGPubSub=PUB|SUB
  - accessKey: AclUser03
    secretKey: userSecret03
  - accessKey: AclWhite01
    secretKey: whiteSecret01
    whiteRemoteAddress: 127.0.0.{2,3}
    defaultTopicPerm: DENY
  - accessKey: AclWhite02
    secretKey: whiteSecret02
    whiteRemoteAddress: 127.0.0.3-4
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: AclWhite03
    secretKey: whiteSecret03
    whiteRemoteAddress: 127.0.*.*
  - accessKey: AclWhite04
    secretKey: whiteSecret04
    whiteRemoteAddress: 10.10.10.10
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: AclWhite05
    secretKey: whiteSecret05
    whiteRemoteAddress: 127.0.0.1,127.0.0.4
    defaultGroupPerm: PUB
  - accessKey: AclWhite06
    secretKey: whiteSecret06
    whiteRemoteAddress: "*"
"""
SOURCES = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.9")
TOPICS = ("AclTDeny", "AclTPub", "AclTSub", "AclTPubSub", "AclTSubPub", "AclTLower", "AclTSpaced", "AclTOther")
GROUPS = ("AclGDeny", "AclGPub", "AclGSub", "AclGPubSub", "AclGOther")
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
UNKNOWN_CODE = 9999
# What pocketmq's ACL checks beyond 4.9.7's: PUB on a batch's and a reply's topic, and admin rights for more codes
# (docs/compatibility.md, "ACL"); 4.9.7 checks only the signature of these.
CHECKED_MORE = frozenset({R.SEND_BATCH_MESSAGE, R.SEND_REPLY_MESSAGE, R.SEND_REPLY_MESSAGE_V2,
                          R.CLEAN_EXPIRED_CONSUMEQUEUE, R.INVOKE_BROKER_TO_RESET_OFFSET})
SENDS = frozenset({R.SEND_MESSAGE, R.SEND_MESSAGE_V2, R.SEND_BATCH_MESSAGE, R.SEND_REPLY_MESSAGE,
                   R.SEND_REPLY_MESSAGE_V2})
NAMESRV_CODES = frozenset({R.GET_ROUTEINFO_BY_TOPIC, R.GET_BROKER_CLUSTER_INFO})


# PullSysFlag: 4 reads the header's subscription, 1 commits commitOffset; never 2 (suspend), which would park the
# pull. Without 4 the group's subscription is the one a heartbeat registered, if any.
PULL_FLAGS = st.sampled_from([4, 4, 5, 0])


def retry(group: str) -> str:
    return f"%RETRY%{group}"


@dataclass(frozen=True)
class Drawn:
    """One request as drawn: what to send, from where, signed how; ``topic`` the queue a send writes (queue 0)."""

    code: int
    ext: dict[str, str]
    body: bytes | None
    source: str
    signing: str
    account: str
    version: int
    binary: bool
    topic: str | None = None

    @property
    def target(self) -> str:
        return "namesrv" if self.code in NAMESRV_CODES else "broker"

    def command(self) -> RemotingCommand:
        ext, body = dict(self.ext), self.body
        if self.signing == "bare":  # no header fields at all: Java's extFields is null
            ext = {}
        elif self.signing != "no key":
            ext[ACCESS_KEY] = self.account
        if self.signing == "token":
            ext[SECURITY_TOKEN] = "token-" + self.account
        secret = SECRETS.get(self.account, "unknownSecret")
        left_out = UNIQUE_MSG_QUERY_FLAG if self.signing == "unique key unsigned" else None
        signed = {k: v for k, v in ext.items() if k != left_out}
        signature = cal_signature(combine_request_content(signed, body), secret)
        if self.signing == "wrong secret":
            signature = cal_signature(combine_request_content(signed, body), secret + "x")
        elif self.signing == "empty signature":
            signature = ""
        if self.signing not in ("no key", "no signature", "bare"):
            ext[SIGNATURE] = signature
        if self.signing == "tampered" and body and self.code != R.SEND_BATCH_MESSAGE:
            body = body + b"!"  # changed after signing, as a man in the middle would
        elif self.signing == "tampered":  # (a batch body changed is a corrupt batch: a header field instead)
            ext["tampered"] = "true"
        return RemotingCommand(self.code, language=int(LanguageCode.JAVA), version=self.version,
                               opaque=0, ext_fields=dict[str, object](ext), body=body,
                               serialize_type=SerializeType.ROCKETMQ if self.binary else SerializeType.JSON)


def signed_by(account: str, code: int, ext: dict[str, Any], body: bytes | None = None,
              source: str = "127.0.0.1") -> Drawn:
    return Drawn(code, {k: str(v) for k, v in ext.items()}, body, source, "signed", account, V4_9_8, False)


def heartbeat_body(client_id: str, consumers: list[tuple[str, list[str]]], producers: list[str]) -> bytes:
    data = {
        "clientID": client_id,
        "producerDataSet": [{"groupName": g} for g in producers],
        "consumerDataSet": [
            {"groupName": g, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
             "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
             "subscriptionDataSet": [{"classFilterMode": False, "topic": t, "subString": "*", "tagsSet": [],
                                      "codeSet": [], "subVersion": 1, "expressionType": "TAG"} for t in topics]}
            for g, topics in consumers],
    }
    return json.dumps(data).encode()


# Heartbeat bodies whose groups and topics a reader may find or not: nulls where a list, a name or a consumer
# should be, keys and strings as fastjson also reads them (single quotes, unquoted names), another JSON type. No
# subscription without a topic: 4.9.7 registers its consumer before it fails on one, pocketmq refuses the whole
# heartbeat (docs/compatibility.md, "a heartbeat with a subscription without a topic"), and what each then holds of
# the group would differ for the rest of the module (tests/remoting/test_acl.py reads such bodies' resources).
ODD_HEARTBEATS = [
    None, b"", b"{", b"{}", b"[]", b"null", b'"x"', b'{"consumerDataSet":null}', b'{"consumerDataSet":{}}',
    b'{"consumerDataSet":[null]}', b'{"consumerDataSet":[{}]}', b'{"consumerDataSet":[{"groupName":null}]}',
    b'{"consumerDataSet":[{"groupName":"AclGSub","subscriptionDataSet":null}]}',
    b'{"consumerDataSet":[{"groupName":"AclGSub","subscriptionDataSet":[null]}]}',
    b'{"consumerDataSet":[{"groupName":"AclGSub","subscriptionDataSet":[{"topic":"AclTDeny"}]}]}',
    b'{"consumerDataSet":[{"groupName":"AclGDeny"}]}', b'{"consumerDataSet":[{"groupName":""}]}',
    b'{"consumerDataSet":[{"groupName":5}]}', b'{"consumerDataSet":[{"groupName":"AclGDeny"}],"x":}',
    b"{'consumerDataSet':[{'groupName':'AclGDeny'}]}", b'{consumerDataSet:[{groupName:"AclGDeny"}]}',
    b'{"consumerDataSet":[{"groupName":"AclGSub"},{"groupName":"AclGDeny"}]}', b'{"producerDataSet":null}',
]
groups = st.sampled_from(GROUPS)
topics = st.one_of(st.sampled_from(TOPICS), st.just(TRACE_TOPIC), groups.map(retry))
signings = st.sampled_from(["signed"] * 6 + ["wrong secret", "no signature", "no key", "empty signature", "tampered",
                            "token", "bare"])
accounts = st.sampled_from([*SECRETS, "AclNobody01"])


@st.composite
def heartbeat_bodies(draw: Any, client_id: str) -> bytes | None:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        body = draw(st.sampled_from(ODD_HEARTBEATS))
        # (with the client's id: a heartbeat 4.9.7 takes without one poisons the connection's later heartbeats
        # with a NullPointerException, a heartbeat matter, not the ACL's)
        if body is None or len(body) < 3 or not body.startswith(b"{"):
            return body
        return b'{"clientID":"' + client_id.encode() + b'",' + body[1:]
    consumers = draw(st.lists(st.tuples(groups, st.lists(topics, max_size=2, unique=True)), max_size=2,
                              unique_by=lambda c: c[0]))
    return heartbeat_body(client_id, consumers, draw(st.lists(groups, max_size=1)))


@st.composite
def requests(draw: Any) -> Drawn:
    source = draw(st.sampled_from(SOURCES))
    kind = draw(st.sampled_from(["send_v2", "send_v2", "send_v1", "batch", "reply", "pull", "pull", "query_offset",
                                 "update_offset", "update_offset", "heartbeat", "heartbeat", "unregister",
                                 "consumer_list", "send_back", "query_message", "max_offset", "create_topic",
                                 "create_group", "delete_topic", "delete_group", "update_config", "get_config",
                                 "clean_cq", "reset_offset", "unknown", "route", "cluster"]))
    topic, group = draw(topics), draw(groups)
    body: bytes | None = None
    code, ext, stored = _build(draw, kind, topic, group, source)
    if kind in ("send_v2", "send_v1", "reply"):
        body = b"acl"
    elif kind == "batch":
        body = encode_item(0, b"acl", b"")
    elif kind == "heartbeat":
        body = draw(heartbeat_bodies(f"acl-fuzz@{source}"))
    elif kind == "create_group":
        body = json.dumps({"groupName": ext.pop("groupName")}).encode()
    signing = draw(signings)
    if kind == "query_message" and UNIQUE_MSG_QUERY_FLAG in ext and draw(st.booleans()):
        signing = "unique key unsigned"  # as Apache 5.x's and 4.9.7's brokers compute the content
    version = draw(st.sampled_from([V4_9_8, V4_9_8, V4_9_3]))
    return Drawn(code, ext, body, source, signing, draw(accounts), version, draw(st.integers(0, 4)) == 0, stored)


def _build(draw: Any, kind: str, topic: str, group: str, source: str) -> tuple[int, dict[str, str], str | None]:
    """(code, header fields, the topic whose queue 0 a send writes)."""
    now = str(int(time.time() * 1000))
    if kind in ("send_v2", "batch", "reply"):
        ext = {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": now, "h": "0",
               "j": "0", "k": "false", "m": "true" if kind == "batch" else "false"}
        if kind == "reply":
            ext["i"] = "CLUSTER\x01DefaultCluster\x02REPLY_TO_CLIENT\x01acl-fuzz\x02"
        code = {"send_v2": R.SEND_MESSAGE_V2, "batch": R.SEND_BATCH_MESSAGE, "reply": R.SEND_REPLY_MESSAGE_V2}[kind]
        return code, ext, topic
    if kind == "send_v1":
        ext = {"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
               "queueId": "0", "sysFlag": "0", "bornTimestamp": now, "flag": "0", "reconsumeTimes": "0"}
        if draw(st.booleans()):  # the field 4.9.7's ACL reads for a send to a retry topic (no v1 header has it)
            ext["group"] = draw(groups)
        return R.SEND_MESSAGE, ext, topic
    if kind == "pull":
        return R.PULL_MESSAGE, {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0",
                                "maxMsgNums": "1", "sysFlag": str(draw(PULL_FLAGS)), "commitOffset": "0",
                                "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
                                "expressionType": "TAG"}, None
    if kind in ("query_offset", "update_offset"):
        ext = {"consumerGroup": group, "topic": topic, "queueId": "0"}
        if kind == "update_offset":
            ext["commitOffset"] = str(draw(st.integers(0, 3)))
            return R.UPDATE_CONSUMER_OFFSET, ext, None
        return R.QUERY_CONSUMER_OFFSET, ext, None
    if kind == "heartbeat":
        return R.HEART_BEAT, {}, None
    if kind == "unregister":
        return R.UNREGISTER_CLIENT, {"clientID": f"acl-fuzz@{source}", "consumerGroup": group}, None
    if kind == "consumer_list":
        return R.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, None
    if kind == "send_back":
        return R.CONSUMER_SEND_MSG_BACK, {"group": group, "offset": "0", "delayLevel": "0",
                                          "originTopic": topic, "maxReconsumeTimes": "16"}, None
    if kind == "query_message":
        ext = {"topic": topic, "key": "AclNoKey", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": now}
        if draw(st.booleans()):
            ext[UNIQUE_MSG_QUERY_FLAG] = "true"
        return R.QUERY_MESSAGE, ext, None
    if kind == "max_offset":
        return R.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"}, None
    if kind == "create_topic":
        return R.UPDATE_AND_CREATE_TOPIC, topic_config(draw(st.sampled_from(TOPICS))), None
    if kind == "create_group":
        return R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": group}, None
    if kind == "delete_topic":  # (names no topic: the module's stay)
        return R.DELETE_TOPIC_IN_BROKER, {"topic": "AclScratch"}, None
    if kind == "delete_group":
        return R.DELETE_SUBSCRIPTIONGROUP, {"groupName": "AclGScratch"}, None
    if kind == "update_config":
        return R.UPDATE_BROKER_CONFIG, {}, None
    if kind == "get_config":
        return R.GET_BROKER_CONFIG, {}, None
    if kind == "clean_cq":
        return R.CLEAN_EXPIRED_CONSUMEQUEUE, {}, None
    if kind == "reset_offset":
        return R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": topic, "group": group, "timestamp": "0",
                                                 "isForce": "false"}, None
    if kind == "unknown":
        return UNKNOWN_CODE, {"topic": topic}, None
    if kind == "route":
        return R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, None
    return R.GET_BROKER_CLUSTER_INFO, {}, None


def topic_config(topic: str) -> dict[str, str]:
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}


class Connections:
    """One connection per (server address, source address), kept for the module: a heartbeat's client stays
    registered on it, as a real client's would."""

    def __init__(self) -> None:
        self._socks: dict[tuple[str, str], socket.socket] = {}
        self._opaque = 0

    def call(self, addr: str, source: str, cmd: RemotingCommand, timeout: float = 5.0) -> Answer:
        key = (addr, source)
        sock = self._socks.get(key)
        if sock is None:
            host, port = addr.rsplit(":", 1)
            sock = self._socks[key] = socket.create_connection((host, int(port)), timeout, (source, 0))
        self._opaque += 1
        cmd.opaque = self._opaque
        try:
            sock.settimeout(timeout)
            sock.sendall(encode_native(cmd))
            while True:  # (skipping what the server asks of the client: NOTIFY_CONSUMER_IDS_CHANGED...)
                resp = self._read(sock)
                if resp.flag & FLAG_RESPONSE and resp.opaque == cmd.opaque:
                    break
        except (TimeoutError, OSError, ConnectionError) as e:
            self._socks.pop(key).close()
            return Answer(NO_ANSWER, f"no answer: {e!r}", {}, None)
        ext = {k: str(v) for k, v in (resp.ext_fields or {}).items()}
        return Answer(resp.code, resp.remark, ext, parse_body(resp.body), resp.body)

    @staticmethod
    def _read(sock: socket.socket) -> RemotingCommand:
        head = _read_exactly(sock, 4)
        (cmd,) = decode_native_frames(head + _read_exactly(sock, int.from_bytes(head, "big")))
        return cmd

    def close(self) -> None:
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the server")
        data += chunk
    return bytes(data)
