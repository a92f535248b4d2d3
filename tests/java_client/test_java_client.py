"""RocketMQ's Java client against pocketmq, and against Apache RocketMQ in the same test.

For each client version one JVM runs every scenario of the harness (tests/java_client/src) against pocketmq and one
against Apache RocketMQ, at the same time: the 4.9.8 client against Apache 4.9.7 (the newest 4.x broker on Maven
Central), 5.x's remoting client against Apache 5.5.0 (whose broker serves what that client sends, such as the lite
pull consumer's LITE_PULL_MESSAGE, which a 4.9.x broker refuses). Each test then
takes one scenario's results from both, asserts what the scenario must show (so both servers being wrong the same
way still fails), and asserts that both showed the same, ids, addresses and times aside.

Both servers are configured alike: SQL92 filtering and the trace topic on (enablePropertyFilter,
traceTopicEnable), transaction checks every second for half messages older than three seconds
(transactionCheckInterval, transactionTimeOut), topics and groups created on first use; Apache's send-queue fast failure
(waitTimeMillsInSendQueue, 200 ms) is raised, since pocketmq has none and a busy two-core machine trips it. The
ACL scenario runs against a second server of each kind with aclEnable and the same plain_acl.yml (Apache 4.9.7's
plain ACL for both clients).

Where the two differ on purpose (docs/broker.md §7), `comparable` takes the difference out and the test states it:
Apache's broker adds CLUSTER to every stored message and drops WAIT; pocketmq stores the properties the producer
sent. A missing harness build or Java fails with the one-line reason (`make java-clients`), never a skip.
"""

from __future__ import annotations

import asyncio
import json
import signal
import uuid
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from pocketmq.client.consumer.store.local_file_offset_store import LocalFileOffsetStore
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting import fastjson
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ
from tests.java_client import java_harness as jh
from tests.java_client.java_harness import HarnessRun, by_body, error
from tests.java_client.server_pair import (
    ADMIN,
    APACHE_CONFIG,
    BROKER_REENCODED,
    POCKETMQ_CONFIG,
    REDELIVERED_DELAY,
    USER,
    Pair,
    Servers,
    big_body,
    both,
    comparable,
    plain_acl,
    same,
)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    # Fail before any server starts when a client is not built.
    for version in jh.CLIENT_VERSIONS:
        jh.harness_classpath(version)
    root = tmp_path_factory.mktemp("java-client")
    run_ids = {(v, s): f"J{uuid.uuid4().hex[:8]}" for v in jh.CLIENT_VERSIONS for s in ("pocketmq", "apache")}
    acl_yml = plain_acl(list(run_ids.values()))
    (root / "apache-acl" / "conf").mkdir(parents=True)
    (root / "apache-acl" / "conf" / "plain_acl.yml").write_text(acl_yml, encoding="utf-8")
    (root / "pocketmq_acl.yml").write_text(acl_yml, encoding="utf-8")
    apache = {
        "4.9.8": ApacheRocketMQ(root / "apache4", version=V4, **APACHE_CONFIG),
        "5.5.0": ApacheRocketMQ(root / "apache5", version=V5, **APACHE_CONFIG),
    }
    assert set(apache) == set(jh.CLIENT_VERSIONS)
    apache_acl = ApacheRocketMQ(root / "apache-acl", version=V4, aclEnable="true", **APACHE_CONFIG)
    pocketmq = ThreadedCluster(root / "pocketmq", **POCKETMQ_CONFIG)
    pocketmq_acl = ThreadedCluster(
        root / "pocketmq-acl",
        acl_enable=True,
        acl_file=str(root / "pocketmq_acl.yml"),
        access_key=ADMIN[0],
        secret_key=ADMIN[1],
        **POCKETMQ_CONFIG,
    )
    started: list[Any] = []
    try:
        # One at a time: ApacheRocketMQ probes for free ports before its JVMs bind them (the broker also takes
        # port + 1 for HA), so two starting together can pick the same ones.
        for server in (*apache.values(), apache_acl):
            started.append(server)
            server.start()
        pocketmq.start()
        started.append(pocketmq)
        pocketmq_acl.start()
        started.append(pocketmq_acl)
        yield Servers(pocketmq, pocketmq_acl, apache, apache_acl, run_ids, root)
    finally:
        for server in reversed(started):
            # The Apache servers' stores are thrown away: killed, not shut down (seconds each).
            server.stop(signal.SIGKILL) if isinstance(server, ApacheRocketMQ) else server.stop()


@pytest.fixture(scope="module", params=jh.CLIENT_VERSIONS)
def pair(request: pytest.FixtureRequest, servers: Servers) -> Pair:
    version: str = request.param
    acl = {"admin": ":".join(ADMIN), "user": ":".join(USER)}

    def run(kind: str) -> HarnessRun:
        main, secured = (servers.pocketmq, servers.pocketmq_acl) if kind == "pocketmq" else (
            servers.apache[version],
            servers.apache_acl,
        )
        return jh.run(
            version,
            main.namesrv_addr,
            servers.run_ids[(version, kind)],
            kind,
            servers.root / f"home-{version}-{kind}",
            acl={**acl, "namesrv": secured.namesrv_addr},
            threads=4,
        )

    # One after the other: two client JVMs beside three brokers starve a two-core machine, and the clients'
    # name-server calls time out.
    return Pair(version, run("pocketmq"), run("apache"))


def test_send_sync(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "send_sync"):
        assert [s["status"] for s in result["sends"]] == ["SEND_OK"] * 3
        assert result["queues"] == 4  # min(the producer's defaultTopicQueueNums, TBW102's)
        messages = by_body([comparable(m, run) for m in result["messages"]])
        assert [(m["body"], m["tags"], m["keys"]) for m in messages] == [
            ("héllo wörld, 你好, 🚀", "TagB", "key-2a key-2b"),
            (big_body(), "TagC", "key-3"),
            ("plain body", "TagA", "key-1"),
        ]
        assert messages[0]["props"]["städte"] == "Zürich 東京"
        assert messages[2]["props"]["color"] == "red" and messages[2]["props"]["n"] == "7"
        views.append(messages)
    same(pair, *views)


def test_send_async(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "send_async"):
        assert result["allAnswered"]
        assert [s.get("status") for s in result["sends"]] == ["SEND_OK"] * 5
        messages = by_body([comparable(m, run) for m in result["messages"]])
        assert [m["body"] for m in messages] == [f"async {i}" for i in range(5)]
        views.append(messages)
    same(pair, *views)


def test_send_oneway(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "send_oneway"):
        messages = by_body([comparable(m, run) for m in result["messages"]])
        assert [m["body"] for m in messages] == [f"oneway {i}" for i in range(3)]
        views.append(messages)
    same(pair, *views)


def test_batch(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "batch"):
        send = result["send"]
        assert send["status"] == "SEND_OK"
        assert len(send["msgId"].split(",")) == 4 and len(send["offsetMsgId"].split(",")) == 4
        raw = result["messages"]
        # One queue, consecutive offsets from the answer's queueOffset, in the batch's order.
        assert {m["queueId"] for m in raw} == {send["queueId"]}
        assert [m["queueOffset"] for m in raw] == [send["queueOffset"] + i for i in range(4)]
        messages = [comparable(m, run) for m in raw]
        assert [m["body"] for m in messages] == [f"batch {i} ünïcode" for i in range(4)]
        assert [m["props"]["index"] for m in messages] == ["0", "1", "2", "3"]
        views.append(messages)
    same(pair, *views)


def test_selector(pair: Pair) -> None:
    views = []
    for result, _ in both(pair, "selector"):
        assert [s["queueId"] for s in result["sends"]] == [0, 1, 2, 3, 0, 1, 2, 3]
        assert result["perQueue"] == {str(q): [f"selected {q}", f"selected {q + 4}"] for q in range(4)}
        views.append(result["perQueue"])
    same(pair, *views)


def test_tag_filter(pair: Pair) -> None:
    p, a = pair.results("tag_filter")
    assert p["tags"] == ["TagA", "TagA", "TagC", "TagC"]
    same(pair, p, a)


def test_sql92_filter(pair: Pair) -> None:
    p, a = pair.results("sql_filter")
    # 6 carries a non-numeric `a`: the comparison fails the whole expression, OR or not (RocketMQ's evaluation).
    assert p["bodies"] == ["sql 3", "sql 4"]
    same(pair, p, a)


def test_sql92_malformed_fails_the_consumer_start(pair: Pair) -> None:
    p, a = pair.results("sql_invalid")
    for result in (p, a):
        assert result["started"] is False
        assert error(result["error"]) == {"type": "MQClientException", "responseCode": 23}  # SUBSCRIPTION_PARSE_FAILED
    same(pair, error(p["error"]), error(a["error"]))


def test_push_consumer_group_of_two(pair: Pair) -> None:
    p, a = pair.results("push_group")
    for result in (p, a):
        assert result["balanced"]
        assert result["queues"] == [2, 2]
        assert result["bodies"] == [f"group {i:02d}" for i in range(20)]  # every message, none twice
        assert all(count > 0 for count in result["counts"])
    same(pair, (p["bodies"], p["queues"]), (a["bodies"], a["queues"]))


def test_orderly_consumers_across_a_rebalance(pair: Pair) -> None:
    p, a = pair.results("orderly_rebalance")
    for result, server in ((p, "pocketmq"), (a, "Apache RocketMQ")):
        assert result["firstLocked"] and result["rebalanced"], (server, result.get("notRebalanced"))
        assert result["lockedQueues"] == [2, 2]
        assert result["steps"] == {str(order): list(range(10)) for order in range(8)}
        assert result["secondConsumed"]
    same(pair, p, a)


def test_lite_pull_subscribe_and_commit(pair: Pair) -> None:
    p, a = pair.results("lite_subscribe")
    assert p["bodies"] == [f"lite {i}" for i in range(6)]
    assert p["persisted"] and p["committedSum"] == 6
    same(pair, p, a)


def test_lite_pull_assign_seek_commit(pair: Pair) -> None:
    views = []
    for result, _ in both(pair, "lite_assign_seek"):
        assert result["beforeSeek"] == [f"seek {i}" for i in range(5)]
        assert result["afterSeek2"] == ["seek 2", "seek 3", "seek 4"]
        assert result["committed"] == 4
        assert result["afterSeekToBegin"] == [f"seek {i}" for i in range(5)]
        assert result["afterSeekToEnd"] == ["seek 5"]
        assert error(result["seekPastEnd"]) == {"type": "MQClientException", "responseCode": -1}
        views.append({**result, "seekPastEnd": result["seekPastEnd"]["message"]})
    same(pair, *views)


def test_offsets_kept_across_a_consumer_restart(pair: Pair) -> None:
    p, a = pair.results("offsets_restart")
    assert p["first"] == [f"before {i}" for i in range(5)]
    assert p["second"] == [f"after {i}" for i in range(5)]
    # Consumption is at least once: in one suite run Apache 5.5.0 gave the restarted group a message the first
    # consumer had consumed (one queue's offset, persisted at shutdown, had not reached it). Such a second delivery
    # is taken out of Apache's side; pocketmq's side must have none (asserted above).
    same(pair, p, {**a, "second": [body for body in a["second"] if body not in a["first"]]})


def test_broadcast_offsets_file_is_shared_with_pocketmqs_client(pair: Pair, tmp_path: Path) -> None:
    """The Java client's BROADCASTING offsets file is what pocketmq's LocalFileOffsetStore reads, and the file
    pocketmq writes for that table is what the Java client then resumes from (only the messages sent since)."""
    for result, run in both(pair, "broadcast_offsets_file"):
        assert result["first"] == [f"first {i}" for i in range(4)]
        assert result["second"] == ["second 0", "second 1"], run
        store = LocalFileOffsetStore(str(tmp_path / run), "ip@i", "G")
        Path(store.path).parent.mkdir(parents=True)
        Path(store.path).write_text(result["written"], encoding="utf-8")
        store.load()
        assert sum(store.offset_table.values()) == 4 and store.offset_table, run
        asyncio.run(store.persist_all())
        assert fastjson.loads(Path(store.path).read_text(encoding="utf-8")) == fastjson.loads(result["pocketmqForm"])


def deliveries(result: dict[str, Any], run: str) -> list[dict[str, Any]]:
    return [comparable(d, run) for d in result["deliveries"]]


def without_delay(pair: Pair, views: list[list[dict[str, Any]]], redelivered: list[bool]) -> None:
    """Apache's redelivered messages carry DELAY=1, pocketmq's none (REDELIVERED_DELAY); checked, then removed."""
    pocketmq, apache = views
    for p, a, again in zip(pocketmq, apache, redelivered, strict=True):
        assert REDELIVERED_DELAY not in p["props"]
        assert a["props"].get(REDELIVERED_DELAY) == ("1" if again else None), pair.version
        a["props"].pop(REDELIVERED_DELAY, None)


def test_reconsume_later_comes_back_with_reconsume_times_and_its_delay(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "reconsume_later"):
        send, raw = result["send"], result["deliveries"]
        assert [d["reconsumeTimes"] for d in raw] == [0, 1, 2]
        assert {d["msgId"] for d in raw} == {send["msgId"]}
        # Delay level 1 is one second: each retry comes back no sooner (a lower bound, not a measurement).
        assert all(later["storeTimestamp"] - earlier["receivedAt"] >= 900 for earlier, later in pairwise(raw))
        for retried in raw[1:]:
            assert retried["props"]["ORIGIN_MESSAGE_ID"] == send["offsetMsgId"]
        retried = deliveries(result, run)[1:]
        assert {d["topic"] for d in retried} == {"RUN-reconsume-later-T"}
        assert {d["props"]["RETRY_TOPIC"] for d in retried} == {"RUN-reconsume-later-T"}
        assert {d["props"]["REAL_TOPIC"] for d in retried} == {"%RETRY%RUN-reconsume-later-c"}
        views.append(deliveries(result, run))
    without_delay(pair, views, [False, True, True])
    same(pair, *views)


def test_dead_letter_queue_after_max_reconsume_times(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "dlq"):
        raw = result["deliveries"]
        assert [d["reconsumeTimes"] for d in raw] == [0, 1]  # maxReconsumeTimes 1: no third delivery
        dead = [comparable(m, run) for m in result["dlq"]]
        assert len(dead) == 1
        assert dead[0]["topic"] == "%DLQ%RUN-dlq-c"
        assert dead[0]["body"] == "never consumed" and dead[0]["keys"] == "dead-key"
        assert result["dlq"][0]["msgId"] == result["send"]["msgId"]
        pull = result["dlqPull"]
        views.append((deliveries(result, run), dead, pull if isinstance(pull, list) else error(pull)))
    without_delay(pair, [views[0][0], views[1][0]], [False, True])
    # Apache's dead letter carries DELAY=0 (the level of the send-back that moved it there), pocketmq's none.
    assert REDELIVERED_DELAY not in views[0][1][0]["props"]
    assert views[1][1][0]["props"].pop(REDELIVERED_DELAY) == "0"
    same(pair, *views)


@pytest.mark.parametrize("pair", ["5.5.0"], indirect=True)  # 4.9.8's client has no pop mode
def test_pop_mode_push_consumer_with_server_side_assignment(pair: Pair) -> None:
    """The 5.x remoting push consumer with clientRebalance off and its group set to POP on the broker: it takes its
    queues from QUERY_ASSIGNMENT, pops, acks, and changes the invisible time of what it reconsumes later."""
    views = []
    for result, run in both(pair, "pop_push"):
        got = [{**d, "topic": d["topic"].replace(run, "RUN")} for d in result["deliveries"]]
        assert all(d["popped"] for d in got), got  # every delivery came by POP (its POP_CK receipt)
        assert {d["topic"] for d in got} == {"RUN-pop-push-T"}
        assert [(d["body"], d["reconsumeTimes"]) for d in got] == [
            ("pop 0", 0), ("pop 0", 1), *((f"pop {i}", 0) for i in range(1, 8))]
        assert [d["keys"] for d in got[1:]] == [f"pop-key-{i}" for i in range(8)]
        views.append(got)
    same(pair, *views)


def test_delay_level(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "delay_level"):
        (delivery,) = result["deliveries"]
        assert delivery["body"] == "one second later"
        assert delivery["storeTimestamp"] - delivery["bornTimestamp"] >= 900  # level 1: a second, at least
        assert delivery["props"]["REAL_TOPIC"] == delivery["topic"]
        views.append(deliveries(result, run))
    without_delay(pair, views, [True])
    same(pair, *views)


def test_transaction_commit_rollback_and_check_back(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "transaction"):
        assert [(s["status"], s["localTransactionState"]) for s in result["sends"]] == [
            ("SEND_OK", "COMMIT_MESSAGE"),
            ("SEND_OK", "ROLLBACK_MESSAGE"),
            ("SEND_OK", "UNKNOW"),
        ]
        received = by_body([comparable(m, run) for m in result["received"]])
        # The rollback never arrives. The checked one may arrive twice, from either server, on a busy machine: a
        # check is asked again when the producer's answer is slower than transactionCheckInterval, and each answer
        # commits (docs/broker.md §4.3), the later copy counting one more check. Compared once each, the first.
        assert sorted({m["body"] for m in received}) == ["commit", "unknown"]
        received = [m for i, m in enumerate(received) if m["body"] not in {r["body"] for r in received[:i]}]
        for m in received:
            if run == pair.apache.run_id and pair.version.startswith("4."):
                # Apache 4.9.7 keeps the half message's REAL_TOPIC/REAL_QID in the committed one; 5.5.0 and
                # pocketmq drop them.
                assert m["props"].pop("REAL_TOPIC") == "RUN-transaction-T"
                assert m["props"].pop("REAL_QID") == "<the message's queue>"
        # The unknown one is asked about; another only if its END_TRANSACTION reached the broker after a check.
        checks = [comparable(m, run) for m in result["checks"] if m["body"] == "unknown"]
        assert checks
        assert all(m["props"]["TRAN_MSG"] == "true" and m["props"]["PGROUP"] == "RUN-transaction-p" for m in received)
        views.append((received, checks[:1]))
    same(pair, *views)


def test_query_by_key_and_view_by_id(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "query_view"):
        by_key = by_body([comparable(m, run) for m in result["byKey"]])
        assert [m["body"] for m in by_key] == ["query 0", "query 1"]
        assert comparable(result["byOffsetId"], run)["body"] == "query 0"
        assert result["byMsgId"]["msgId"] == result["sentMsgId"]
        assert error(result["missingKey"]) == {"type": "MQClientException", "responseCode": 208}  # NO_MESSAGE
        views.append(
            (
                by_key,
                comparable(result["byOffsetId"], run),
                comparable(result["byMsgId"], run),
                error(result["missingKey"]),
                error(result["missingOffset"]),
            )
        )
    same(pair, *views)


def trace_types(result: dict[str, Any]) -> list[str]:
    return sorted(record[0] for record in result["records"])


def test_message_trace(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "trace"):
        assert result["consumed"] == 1
        (pub,) = [r for r in result["records"] if r[0] == "Pub"]
        # Pub: type, time, region, group, topic, msgId, tags, keys, storeHost, bodyLength, costTime, msgType,
        # offsetMsgId, success.
        fields = jh.masked([pub[3], pub[4], pub[5], pub[6], pub[7], pub[9], pub[11], pub[13]], run)
        assert fields == [
            "RUN-trace-p",
            "RUN-trace-T",
            result["send"]["msgId"],
            "traced",
            "trace-key",
            "11",
            "0",
            "true",
        ]
        views.append((trace_types(result), fields[:2] + fields[3:]))
    # The 5.x client drops its consume traces of a message without MSG_REGION: pocketmq stamps it (and TRACE_ON)
    # on every message it stores, as Apache 5.x's broker does.
    assert views[0][0] == views[1][0] == ["Pub", "SubAfter", "SubBefore"]
    same(pair, *views)


def test_request_reply(pair: Pair) -> None:
    views = []
    for result, run in both(pair, "request_reply"):
        assert result["replyErrors"] == []
        reply = result["reply"]
        assert reply.get("body") == "reply to ping", reply
        assert reply["topic"] == "DefaultCluster_REPLY_TOPIC"
        assert reply["props"]["MSG_TYPE"] == "reply"
        (request,) = result["requests"]
        assert reply["props"]["CORRELATION_ID"] == request["props"]["CORRELATION_ID"]
        assert request["props"]["question"] == "ping?"
        volatile = jh.VOLATILE_PROPS | {"ARRIVE_TIME", "PUSH_REPLY_TIME"}
        props = {
            k: ("<volatile>" if k in volatile else v) for k, v in reply["props"].items() if k not in BROKER_REENCODED
        }
        views.append(
            (
                jh.masked(props, run),
                comparable(request, run),
            )
        )
    same(pair, *views)


def test_request_timeout(pair: Pair) -> None:
    p, a = pair.results("request_timeout")
    assert error(p["reply"]) == {"type": "RequestTimeoutException", "responseCode": None}
    same(pair, error(p["reply"]), error(a["reply"]))


def codes(err: Any) -> list[int | None]:
    """The response codes of an exception and its causes, outermost first."""
    return [err.get("responseCode"), *codes(err.get("cause"))] if isinstance(err, dict) and "type" in err else []


def test_acl_client_rpc_hook(pair: Pair) -> None:
    p, a = pair.results("acl")
    refusals = ("userCreatesTopic", "userSendDenied", "wrongSecretSend", "anonymousSend")
    for result in (p, a):
        assert result["adminCreatesDenied"] == "created"
        assert result["adminSend"] == "SEND_OK"
        assert result["userSend"] == "SEND_OK"
        assert result["userPull"] == ["by admin", "by user"]
        for refused in refusals:
            assert isinstance(result[refused], dict), f"{refused} was not refused: {result[refused]}"
    # A refusal is NO_PERMISSION (16) from pocketmq, SYSTEM_ERROR (1) with the AclException's text from Apache
    # (docs/broker.md §7, "ACL"); otherwise the same exceptions.
    for refused in refusals:
        assert codes(p[refused])[-1] == 16 and codes(a[refused])[-1] == 1, refused
    as_apache = json.dumps({k: error(v) for k, v in p.items()}).replace('"responseCode": 16', '"responseCode": 1')
    same(pair, json.loads(as_apache), {k: error(v) for k, v in a.items()})


def test_a_missing_build_fails_with_its_reason() -> None:
    with pytest.raises(jh.JavaClientUnavailable, match="make java-clients"):
        jh.harness_classpath("0.0.0")
