"""Apache RocketMQ 5's gRPC SDK for Java (rocketmq-client-java) against pocketmq's gRPC endpoint and against
Apache RocketMQ 5.5.0's own proxy, the same scenarios, in one test per scenario.

One JVM per server runs every scenario of the harness (tests/java_sdk/src) at once, with the SDK's default settings
(TLS on: pocketmq's endpoint serves TLS and plaintext on one port, as the proxy's permissive mode does). Both
servers are configured alike: transaction checks every second for half messages older than three seconds, long polls
of at most five seconds (what a push consumer's close waits for), the same typed topics and subscription groups,
made through the broker by the same remoting requests. Each test takes one scenario's results from both, asserts
what the scenario must show on each (so both servers wrong the same way still fails) and that both showed the same,
ids and times aside. A missing harness build or Java fails with the one-line reason (`make java-sdk`), never a skip.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.recall_message_handle import decode_handle
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.admin_body import TopicStatsTable
from pocketmq.remoting.admin_header import GetTopicStatsInfoRequestHeader
from pocketmq.remoting.codes import RequestCode
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ
from tests.java_sdk import java_sdk as js
from tests.java_sdk.java_sdk import HarnessRun

SERVERS = ("pocketmq", "apache")

# A push consumer's close waits for its receive in flight, which long-polls for as long as the server's Settings say
# (20 s by default on both): 5 s on both, the shortest long poll either takes. The invisible scenario receives with
# an invisible time of 5 s (ReceiveScenarios.INVISIBLE), which both refuse below 10 s by default.
POCKETMQ_CONFIG: dict[str, Any] = {"transaction_check_interval": 1.0, "transaction_timeout": 3.0,
                                   "proxy_overrides": {"consumer_max_long_polling_timeout_millis": 5000,
                                                       "min_invisible_time_millis_for_recv": 5000}}
APACHE_CONFIG: dict[str, Any] = {  # broker.conf keys
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "3000",
    # Apache's send-queue fast failure (200 ms) trips on a busy two-core machine; pocketmq has none.
    "waitTimeMillsInSendQueue": "30000",
    "recallMessageEnable": "true",  # (RocketMQ's default is off, pocketmq's on)
}
# Apache's proxy tells its broker of a transactional producer's group every transactionHeartbeatPeriodSecond (20 s
# by default); until then the broker's checks find no producer ("channel is null") and the check_back scenario
# waited for the second period. pocketmq's endpoint knows the producer from its Telemetry stream.
APACHE_PROXY_CONFIG: dict[str, Any] = {"transactionHeartbeatPeriodSecond": 1,
                                       "grpcClientConsumerMaxLongPollingTimeoutMillis": 5000,
                                       "minInvisibleTimeMillsForRecv": 5000}
# Values that are counts of the run, compared as present or absent.
VOLATILE_PROPERTIES = {"TRANSACTION_CHECK_TIMES"}
# Apache's 5.x broker stamps __transactionId__ on a transactional message; pocketmq stores the producer's
# properties as sent (docs/compatibility.md, "properties a broker adds"). The transaction test pins it.
BROKER_STAMPED = {"__transactionId__"}
VOLATILE_FIELDS = {"messageId", "bornTimestamp", "receivedAt", "askedAt", "changeAskedAt", "deliveryTimestamp", "ranMs",
                   "closedMs"}


@dataclass
class Runs:
    runs: dict[str, HarnessRun]
    brokers: dict[str, tuple[str, str]]  # (name server, broker) by server

    def results(self, scenario: str) -> dict[str, dict[str, Any]]:
        return {server: self.runs[server].result(scenario) for server in SERVERS}


async def dead_letters(namesrv_addr: str, broker_addr: str, group: str) -> int:
    """Messages in ``group``'s dead-letter topic, asked of the broker (Apache's broker tells the name server of a
    topic it made at its next registration, up to 30 s later)."""
    async with MQAdminExt(namesrv_addr, protocol="rocketmq", timeout=30.0) as admin:
        response = await admin._broker(broker_addr, RequestCode.GET_TOPIC_STATS_INFO,
                                       GetTopicStatsInfoRequestHeader(f"%DLQ%{group}"))
        stats = admin._ok(response, broker_addr).decode_body(TopicStatsTable)
    return sum(o.max_offset - o.min_offset for o in stats.offset_table.values())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    js.classpath()  # fails before any server starts when the harness is not built
    root = tmp_path_factory.mktemp("java-sdk")
    run_ids = {server: f"{server[0].upper()}{uuid.uuid4().hex[:8]}" for server in SERVERS}
    servers: dict[str, tuple[str, str, str]] = {}
    futures = {}
    rmq = ApacheRocketMQ(root / "apache", V5, **APACHE_CONFIG)
    proxy = ApacheProxy(rmq, **APACHE_PROXY_CONFIG)
    with (ThreadedCluster(root / "pocketmq", grpc=True, **POCKETMQ_CONFIG) as pocket,
          ThreadPoolExecutor(len(SERVERS)) as pool):
        try:
            # pocketmq's JVM runs while Apache's three JVMs start
            for server, start in (("pocketmq", lambda: pocket), ("apache", lambda: (rmq.start(), proxy.start()))):
                start()
                servers[server] = ((pocket.namesrv_addr, pocket.broker_addr, pocket.grpc_endpoint)
                                   if server == "pocketmq" else (rmq.namesrv_addr, rmq.broker_addr, proxy.endpoint))
                namesrv, broker, endpoint = servers[server]
                asyncio.run(js.prepare(namesrv, broker, run_ids[server]))
                futures[server] = pool.submit(js.run, endpoint, run_ids[server], server, root / f"jvm-{server}")
            done = {server: future.result() for server, future in futures.items()}
            yield Runs(done, {server: (namesrv, broker) for server, (namesrv, broker, _) in servers.items()})
        finally:
            # A throwaway store: killed, not shut down (a broker's shutdown hook takes many seconds).
            for process in (proxy.process, rmq.broker, rmq.namesrv):
                if process is not None:
                    process.stop(signal.SIGKILL)


def normalized(described: dict[str, Any], run_id: str) -> dict[str, Any]:
    """A message as both servers must show it: the run's names masked, ids and times out, volatile values
    reduced to a marker."""
    out = {k: v for k, v in described.items() if k not in VOLATILE_FIELDS}
    out["topic"] = out["topic"].replace(run_id, "RUN")
    out["properties"] = {k: ("<volatile>" if k in VOLATILE_PROPERTIES else v)
                         for k, v in described["properties"].items() if k not in BROKER_STAMPED}
    return out


def by_body(messages: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return sorted((normalized(m, run_id) for m in messages), key=lambda m: (m["body"], m["deliveryAttempt"]))


def same(runs: Runs, observed: dict[str, Any]) -> None:
    assert observed["pocketmq"] == observed["apache"], observed


def test_normal_messages_with_tags_keys_and_properties(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("normal").items():
        run_id = runs.runs[server].run_id
        assert sorted(m["messageId"] for m in r["all"]) == sorted(r["sent"]), server
        everything = by_body(r["all"], run_id)
        assert [m["body"] for m in everything] == ["normal-0", "normal-1", "normal-2"], server
        first = everything[0]
        assert (first["tag"], first["keys"], first["properties"]) == ("TagA", ["k1", "k2"],
                                                                      {"color": "red", "n": "42"}), server
        assert [(m["body"], m["tag"]) for m in r["tagB"]] == [("normal-1", "TagB")], server
        assert {m["deliveryAttempt"] for m in r["all"] + r["tagB"]} == {1}, server
        observed[server] = {"all": everything, "tagB": by_body(r["tagB"], run_id)}
    same(runs, observed)


def test_fifo_message_groups_in_order(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("fifo").items():
        run_id = runs.runs[server].run_id
        seen = r["seen"]
        assert sorted(m["messageId"] for m in seen) == sorted(r["sent"]), server
        order = {g: [m["body"] for m in seen if m["messageGroup"] == g] for g in ("ga", "gb")}
        assert order == {g: [f"{g}-{i}" for i in range(5)] for g in ("ga", "gb")}, server
        observed[server] = {"order": order, "messages": by_body(seen, run_id)}
    same(runs, observed)


def test_a_delay_message_not_before_its_time(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("delay").items():
        assert len(r["seen"]) == 1, (server, r["seen"])
        [m] = r["seen"]
        assert m["messageId"] == r["sent"], server
        assert m["deliveryTimestamp"] == r["deliverAt"], server
        assert m["receivedAt"] >= r["deliverAt"], server
        observed[server] = normalized(m, runs.runs[server].run_id)
    same(runs, observed)


def test_transactions_committed_and_rolled_back(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("transaction").items():
        assert len(r["seen"]) == 1, (server, r["seen"])  # the rolled-back message never comes
        [m] = r["seen"]
        assert (m["body"], m["messageId"]) == ("tx-commit", r["committed"]), server
        assert m["properties"].get("__transactionId__", r["committed"]) == r["committed"], server
        assert ("__transactionId__" in m["properties"]) == (server == "apache"), server  # (BROKER_STAMPED)
        observed[server] = normalized(m, runs.runs[server].run_id)
    same(runs, observed)


def test_transactions_checked_back(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("check_back").items():
        assert r["asked"] and r["checked"] == ["check-commit", "check-rollback"], server
        # (Apache's broker may commit a message checked again before the first answer came as several copies: one
        # per half message it re-put while checking, each with the producer's message id.)
        assert {(m["body"], m["messageId"]) for m in r["seen"]} == {("check-commit", r["toCommit"])}, server
        observed[server] = normalized(r["seen"][0], runs.runs[server].run_id)
    same(runs, observed)


def test_a_message_not_acked_comes_back_after_its_invisible_time(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("invisible").items():
        first, second, third = r["deliveries"]
        assert [d["deliveryAttempt"] for d in r["deliveries"]] == [1, 2, 3], server
        assert {d["messageId"] for d in r["deliveries"]} == {r["sent"]} and r["sameId"], server
        assert second["receivedAt"] >= first["askedAt"] + r["invisibleMs"], server
        assert third["receivedAt"] >= second["changeAskedAt"] + 1000, server  # (its invisible time changed to 1 s)
        assert r["afterAck"] == [], server
        observed[server] = [normalized(d, runs.runs[server].run_id) for d in r["deliveries"]]
    same(runs, observed)


def test_retries_then_the_dead_letter_queue(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("dlq").items():
        attempts = r["attempts"]
        # retryMaxTimes 1: two deliveries, then the dead-letter topic
        assert [a["deliveryAttempt"] for a in attempts] == [1, 2], server
        assert {a["messageId"] for a in attempts} == {r["sent"]}, server
        group = js.group(runs.runs[server].run_id, "dlq", "failing")
        assert asyncio.run(dead_letters(*runs.brokers[server], group)) == 1, server
        observed[server] = [normalized(a, runs.runs[server].run_id) for a in attempts]
    same(runs, observed)


def test_a_push_consumer_group_of_two_shares_a_topic(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("push_group").items():
        first, second = r["first"], r["second"]
        assert sorted(first + second) == sorted(f"m{i}" for i in range(r["count"])), server  # each once
        assert first and second, server  # both consumers had a share
        observed[server] = sorted(first + second)
    same(runs, observed)


def test_a_recalled_delay_message_is_never_received(runs: Runs) -> None:
    observed = {}
    for server, r in runs.results("recall").items():
        run_id = runs.runs[server].run_id
        assert r["recalledId"] == r["sent"], server
        assert [m["body"] for m in r["seen"]] == ["keep-me"], server  # the recalled one never came
        assert r["seen"][0]["receivedAt"] >= r["deliverAt"], server
        handles = [decode_handle(h) for h in r["handles"]]
        # (the slot before the delivery time, at the default 1 s precision, plus one)
        assert {(h.topic, h.broker_name, h.timestamp_str) for h in handles} == {
            (js.topic(run_id, "recall"), "broker-a", str((r["deliverAt"] - 1) // 1000 * 1000 + 1))}, server
        assert handles[0].message_id == r["sent"], server
        refused = r["afterDelivery"]
        assert "recall failed, timestamp invalid" in refused["message"], server
        observed[server] = {"seen": normalized(r["seen"][0], run_id), "refused": refused["type"]}
    same(runs, observed)
