"""Apache RocketMQ 5's Go SDK (github.com/apache/rocketmq-clients/golang/v5, pinned by
tests/native_clients/go5/go.mod and go.sum; `make go5-client` builds tests/native_clients/go5/main.go into
go5/bin/go5client, and `make test` does so first) against pocketmq's gRPC endpoint, with the SDK's defaults: TLS
on (the endpoint serves TLS and plaintext on one port), nothing configured but the endpoint.

One cluster for the module (each test its own topics and groups); each test runs the Go program once (one process,
one scenario, JSON lines out), and what the SDK sent is read back by pocketmq's own 4.x client, and what pocketmq's
client sent is what the SDK must receive: ids, keys, tags, properties and bodies.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.common.message import MessageExt

from .sdk_helpers import FAST_CHECK, create_topic, pull_all, wait_for, wait_pulled

GO5_DIR = Path(__file__).resolve().parents[1] / "native_clients" / "go5"
GO5_CLIENT = GO5_DIR / "bin" / "go5client"
SOURCES = [GO5_DIR / name for name in ("main.go", "go.mod", "go.sum")]
TAGS = ("TagA", "TagB", "TagC")


@pytest.fixture(scope="module", autouse=True)
def go5_client_built() -> None:
    assert GO5_CLIENT.exists(), f"the Go 5.x SDK driver is not built ({GO5_CLIENT}): run `make go5-client`"
    stale = [src.name for src in SOURCES if src.stat().st_mtime > GO5_CLIENT.stat().st_mtime]
    assert not stale, f"{GO5_CLIENT} is older than {stale}: run `make go5-client`"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    # The broker's transaction checks in milliseconds: the SDK's checker answers each message by its "decision"
    # property, so a check racing the SDK's own commit or rollback gets the same answer.
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("go5"), grpc=True, **FAST_CHECK) as c:
        yield c


@pytest.fixture(scope="module")
def log_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go5-logs")


def go5(cluster: embedded.ThreadedCluster, log_root: Path, scenario: str, *args: str,
        timeout: float = 60) -> list[dict[str, Any]]:
    """Runs one scenario to its end; its events, the last being ``done``."""
    # The SDK logs to ~/logs/rocketmq unless told otherwise (an environment variable with dots in its name).
    env = dict(os.environ, **{"rocketmq.client.logRoot": str(log_root)})
    proc = subprocess.run([str(GO5_CLIENT), "--endpoint", cluster.grpc_endpoint, "--timeout", str(timeout),
                           scenario, *args], capture_output=True, text=True, timeout=timeout + 30, env=env)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and events and events[-1] == {"event": "done"}, (
        proc.stdout[-3000:], proc.stderr[-3000:], sdk_log_tail(log_root))
    return events


def sdk_log_tail(log_root: Path) -> str:
    log = log_root / "rocketmq_client_go.log"
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind]


def body_for(prefix: str, i: int) -> str:
    """main.go's bodyFor."""
    if i % 10 == 3:
        return f"{prefix}-{i} big " + "0123456789abcdef" * 320
    if i % 10 == 7:
        return f"{prefix}-{i} grüße, 你好, привет, 🚀"
    return f"{prefix}-{i}"


def assert_stored_as_sent(sent: dict[str, Any], m: MessageExt, prefix: str) -> None:
    """What pocketmq's 4.x client reads is what the SDK sent: the SDK's id, body, tag, keys, properties."""
    i = sent["i"]
    assert m.uniq_key == sent["message_id"] and len(sent["message_id"]) == 34
    assert m.body.decode() == body_for(prefix, i) == sent["body"]
    assert m.tags == TAGS[i % 3] == sent["tag"]
    assert m.keys == sent["keys"]
    assert {k: m.properties[k] for k in sent["props"]} == sent["props"]
    assert m.queue_offset == sent["offset"]
    # The SDK compresses nothing; pocketmq stores the body as it came.
    assert m.sys_flag & 1 == 0


# ---- the producer ------------------------------------------------------------------------------------------------


def test_go_sdk_normal_sends_arrive_with_ids_tags_keys_and_properties(cluster, log_root):
    create_topic(cluster, "GoSend5")
    events = go5(cluster, log_root, "send", "--topic", "GoSend5", "--count", "20", "--prefix", "gs")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    assert len(sent) == 20
    stored = wait_pulled(cluster, "GoSend5", 20)
    assert sorted(m.uniq_key for m in stored) == sorted(sent)
    for m in stored:
        assert_stored_as_sent(sent[m.uniq_key], m, "gs")
        assert m.properties["PGROUP"] == "GoSend5"  # the proxy makes the topic the producer group
    assert sent[stored[0].uniq_key]["keys"] != []
    assert {m.properties["city"] for m in stored if "city" in m.properties} == {"Zürich"}
    # The SDK spreads its sends over the topic's queues.
    assert {m.queue_id for m in stored} == {0, 1, 2, 3}


def test_go_sdk_fifo_groups_each_on_one_queue_in_order(cluster, log_root):
    create_topic(cluster, "GoFifo5", queues=8)
    events = go5(cluster, log_root, "fifo", "--topic", "GoFifo5", "--count", "24", "--groups", "3", "--prefix", "gf")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    stored = wait_pulled(cluster, "GoFifo5", 24)
    for g in range(3):
        mine = [m for m in stored if m.properties["__SHARDINGKEY"] == f"gf-{g}"]
        assert len({m.queue_id for m in mine}) == 1, f"group gf-{g} spread over queues"
        in_queue = sorted(mine, key=lambda m: m.queue_offset)
        assert [int(m.properties["idx"]) for m in in_queue] == list(range(g, 24, 3))
        for m in mine:
            assert_stored_as_sent(sent[m.uniq_key], m, "gf")
            assert sent[m.uniq_key]["message_group"] == f"gf-{g}"


def test_go_sdk_transactions_commit_roll_back_and_are_checked_back(cluster, log_root):
    create_topic(cluster, "GoTxn5")
    broker = cluster.cluster.broker
    assert broker is not None
    rolled_back = broker.end_transaction_processor.rolled_back
    # A commit, a rollback, and a half message left open: the broker checks it back through the proxy, which asks
    # the producer on its Telemetry stream; the SDK's checker commits it (the scenario ends when it was asked).
    events = go5(cluster, log_root, "transaction", "--topic", "GoTxn5", "--prefix", "gt")
    sent = {e["decision"]: e for e in of(events, "sent")}
    assert set(sent) == {"commit", "rollback", "check"}
    assert all(e["transaction_id"] for e in sent.values())
    checked = [e for e in of(events, "checked") if e["decision"] == "check"]
    assert checked and checked[0]["message_id"] == sent["check"]["message_id"]
    assert checked[0]["body"] == sent["check"]["body"] and checked[0]["keys"] == sent["check"]["keys"]
    stored = wait_pulled(cluster, "GoTxn5", 2)
    assert sorted(m.uniq_key for m in stored) == sorted([sent["commit"]["message_id"], sent["check"]["message_id"]])
    for m in stored:
        i = int(m.properties["idx"])
        assert m.body.decode() == body_for("gt", i) and m.tags == TAGS[i % 3]
        assert "TRAN_MSG" not in m.properties or m.properties["TRAN_MSG"] == "true"
    wait_for(lambda: broker.end_transaction_processor.rolled_back > rolled_back)
    assert sent["rollback"]["message_id"] not in {m.uniq_key for m in wait_pulled(cluster, "GoTxn5", 2)}


def test_go_sdk_delay_message_is_not_delivered_before_its_time(cluster, log_root):
    create_topic(cluster, "GoDelay5")
    events = go5(cluster, log_root, "delay", "--topic", "GoDelay5", "--prefix", "gd", "--delay-ms", "3000")
    [sent] = of(events, "sent")
    deliver_at = sent["deliver_at"]
    assert cluster.wait_dispatched()
    if time.time() * 1000 < deliver_at - 200:  # (the SDK's start on a loaded machine can take the whole delay)
        assert pull_all(cluster, "GoDelay5") == []
    [m] = wait_pulled(cluster, "GoDelay5", 1)
    assert_stored_as_sent(sent, m, "gd")
    # The timer wheel put it in the topic at its time, not before; TIMER_DELIVER_MS is the SDK's timestamp.
    assert m.store_timestamp >= deliver_at
    assert int(m.properties["TIMER_DELIVER_MS"]) == deliver_at
