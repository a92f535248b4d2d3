"""Runs the Java client harness (tests/java_client/src, built by `make java-clients`) against one name server.

One JVM per (server, client version) runs every scenario, several at a time, and prints one JSON line per
scenario; `run` returns them by name. The harness prints raw observations; `normalize` takes out what differs
between two runs for reasons that are no part of the behaviour compared (ids, addresses, times, the run's
names).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".java-clients"

# The clients the suite runs: RocketMQ 4.9.8's Java client and 5.x's remoting client (Makefile's
# JAVA_CLIENT_VERSIONS must list the same).
CLIENT_VERSIONS = ("4.9.8", "5.5.0")

# A client JVM sized for a test on two cores; the rebalance interval (20 s by default) is a system property.
CLIENT_JVM = (
    "-Xms32m",
    "-Xmx128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Drocketmq.client.rebalance.waitInterval=1000",
    "-Drocketmq.client.logUseSlf4j=false",
)

RUN_TIMEOUT = 600.0


class JavaClientUnavailable(RuntimeError):
    """The harness of a client version is not built: the one-line reason, never a skip."""


def harness_classpath(version: str) -> str:
    out = BUILD / version
    if not (out / "harness.jar").exists() or not any((out / "lib").glob("rocketmq-client-*.jar")):
        raise JavaClientUnavailable(
            f"the Java client harness for rocketmq-client {version} is not built in {out}: run `make java-clients`"
        )
    if shutil.which("java") is None:
        raise JavaClientUnavailable("no `java` on PATH: the Java client harness needs Java 17")
    return f"{out / 'harness.jar'}{os.pathsep}{out / 'lib'}/*"


@dataclass
class HarnessRun:
    """The scenarios' lines of one run, by scenario name, and the JVM's stderr (the clients' logs) for failures."""

    version: str
    server: str
    run_id: str
    lines: dict[str, dict[str, Any]]
    stderr: str

    def result(self, scenario: str) -> dict[str, Any]:
        line = self.lines.get(scenario)
        assert line is not None, f"{scenario}: no line from the {self.version} client on {self.server}"
        assert line["ok"], f"{scenario} failed with the {self.version} client on {self.server}: {line['error']}"
        return line["result"]


def run(
    version: str,
    namesrv_addr: str,
    run_id: str,
    server: str,
    home: Path,
    scenarios: list[str] | None = None,
    acl: dict[str, str] | None = None,
    threads: int = 4,
) -> HarnessRun:
    """One JVM: every scenario (or ``scenarios``) against ``namesrv_addr``; ``acl`` gives the ACL scenario its
    name server (``namesrv``) and its ``admin`` and ``user`` accounts as ``key:secret``."""
    classpath = harness_classpath(version)
    home.mkdir(parents=True, exist_ok=True)
    argv = ["java", *CLIENT_JVM, f"-Duser.home={home}", f"-Djava.io.tmpdir={home}", "-cp", classpath,
            "io.pocketmq.javaclient.Harness"]
    argv += ["--namesrv", namesrv_addr, "--run", run_id, "--threads", str(threads)]
    if scenarios:
        argv += ["--scenarios", ",".join(scenarios)]
    if acl:
        argv += ["--acl-namesrv", acl["namesrv"], "--acl-admin", acl["admin"], "--acl-user", acl["user"]]
    proc = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT, check=False, cwd=home)
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    (home / "harness.stdout").write_text(stdout, encoding="utf-8")  # (each scenario's line and its "ms")
    (home / "harness.stderr").write_text(stderr, encoding="utf-8")
    lines: dict[str, dict[str, Any]] = {}
    done = False
    for text in stdout.splitlines():
        if not text.startswith("{"):
            continue
        line = json.loads(text)
        if line.get("done"):
            done = True
        elif "scenario" in line:
            lines.setdefault(line["scenario"], line)
    if not done:
        raise RuntimeError(
            f"the {version} Java client harness on {server} exited with {proc.returncode} before it was done:\n"
            f"{stdout[-2000:]}\n{stderr[-3000:]}"
        )
    return HarnessRun(version, server, run_id, lines, stderr)


# Properties whose values are ids, times or addresses; compared as present or absent only.
VOLATILE_PROPS = {
    "UNIQ_KEY",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "CONSUME_START_TIME",
    "ORIGIN_MESSAGE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "__transactionId__",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "MSG_REGION",
    "TIMER_OUT_MS",
    "TIMER_DELIVER_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "bname",
}
# Fields of a described message that are ids, times or positions.
VOLATILE_FIELDS = {"msgId", "bornTimestamp", "storeTimestamp", "queueOffset", "receivedAt", "offsetMsgId"}


def masked(value: Any, run_id: str) -> Any:
    """``value`` with the run id replaced by RUN, everywhere inside it."""
    if isinstance(value, str):
        return value.replace(run_id, "RUN")
    if isinstance(value, list):
        return [masked(v, run_id) for v in value]
    if isinstance(value, dict):
        return {masked(k, run_id): masked(v, run_id) for k, v in value.items()}
    return value


def message(described: dict[str, Any], run_id: str, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """A described message without its ids and times (except the fields in ``keep``), properties with volatile
    values reduced to a marker."""
    out = {k: v for k, v in described.items() if k not in VOLATILE_FIELDS or k in keep}
    out["props"] = {k: ("<volatile>" if k in VOLATILE_PROPS else v) for k, v in described["props"].items()}
    return masked(out, run_id)


def by_body(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(messages, key=lambda m: (m["body"] or "", m.get("reconsumeTimes", 0)))


ID_PATTERN = re.compile(r"[0-9A-F]{32}")


def error(err: dict[str, Any] | str) -> dict[str, Any] | str:
    """An exception as compared: its type and response code (the messages differ in wording, ids and hosts), and
    its cause's."""
    if not isinstance(err, dict):
        return err
    out: dict[str, Any] = {"type": err.get("type"), "responseCode": err.get("responseCode")}
    if "cause" in err:
        out["cause"] = error(err["cause"])
    return out
