"""Fixtures for the tool tests: demo stores written in-process, and the tools run as their CLIs are."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from pocketmq.storage.demo import main as demo_main
from pocketmq.storage.demo import plan
from pocketmq.storage.inspect import main as inspect_main
from pocketmq.storage.schedule_routing import SCHEDULE_TOPIC

DEMO_MESSAGES = 200


def run_tool(main, argv: list[str]) -> tuple[int, str]:
    """Run a tool's main(argv) in-process; returns (exit code, stdout)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def demo(path: Path, *args: str) -> str:
    code, out = run_tool(demo_main, [str(path), *args])
    assert code == 0, out
    return out


def inspect_json(path: Path, *args: str) -> dict:
    code, out = run_tool(inspect_main, [str(path), "--json", *args])
    assert code == 0
    return json.loads(out)


@dataclass(frozen=True)
class Written:
    """What the demo put, as the store should have stored it (delayed messages rerouted)."""

    topic: str
    queue_id: int
    keys: tuple[str, ...]
    uniq_key: str
    tags: str
    body: bytes
    sys_flag: int


def expected_messages(count: int) -> list[Written]:
    """The demo's messages in put order, worked out from its plan independently of the store."""
    out = []
    for put in plan(count):
        for m in put.messages:
            topic, queue_id = m.topic, m.queue_id
            level = int(m.properties.get("DELAY", "0"))
            if level > 0:
                topic, queue_id = SCHEDULE_TOPIC, level - 1
            out.append(Written(topic, queue_id, tuple(m.properties["KEYS"].split()), m.properties["UNIQ_KEY"],
                               m.properties["TAGS"], m.body, m.sys_flag))
    return out


def per_queue(messages: list[Written]) -> Counter:
    return Counter((m.topic, m.queue_id) for m in messages)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A --small demo store of DEMO_MESSAGES messages, shared by a module's read-only tests."""
    path = tmp_path_factory.mktemp("demo") / "store"
    demo(path, "--small", "--messages", str(DEMO_MESSAGES))
    return path


@pytest.fixture(scope="module")
def report(store: Path) -> dict:
    """The full JSON report of `store`, every record and entry included."""
    return inspect_json(store, "--hex")


def all_records(report: dict) -> list[dict]:
    return [r for f in report["commitlog"]["files"] for r in f["records"]]
