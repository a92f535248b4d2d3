"""Plain ACL (plain_acl.yml, RocketMQ 4.x's ACL 1.0) against Apache RocketMQ 4.9.7: an Apache name server and
broker with aclEnable=true and a pocketmq cluster read the same file (acl_fuzz_requests.ACL_YAML), and hypothesis
draws requests (sends of each kind, pulls, offsets, heartbeats, unregisters, admin requests, route reads...) to a
drawn topic or group (retry topics too), from a drawn loopback address, signed by a drawn account, with a wrong
secret, an empty signature, none, no AccessKey, or changed after signing. Both must decide alike: refused by the
ACL or not (4.9.7 refuses with SYSTEM_ERROR and its AclException, pocketmq with NO_PERMISSION: docs/compatibility.md,
"ACL refusal"), an allowed request answered with the same code, and a send's queue holding as many messages on both.

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. Cases that differ on
purpose (docs/compatibility.md, "ACL") are left out by name."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings

from pocketmq.common.mix_all import UNIQUE_MSG_QUERY_FLAG
from pocketmq.common.mq_version import V4_9_3
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .acl_fuzz_requests import (
    ACL_YAML,
    ADMIN,
    CHECKED_MORE,
    GROUPS,
    SECRETS,
    SENDS,
    TOPICS,
    Connections,
    Drawn,
    requests,
    signed_by,
    topic_config,
)
from .differential import Answer

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
REFUSED = "refused by the ACL"
PULL_ANSWERS = frozenset({C.SUCCESS, C.PULL_NOT_FOUND, C.PULL_RETRY_IMMEDIATELY, C.PULL_OFFSET_MOVED})
# The texts of pocketmq's refusals (pocketmq/remoting/acl/validator.py): NO_PERMISSION alone is also a topic's
# or a broker's write permission, which no ACL decided.
POCKETMQ_REFUSALS = ("No accessKey is configured", "No acl config for", "Check signature failed",
                     "Need admin permission", "No permission for", "No default permission for",
                     "cannot read the heartbeat body", "access check failed")


@dataclass
class Side:
    broker: str
    namesrv: str

    def addr(self, target: str) -> str:
        return self.namesrv if target == "namesrv" else self.broker


@dataclass
class Servers:
    sides: dict[str, Side]
    conns: Connections
    # Topics a known difference stored a message in on one side only: what a pull of them finds may differ.
    diverged: set[str] = field(default_factory=set)

    def call(self, name: str, drawn: Drawn) -> Answer:
        return self.conns.call(self.sides[name].addr(drawn.target), drawn.source, drawn.command())

    def admin(self, name: str, code: int, ext: dict[str, str], body: bytes | None = None) -> Answer:
        return self.call(name, signed_by(ADMIN, code, ext, body))


def verdict(side: str, drawn: Drawn, answer: Answer, diverged: set[str]) -> str | int:
    """What a server decided: refused by its ACL, else the code it answered."""
    remark = answer.remark or ""
    if side == "apache" and answer.code == C.SYSTEM_ERROR and "AclException" in remark:
        return REFUSED
    if side == "pocketmq" and answer.code == C.NO_PERMISSION and remark.startswith(POCKETMQ_REFUSALS):
        return REFUSED
    if drawn.code == R.INVOKE_BROKER_TO_RESET_OFFSET:
        return "answered"  # (how a reset of a group without offsets is answered: docs/compatibility.md's row)
    if drawn.code == R.PULL_MESSAGE and drawn.ext["topic"] in diverged and answer.code in PULL_ANSWERS:
        return "answered"
    return answer.code


def known_difference(drawn: Drawn, answers: dict[str, Answer], verdicts: dict[str, str | int]) -> bool:
    """A difference docs/compatibility.md lists. Its "ACL" row: pocketmq checks the topic of a batch and of a
    reply and admin rights for more codes, where 4.9.7 checks their signature only, and it checks a query by
    unique key with the flag for clients after 4.9.3, as Apache 5.x, where 4.9.7 leaves the flag out for every
    client. And what the requests that pass the ACL then meet: a request without the fields its header requires,
    an offset committed to a retry topic not made yet, a batch sent to a retry topic."""
    if verdicts["apache"] == verdicts["pocketmq"]:
        return False
    if drawn.signing == "bare" and REFUSED not in verdicts.values():
        return True  # what a request without its header fields gets: "a request without a field ... @CFNotNull"
    pocket_remark = answers["pocketmq"].remark or ""
    if drawn.code in CHECKED_MORE and verdicts["apache"] != REFUSED and verdicts["pocketmq"] == REFUSED:
        return pocket_remark.startswith(("Need admin permission", "No permission for", "No default permission"))
    if drawn.code == R.UPDATE_CONSUMER_OFFSET and verdicts["apache"] == C.SUCCESS:
        # "UPDATE_CONSUMER_OFFSET for a group or a topic the broker does not have" (a retry topic not made yet)
        return verdicts["pocketmq"] in (C.TOPIC_NOT_EXIST, C.SUBSCRIPTION_GROUP_NOT_EXIST)
    if drawn.code == R.SEND_BATCH_MESSAGE and verdicts["apache"] == C.SUCCESS:
        return "does not support retry group" in pocket_remark  # "a batch sent to a retry topic"
    if drawn.code == R.QUERY_MESSAGE and UNIQUE_MSG_QUERY_FLAG in drawn.ext and drawn.version > V4_9_3:
        return "Check signature failed" in pocket_remark or "Check signature failed" in (answers["apache"].remark
                                                                                          or "")
    return False


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    root = tmp_path_factory.mktemp("fuzzacl")
    (root / "apache" / "conf").mkdir(parents=True)
    (root / "apache" / "conf" / "plain_acl.yml").write_text(ACL_YAML, encoding="utf-8")
    (root / "plain_acl.yml").write_text(ACL_YAML, encoding="utf-8")
    apache = ApacheRocketMQ(root / "apache", aclEnable="true")
    # (the trace topic, as the fixture's Apache has it: traceTopicEnable)
    pocket = ThreadedCluster(root / "pocketmq", acl_enable=True, acl_file=str(root / "plain_acl.yml"),
                             access_key=ADMIN, secret_key=SECRETS[ADMIN], trace_topic_enable=True)
    conns = Connections()
    try:
        apache.start()
        pocket.start()
        servers = Servers({"apache": Side(apache.broker_addr, apache.namesrv_addr),
                           "pocketmq": Side(pocket.broker_addr, pocket.namesrv_addr)}, conns)
        for name in servers.sides:
            for topic in TOPICS:
                assert servers.admin(name, R.UPDATE_AND_CREATE_TOPIC, topic_config(topic)).code == C.SUCCESS
            for group in GROUPS:
                body = json.dumps({"groupName": group}).encode()
                assert servers.admin(name, R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body).code == C.SUCCESS
        yield servers
    finally:
        conns.close()
        pocket.stop()
        apache.stop(signal.SIGKILL)  # (its store is thrown away)


def max_offset(servers: Servers, name: str, topic: str | None) -> int:
    answer = servers.admin(name, R.GET_MAX_OFFSET, {"topic": str(topic), "queueId": "0"})
    return int(answer.ext.get("offset", 0)) if answer.code == C.SUCCESS else -1


def gained(servers: Servers, topic: str | None, before: dict[str, int]) -> dict[str, int]:
    """How many messages the send's queue gained on each side: 4.9.7 dispatches a stored message to its queue a
    moment after it answered, so a difference is looked at again until it is gone or has lasted two seconds."""
    deadline = time.monotonic() + 2.0
    while True:
        counts = {name: max_offset(servers, name, topic) - before[name] for name in servers.sides}
        if len(set(counts.values())) == 1 or time.monotonic() > deadline:
            return counts
        time.sleep(0.01)


@settings(max_examples=EXAMPLES or 100, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(requests())
def test_same_acl_decision_as_apache(servers: Servers, drawn: Drawn) -> None:
    sends = drawn.code in SENDS and drawn.topic is not None
    before = {name: max_offset(servers, name, drawn.topic) for name in servers.sides} if sends else {}
    answers = {name: servers.call(name, drawn) for name in servers.sides}
    verdicts = {name: verdict(name, drawn, answer, servers.diverged) for name, answer in answers.items()}
    if known_difference(drawn, answers, verdicts):
        if sends:
            servers.diverged.add(str(drawn.topic))
        return
    assert verdicts["pocketmq"] == verdicts["apache"], (drawn, answers)
    if sends:
        # (what was stored, as the growth of the queue: the known differences leave the queues unequal)
        counts = gained(servers, drawn.topic, before)
        assert counts["pocketmq"] == counts["apache"], (drawn, answers, counts)
