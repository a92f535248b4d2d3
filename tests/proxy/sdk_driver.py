"""The native 5.x SDK drivers (tests/native_clients/go5, rust5): one program per SDK, one scenario per run, JSON
lines out, the last ``{"event": "done"}``; and what their tests share: the bodies, keys, tags and properties the
drivers and pocketmq's 4.x producer make, and the checks of one against the other."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from pocketmq import embedded
from pocketmq.client.message import Message as PocketMessage
from pocketmq.client.sync import SyncProducer, SyncSimpleConsumer
from pocketmq.common.message import MessageExt

from .sdk_helpers import FAST_CHECK, create_topic, pull_all, wait_for, wait_pulled

NATIVE_CLIENTS = Path(__file__).resolve().parents[1] / "native_clients"
TAGS = ("TagA", "TagB", "TagC")

# Milliseconds where the SDKs allow it (revives, long polls, renewals, the push consumers' nack delays, the timer
# wheel, the broker's transaction checks); a SimpleConsumer's invisible time stays a whole second. The drivers'
# transaction checkers answer each message by its "decision" property, so a fast check racing the SDK's own commit
# or rollback gets the same answer.
CLUSTER: dict[str, Any] = {
    **FAST_CHECK, "revive_interval": 0.05, "timer_precision_ms": 100,
    "proxy_overrides": {"min_invisible_time_millis_for_recv": 1000, "consumer_min_long_polling_timeout_millis": 100,
                        "consumer_max_long_polling_timeout_millis": 1000, "renew_schedule_period_millis": 50,
                        "consumer_customized_backoff_millis": (300,) * 18},
}


class Driver:
    """A built driver program: ``make_target`` builds ``binary`` from ``sources``; ``env`` is added to the
    environment; the SDK's own log (``log``, if it keeps one) and the program's stderr go to ``log_root``."""

    def __init__(self, binary: Path, sources: list[Path], make_target: str, log_root: Path,
                 env: dict[str, str] | None = None, log: str | None = None) -> None:
        self.binary, self.sources, self.make_target = binary, sources, make_target
        self.log_root, self.env, self.log = log_root, env or {}, log
        self.stderr = log_root / f"{binary.name}.stderr"
        self.runs: list[DriverRun] = []

    def assert_built(self) -> None:
        assert self.binary.exists(), f"the driver is not built ({self.binary}): run `make {self.make_target}`"
        stale = [src.name for src in self.sources if src.stat().st_mtime > self.binary.stat().st_mtime]
        assert not stale, f"{self.binary} is older than {stale}: run `make {self.make_target}`"

    def argv(self, cluster: embedded.ThreadedCluster, scenario: str, args: tuple[str, ...],
             timeout: float) -> list[str]:
        return [str(self.binary), "--endpoint", cluster.grpc_endpoint, "--timeout", str(timeout), scenario, *args]

    def run(self, cluster: embedded.ThreadedCluster, scenario: str, *args: str,
            timeout: float = 60) -> list[dict[str, Any]]:
        """Runs one scenario to its end; its events, the last being ``done``."""
        return self.start(cluster, scenario, *args, timeout=timeout).done()

    def start(self, cluster: embedded.ThreadedCluster, scenario: str, *args: str, timeout: float = 60) -> DriverRun:
        """A scenario running in the background (a consumer the test sends to once it has started)."""
        run = DriverRun(self, self.argv(cluster, scenario, args, timeout), timeout)
        self.runs.append(run)
        return run

    def close(self) -> None:
        """Ends what a failed test left running (each run also ends itself after its timeout)."""
        for run in self.runs:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()

    def logs(self) -> str:
        """The end of the SDK's log and of the program's stderr, for a failure's message."""
        out = []
        for path in ([self.log_root / self.log] if self.log else []) + [self.stderr]:
            if path.exists():
                out.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:])
        return "\n".join(out)


class DriverRun:
    def __init__(self, driver: Driver, argv: list[str], timeout: float) -> None:
        self.driver, self.timeout = driver, timeout
        with driver.stderr.open("a") as stderr:  # (a file: an SDK that logs to stderr never fills a pipe)
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         text=True, env=dict(os.environ, **driver.env))
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
        assert of(self.events, "started"), (self.events, self.driver.logs())

    def stop(self) -> None:
        """A line "stop" on the program's stdin (a push consumer that runs until told)."""
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
        assert self.proc.returncode == 0 and self.events and self.events[-1] == {"event": "done"}, (
            self.events[-5:], self.driver.logs())
        return self.events


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind]


def body_for(prefix: str, i: int) -> str:
    """The drivers' bodies: some not ASCII, some over 4 KiB (which a 4.x producer compresses)."""
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
    if "offset" in sent:  # (the Rust SDK's receipt has none)
        assert m.queue_offset == sent["offset"]
    # The SDKs compress nothing; pocketmq stores the body as it came.
    assert m.sys_flag & 1 == 0


def send_with_pocketmq(cluster: embedded.ThreadedCluster, topic: str, prefix: str, count: int) -> dict[str, Any]:
    """Messages sent by pocketmq's 4.x producer, made as the drivers make theirs: by their UNIQ_KEY."""
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


def pop_time(receipt_handle: str) -> tuple[int, int]:
    """The pop time and invisible time (ms) a receipt handle carries: the proxy's handle starts with the broker's
    POP_CK fields, ``ckQueueOffset popTime invisibleTime ...``."""
    fields = receipt_handle.split(" ")
    return int(fields[1]), int(fields[2])


def assert_back_after_invisible_time(first: dict[str, Any], again: dict[str, Any]) -> None:
    """A message not acked came back with its next attempt and a new handle, not before its invisible time ran out
    (by the broker's clocks: its pop times)."""
    assert (first["delivery_attempt"], again["delivery_attempt"]) == (1, 2)
    assert first["receipt_handle"] != again["receipt_handle"]
    popped, invisible = pop_time(first["receipt_handle"])
    assert invisible == 1000 and pop_time(again["receipt_handle"])[0] >= popped + invisible


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


# ---- the checks every SDK's tests make: the driver sends (or receives) and pocketmq's client reads back ----------


def assert_sends_read_back(cluster: embedded.ThreadedCluster, driver: Driver, topic: str, count: int,
                           prefix: str) -> tuple[dict[str, Any], list[MessageExt]]:
    """The driver's normal sends, read back by pocketmq's 4.x client with the SDK's ids, bodies, tags, keys and
    properties; the proxy makes the topic the producer group. Returns (sent by id, stored)."""
    create_topic(cluster, topic)
    events = driver.run(cluster, "send", "--topic", topic, "--count", str(count), "--prefix", prefix)
    sent = {e["message_id"]: e for e in of(events, "sent")}
    assert len(sent) == count
    stored = wait_pulled(cluster, topic, count)
    assert sorted(m.uniq_key for m in stored) == sorted(sent)
    for m in stored:
        assert_stored_as_sent(sent[m.uniq_key], m, prefix)
        assert m.properties["PGROUP"] == topic
    return sent, stored


def assert_fifo_groups_read_back(cluster: embedded.ThreadedCluster, driver: Driver, topic: str, count: int,
                                 groups: int, prefix: str) -> dict[str, Any]:
    """The driver's FIFO sends: each message group on one queue, in the order sent. Returns the sent by id."""
    create_topic(cluster, topic, queues=8)
    events = driver.run(cluster, "fifo", "--topic", topic, "--count", str(count), "--groups", str(groups),
                        "--prefix", prefix)
    sent = {e["message_id"]: e for e in of(events, "sent")}
    stored = wait_pulled(cluster, topic, count)
    for g in range(groups):
        mine = sorted((m for m in stored if m.properties["__SHARDINGKEY"] == f"{prefix}-{g}"),
                      key=lambda m: m.queue_offset)
        assert len({m.queue_id for m in mine}) == 1, f"group {prefix}-{g} spread over queues"
        assert [int(m.properties["idx"]) for m in mine] == list(range(g, count, groups))
        for m in mine:
            assert_stored_as_sent(sent[m.uniq_key], m, prefix)
    return sent


def assert_transactions_read_back(cluster: embedded.ThreadedCluster, driver: Driver, topic: str,
                                  prefix: str) -> tuple[dict[str, Any], list[MessageExt]]:
    """A commit, a rollback, and a half message left open, which the broker checks back through the proxy and the
    producer's Telemetry stream (the driver's checker commits it): the committed two are stored, the rolled-back
    one is not. Returns (sent by decision, stored)."""
    create_topic(cluster, topic)
    broker = cluster.cluster.broker
    assert broker is not None
    rolled_back = broker.end_transaction_processor.rolled_back
    events = driver.run(cluster, "transaction", "--topic", topic, "--prefix", prefix)
    sent = {e["decision"]: e for e in of(events, "sent")}
    assert set(sent) == {"commit", "rollback", "check"} and all(e["transaction_id"] for e in sent.values())
    checked = [e for e in of(events, "checked") if e["decision"] == "check"]
    assert checked and checked[0]["message_id"] == sent["check"]["message_id"]
    assert checked[0]["body"] == sent["check"]["body"]
    stored = wait_pulled(cluster, topic, 2)
    assert sorted(m.uniq_key for m in stored) == sorted([sent["commit"]["message_id"], sent["check"]["message_id"]])
    for m in stored:
        i = int(m.properties["idx"])
        assert m.body.decode() == body_for(prefix, i) and m.tags == TAGS[i % 3]
    wait_for(lambda: broker.end_transaction_processor.rolled_back > rolled_back)
    return sent, stored


def assert_simple_consumer_receives(cluster: embedded.ThreadedCluster, driver: Driver, topic: str, group: str,
                                    prefix: str) -> list[dict[str, Any]]:
    """The driver's SimpleConsumer receives what pocketmq's producer sent and acks it, but one message held back,
    which comes again after its invisible second with its next attempt and a new handle; then nothing is left for
    the group (pocketmq's own POP consumer of it finds nothing). Returns the received events."""
    create_topic(cluster, topic)
    run = driver.start(cluster, "simple", "--topic", topic, "--group", group, "--expect", "12",
                       "--hold", f"{prefix}-4", "--invisible-ms", "1000")
    run.started()
    sent = send_with_pocketmq(cluster, topic, prefix, 12)
    events = run.done()
    received, acked = of(events, "received"), of(events, "acked")
    for e in received:
        assert_received_as_sent(e, sent)
        assert e["topic"] == topic
    assert sorted(e["message_id"] for e in acked) == sorted(sent)
    held = [e for e in received if e["keys"] == [f"{prefix}-4"]]
    assert [e.get("held", False) for e in held] == [True, False]
    assert_back_after_invisible_time(*held)
    with SyncSimpleConsumer(group, cluster.namesrv_addr, subscriptions={topic: "*"}, await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []
    return received
