"""Runs the Java SDK harness (tests/java_sdk/src, built by `make java-sdk`) against one gRPC endpoint.

One JVM per server runs every scenario at once and prints one JSON line per scenario; ``run`` returns them by
name. The scenarios do not create their topics or groups (a 5.x SDK cannot): ``SCENARIOS`` says what each needs
and ``prepare`` makes them on a server through its broker, the same remoting requests for pocketmq and Apache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import RequestCode

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".java-sdk"
SDK_VERSION = "5.2.0"  # tests/java_sdk/pom.xml's rocketmq.sdk.version

# A JVM sized for a test on two cores.
JVM = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
RUN_TIMEOUT = 300.0


class JavaSdkUnavailable(RuntimeError):
    """The harness is not built or Java is missing: the one-line reason, never a skip."""


@dataclass(frozen=True)
class Group:
    name: str
    orderly: bool = False  # RocketMQ 5's consumeMessageOrderly: a FIFO group
    retry_max_times: int = 16


@dataclass(frozen=True)
class Needs:
    """A scenario's topic (``<run>-<scenario>``, of ``message_type``) and consumer groups (``<topic>-<name>``)."""

    message_type: str
    groups: tuple[Group, ...] = field(default=())


SCENARIOS: dict[str, Needs] = {
    "normal": Needs("NORMAL", (Group("all"), Group("tagb"))),
    "fifo": Needs("FIFO", (Group("ordered", orderly=True),)),
    "delay": Needs("DELAY", (Group("delayed"),)),
    "transaction": Needs("TRANSACTION", (Group("txn"),)),
    "check_back": Needs("TRANSACTION", (Group("checked"),)),
    "invisible": Needs("NORMAL", (Group("slow"),)),
    "dlq": Needs("NORMAL", (Group("failing", retry_max_times=1),)),
    "push_group": Needs("NORMAL", (Group("shared"),)),
    "recall": Needs("DELAY", (Group("recalled"),)),
}
# Run only against a server with ACL on, with an account's keys (test_java_sdk_acl.py).
ACL_SCENARIOS: dict[str, Needs] = {"acl": Needs("NORMAL", (Group("signed"),))}


def classpath() -> str:
    if not (BUILD / "harness.jar").exists() or not any((BUILD / "lib").glob("rocketmq-client-java-*.jar")):
        raise JavaSdkUnavailable(f"the Java SDK harness is not built in {BUILD}: run `make java-sdk`")
    if shutil.which("java") is None:
        raise JavaSdkUnavailable("no `java` on PATH: the Java SDK harness needs Java 17")
    return f"{BUILD / 'harness.jar'}{os.pathsep}{BUILD / 'lib'}/*"


def topic(run_id: str, scenario: str) -> str:
    return f"{run_id}-{scenario}"


def group(run_id: str, scenario: str, name: str) -> str:
    return f"{topic(run_id, scenario)}-{name}"


async def create(admin: MQAdminExt, broker_addr: str, name: str, message_type: str, queues: int = 4) -> None:
    """A topic of ``message_type`` on the broker (RocketMQ 5's ``+message.type`` attribute)."""
    tc = TopicConfig(name, queues, queues, attributes={"+message.type": message_type})
    await admin.create_topic(tc, broker_addr=broker_addr)


async def create_group(admin: MQAdminExt, broker_addr: str, name: str, orderly: bool = False,
                       retry_max_times: int = 16) -> None:
    """A subscription group with RocketMQ 5's consumeMessageOrderly, as JSON (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
    body = {"groupName": name, "consumeEnable": True, "consumeFromMinEnable": True, "consumeBroadcastEnable": True,
            "retryQueueNums": 1, "retryMaxTimes": retry_max_times, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
            "notifyConsumerIdsChangedEnable": True, "consumeMessageOrderly": orderly}
    admin._ok(await admin._broker(broker_addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                  body=json.dumps(body).encode()), broker_addr)


async def prepare(namesrv_addr: str, broker_addr: str, run_id: str, scenarios: dict[str, Needs] = SCENARIOS,
                  keys: tuple[str, str] | None = None) -> None:
    """Every scenario's topic and groups on one server (as the account of ``keys`` on a server with ACL on)."""
    access_key, secret_key = keys if keys is not None else (None, None)
    async with MQAdminExt(namesrv_addr, protocol="rocketmq", timeout=30.0, access_key=access_key,
                          secret_key=secret_key) as admin:
        for scenario, needs in scenarios.items():
            await create(admin, broker_addr, topic(run_id, scenario), needs.message_type)
            for g in needs.groups:
                await create_group(admin, broker_addr, group(run_id, scenario, g.name), g.orderly, g.retry_max_times)


@dataclass
class HarnessRun:
    server: str
    run_id: str
    lines: dict[str, dict[str, Any]]
    stderr: str

    def result(self, scenario: str) -> dict[str, Any]:
        line = self.lines.get(scenario)
        assert line is not None, f"{scenario}: no line from the Java SDK on {self.server}"
        assert line["ok"], f"{scenario} failed with the Java SDK on {self.server}: {line['error']}"
        return line["result"]


def run(endpoint: str, run_id: str, server: str, home: Path, scenarios: list[str] | None = None,
        ssl: bool = True, keys: tuple[str, str] | None = None) -> HarnessRun:
    """One JVM: every scenario of ``SCENARIOS`` (or ``scenarios``) against ``endpoint``, TLS on unless ``ssl`` is
    false, every client signing with ``keys`` (access key, secret key) when given."""
    home.mkdir(parents=True, exist_ok=True)
    argv = ["java", *JVM, f"-Duser.home={home}", f"-Djava.io.tmpdir={home}", "-cp", classpath(),
            "io.pocketmq.javasdk.Harness",
            "--endpoint", endpoint, "--run", run_id, "--ssl", str(ssl).lower(),
            "--scenarios", ",".join(scenarios or SCENARIOS)]
    if keys is not None:
        argv += ["--access-key", keys[0], "--secret-key", keys[1]]
    proc = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT, check=False, cwd=home)
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    (home / "harness.stdout").write_text(stdout, encoding="utf-8")  # (the results, for a failure's post-mortem)
    (home / "harness.stderr").write_text(stderr, encoding="utf-8")
    lines: dict[str, dict[str, Any]] = {}
    done = False
    for text in stdout.splitlines():
        if text.startswith("{"):
            line = json.loads(text)
            done = done or bool(line.get("done"))
            if "scenario" in line:
                lines.setdefault(line["scenario"], line)
    if not done:
        raise RuntimeError(f"the Java SDK harness on {server} exited with {proc.returncode} before it was done:\n"
                           f"{stdout[-2000:]}\n{stderr[-3000:]}")
    return HarnessRun(server, run_id, lines, stderr)
