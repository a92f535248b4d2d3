"""The two servers of tests/java_client/test_java_client.py, pocketmq and Apache RocketMQ, set up alike (their
settings, the ACL both read), and how one scenario's results from both are compared."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pocketmq.embedded import ThreadedCluster
from tests.apache.apache_rocketmq import ApacheRocketMQ
from tests.java_client.java_harness import HarnessRun, message

ADMIN = ("harnessAdmin", "harness-admin-secret")
USER = ("harnessUser", "harness-user-secret")

# pocketmq's BrokerConfig and Apache's broker.conf, the same settings.
POCKETMQ_CONFIG: dict[str, Any] = {
    "enable_property_filter": True,
    "trace_topic_enable": True,
    "transaction_check_interval": 1.0,
    "transaction_timeout": 3.0,
}
APACHE_CONFIG: dict[str, Any] = {  # broker.conf keys (Any: ApacheRocketMQ's **broker_props)
    "enablePropertyFilter": "true",
    "traceTopicEnable": "true",
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "3000",
    "waitTimeMillsInSendQueue": "30000",
}

# Set by the broker, not the producer: Apache adds CLUSTER to every message (5.x also MSG_REGION and TRACE_ON, and
# __transactionId__ to transactional ones) and drops WAIT; pocketmq keeps what the producer sent and appends
# MSG_REGION and TRACE_ON, as 5.x does (docs/broker.md, "The region stamp"). A committed transactional message
# keeps REAL_TOPIC/REAL_QID on Apache 4.9.7, not on 5.5.0 or pocketmq (docs/broker.md §7, "Transactions").
BROKER_REENCODED = {"CLUSTER", "WAIT", "MSG_REGION", "TRACE_ON", "__transactionId__"}
# A delayed message (and a retry, which is one) comes back from Apache still carrying DELAY (4.9.7 and 5.x alike:
# its broker clears the level from the message's property map after the properties string was encoded); pocketmq
# drops it when it re-puts the message, since its store would schedule a message that carries DELAY again.
# `without_delay` checks both sides of that and takes it out.
REDELIVERED_DELAY = "DELAY"


def plain_acl(run_ids: list[str]) -> str:
    """An admin account, and a user with PUB|SUB by default and SUB only on each run's Denied topic."""
    denied = "".join(f"      - {run}-acl-Denied=SUB\n" for run in run_ids)
    return (
        "accounts:\n"
        f"  - accessKey: {ADMIN[0]}\n    secretKey: {ADMIN[1]}\n    whiteRemoteAddress:\n    admin: true\n"
        f"  - accessKey: {USER[0]}\n    secretKey: {USER[1]}\n    whiteRemoteAddress:\n    admin: false\n"
        "    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n"
        f"    topicPerms:\n{denied}"
    )


@dataclass
class Servers:
    pocketmq: ThreadedCluster
    pocketmq_acl: ThreadedCluster
    apache: dict[str, ApacheRocketMQ]  # by client version
    apache_acl: ApacheRocketMQ
    run_ids: dict[tuple[str, str], str]
    root: Path



@dataclass
class Pair:
    """One client version's runs: the same scenarios against pocketmq and against Apache RocketMQ."""

    version: str
    pocketmq: HarnessRun
    apache: HarnessRun

    def results(self, scenario: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.pocketmq.result(scenario), self.apache.result(scenario)



def comparable(described: dict[str, Any], run_id: str, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A described message as the two servers must agree on it: no ids, times, offsets or queue (the producer
    picks queues at random), volatile properties as markers, the broker-reencoded properties left out."""
    out = message(described, run_id)
    for key in ("queueId", *drop):
        out.pop(key, None)
    out["props"] = {k: v for k, v in out["props"].items() if k not in BROKER_REENCODED | {"MIN_OFFSET", "MAX_OFFSET"}}
    if out["props"].get("REAL_QID") == str(described["queueId"]):
        out["props"]["REAL_QID"] = "<the message's queue>"
    return out


def same(pair: Pair, pocketmq: Any, apache: Any) -> None:
    if pocketmq != apache:
        diff = difflib.unified_diff(
            json.dumps(apache, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
            json.dumps(pocketmq, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
            "apache",
            "pocketmq",
            lineterm="",
        )
        where = f"rocketmq-client {pair.version}: pocketmq and Apache RocketMQ differ"
        raise AssertionError(where + ":\n" + "\n".join(diff))


def both(pair: Pair, scenario: str) -> list[tuple[dict[str, Any], str]]:
    p, a = pair.results(scenario)
    return [(p, pair.pocketmq.run_id), (a, pair.apache.run_id)]


def big_body() -> str:
    body = ("compressible text " * 1000).encode()
    return f"len={len(body)} sha256={hashlib.sha256(body).hexdigest()}"

