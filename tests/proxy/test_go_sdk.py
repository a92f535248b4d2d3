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
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client.message import Message as PocketMessage
from pocketmq.client.sync import SyncProducer, SyncSimpleConsumer
from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import SubscriptionGroupConfig

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


# Milliseconds where the SDK allows it (revives, long polls, renewals, the push consumers' nack delays, the timer
# wheel, the broker's transaction checks); a SimpleConsumer's invisible time stays a whole second.
CLUSTER: dict[str, Any] = {
    **FAST_CHECK, "revive_interval": 0.05, "timer_precision_ms": 100,
    "proxy_overrides": {"min_invisible_time_millis_for_recv": 1000, "consumer_min_long_polling_timeout_millis": 100,
                        "consumer_max_long_polling_timeout_millis": 1000, "renew_schedule_period_millis": 50,
                        "consumer_customized_backoff_millis": (300,) * 18},
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    # The SDK's transaction checker answers each message by its "decision" property, so a fast check racing the
    # SDK's own commit or rollback gets the same answer.
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("go5"), grpc=True, **CLUSTER) as c:
        yield c


@pytest.fixture(scope="module")
def log_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go5-logs")


def command(cluster: embedded.ThreadedCluster, log_root: Path, scenario: str, args: tuple[str, ...],
            timeout: float) -> tuple[list[str], dict[str, str]]:
    # The SDK logs to ~/logs/rocketmq unless told otherwise (an environment variable with dots in its name).
    env = dict(os.environ, **{"rocketmq.client.logRoot": str(log_root)})
    return [str(GO5_CLIENT), "--endpoint", cluster.grpc_endpoint, "--timeout", str(timeout), scenario, *args], env


def go5(cluster: embedded.ThreadedCluster, log_root: Path, scenario: str, *args: str,
        timeout: float = 60) -> list[dict[str, Any]]:
    """Runs one scenario to its end; its events, the last being ``done``."""
    argv, env = command(cluster, log_root, scenario, args, timeout)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30, env=env)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and events and events[-1] == {"event": "done"}, (
        proc.stdout[-3000:], proc.stderr[-3000:], sdk_log_tail(log_root))
    return events


class Go5Run:
    """A scenario running in the background (a consumer the test sends to once it has started)."""

    def __init__(self, cluster: embedded.ThreadedCluster, log_root: Path, scenario: str, *args: str,
                 timeout: float = 60) -> None:
        argv, env = command(cluster, log_root, scenario, args, timeout)
        self.log_root, self.timeout = log_root, timeout
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.events: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def started(self) -> None:
        wait_for(lambda: any(e["event"] in ("started", "done", "error") for e in self.events), 30)
        assert of(self.events, "started"), (self.events, sdk_log_tail(self.log_root))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()

    def done(self) -> list[dict[str, Any]]:
        try:
            self.proc.wait(self.timeout + 30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        stderr = self.proc.stderr.read() if self.proc.stderr else ""
        assert self.proc.returncode == 0 and self.events[-1] == {"event": "done"}, (
            self.events[-5:], stderr[-3000:], sdk_log_tail(self.log_root))
        return self.events


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
    # The SDK's SimpleConsumer is started first, then the message sent, 2 s ahead.
    events = go5(cluster, log_root, "delay", "--topic", "GoDelay5", "--prefix", "gd", "--delay-ms", "2000",
                 "--group", "GoDelayGroup5")
    [sent], [got] = of(events, "sent"), of(events, "received")
    deliver_at = sent["deliver_at"]
    assert got["message_id"] == sent["message_id"] and got["delivery_timestamp"] == deliver_at
    assert got["at"] >= deliver_at and got["delivery_attempt"] == 1
    [m] = wait_pulled(cluster, "GoDelay5", 1)
    assert_stored_as_sent(sent, m, "gd")
    # The timer wheel put it in the topic at its time, not before; TIMER_DELIVER_MS is the SDK's timestamp.
    assert m.store_timestamp >= deliver_at
    assert int(m.properties["TIMER_DELIVER_MS"]) == deliver_at


# ---- consumers ---------------------------------------------------------------------------------------------------


def set_group(cluster: embedded.ThreadedCluster, group: str, **config: Any) -> None:
    async def update() -> None:
        broker = cluster.cluster.broker
        assert broker is not None
        broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig(group, **config))

    cluster._call(update())


def send_with_pocketmq(cluster: embedded.ThreadedCluster, topic: str, prefix: str, count: int) -> dict[str, Any]:
    """Messages sent by pocketmq's 4.x producer, as main.go makes its own: by their UNIQ_KEY."""
    sent = {}
    with SyncProducer(f"{topic}Producer", cluster.namesrv_addr) as producer:
        for i in range(count):
            keys = [f"{prefix}-{i}"] + ([f"{prefix}-five"] if i % 5 == 0 else [])
            props = {"idx": str(i), **({"city": "Zürich"} if i % 10 == 7 else {})}
            result = producer.send(PocketMessage(topic, body_for(prefix, i).encode(), tags=TAGS[i % 3], keys=keys,
                                                 properties=props))
            sent[result.msg_id] = {"i": i, "body": body_for(prefix, i), "tag": TAGS[i % 3], "keys": keys,
                                   "props": props}
    return sent


def assert_received_as_sent(got: dict[str, Any], sent: dict[str, Any]) -> None:
    """What the SDK hands its application is what pocketmq's client sent: id, body, tag, keys, user properties."""
    want = sent[got["message_id"]]
    assert got["body"] == want["body"] and got["tag"] == want["tag"]
    assert sorted(got["keys"]) == sorted(want["keys"])
    assert got["props"] == want["props"]  # (no system property leaks into the user's)


def test_go_sdk_simple_consumer_receives_acks_and_gets_back_what_it_did_not_ack(cluster, log_root):
    create_topic(cluster, "GoSimple5")
    run = Go5Run(cluster, log_root, "simple", "--topic", "GoSimple5", "--group", "GoSimpleGroup5", "--expect", "12",
                 "--hold", "sc-4", "--invisible-ms", "1000")
    run.started()
    sent = send_with_pocketmq(cluster, "GoSimple5", "sc", 12)
    events = run.done()
    received, acked = of(events, "received"), of(events, "acked")
    for e in received:
        assert_received_as_sent(e, sent)
        assert e["topic"] == "GoSimple5" and e["receipt_handle"]
    # Every message acked once; the one held back came again after its invisible second, with its next attempt
    # and a new receipt handle, and all others once.
    assert sorted(e["message_id"] for e in acked) == sorted(sent)
    held = [e for e in received if e["keys"] == ["sc-4"]]
    assert [(e.get("held", False), e["delivery_attempt"]) for e in held] == [(True, 1), (False, 2)]
    assert held[0]["receipt_handle"] != held[1]["receipt_handle"]
    assert held[1]["at"] - held[0]["at"] >= 1000
    assert sorted(e["delivery_attempt"] for e in received if e["keys"] != ["sc-4"]) == [1] * 11
    # Acked is gone for the group: pocketmq's own POP consumer of the same group finds nothing.
    with SyncSimpleConsumer("GoSimpleGroup5", cluster.namesrv_addr, subscriptions={"GoSimple5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []


def test_go_sdk_fifo_consumer_gets_each_message_group_in_order(cluster, log_root):
    create_topic(cluster, "GoFifoC5", queues=4)
    set_group(cluster, "GoFifoGroup5", consume_message_orderly=True)
    go5(cluster, log_root, "fifo", "--topic", "GoFifoC5", "--count", "12", "--groups", "2", "--prefix", "fc")
    events = go5(cluster, log_root, "simple", "--topic", "GoFifoC5", "--group", "GoFifoGroup5", "--expect", "12")
    received = of(events, "received")
    assert len(received) == 12  # each once: a FIFO group's next message came only after the previous ack
    for g in range(2):
        mine = [e for e in received if e["message_group"] == f"fc-{g}"]
        assert [int(e["props"]["idx"]) for e in mine] == list(range(g, 12, 2))


def dead_letters(cluster: embedded.ThreadedCluster, group: str, count: int) -> list[MessageExt]:
    found: list[MessageExt] = []

    def enough() -> bool:
        try:
            found[:] = pull_all(cluster, f"%DLQ%{group}")
        except Exception:  # (no route to the DLQ topic before its first message)
            return False
        return len(found) >= count

    wait_for(enough, 20)
    return found


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_go_sdk_push_consumer_retries_then_the_dead_letter_queue(cluster, log_root, fifo):
    topic, group = ("GoDlqF5", "GoDlqFGroup5") if fifo else ("GoDlq5", "GoDlqGroup5")
    create_topic(cluster, topic)
    # Two attempts: a standard consumer nacks the failure (ChangeInvisibleDuration by its backoff), the proxy sends
    # the message to the DLQ when it is due a third time; a FIFO consumer retries locally, then calls
    # ForwardMessageToDeadLetterQueue.
    set_group(cluster, group, retry_max_times=1, consume_message_orderly=fifo)
    run = Go5Run(cluster, log_root, "push", "--topic", topic, "--group", group, "--expect", "4", "--fail", "dl-2")
    run.started()
    sent = send_with_pocketmq(cluster, topic, "dl", 5)
    [poison_id] = [i for i, m in sent.items() if m["i"] == 2]
    try:
        [dead] = dead_letters(cluster, group, 1)
    finally:
        run.stop()
    events = run.done()
    consumed = of(events, "consumed")
    for e in consumed:
        assert_received_as_sent(e, sent)
    assert sorted(e["message_id"] for e in consumed if e["result"] == "SUCCESS") == sorted(set(sent) - {poison_id})
    poison = [e for e in consumed if e["message_id"] == poison_id]
    assert [(e["result"], e["delivery_attempt"]) for e in poison] == [("FAILURE", 1), ("FAILURE", 2)]
    assert dead.uniq_key == poison_id and dead.body.decode() == sent[poison_id]["body"]
    assert dead.keys == sent[poison_id]["keys"] and dead.tags == sent[poison_id]["tag"]


def test_go_sdk_push_group_of_two_shares_a_topic(cluster, log_root):
    create_topic(cluster, "GoShare5")
    run = Go5Run(cluster, log_root, "push", "--topic", "GoShare5", "--group", "GoShareGroup5", "--expect", "30",
                 "--consumers", "2")
    run.started()
    sent = send_with_pocketmq(cluster, "GoShare5", "sh", 30)
    consumed = of(run.done(), "consumed")
    # Each message once, to one member of the group, acked (the group's POP found nothing left).
    assert sorted(e["message_id"] for e in consumed) == sorted(sent)
    for e in consumed:
        assert_received_as_sent(e, sent)
        assert e["delivery_attempt"] == 1
    # The 5 KiB bodies were stored compressed by pocketmq's 4.x producer, and reached the SDK whole (a push consumer
    # discards a message whose body does not match its encoding and digest).
    big = [m for m in pull_all(cluster, "GoShare5") if int(m.properties["idx"]) % 10 == 3]
    assert len(big) == 3 and all(m.sys_flag & 1 for m in big)
    with SyncSimpleConsumer("GoShareGroup5", cluster.namesrv_addr, subscriptions={"GoShare5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []
