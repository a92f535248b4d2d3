"""How test_admin_cli.py and test_admin_cli_acl.py run a command and read its output."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pocketmq.cli import main
from pocketmq.embedded import ThreadedCluster


def cli(capsys: pytest.CaptureFixture[str], cluster: ThreadedCluster, *args: str) -> tuple[int, str, str]:
    code = main([args[0], "-n", cluster.namesrv_addr, *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], cluster: ThreadedCluster, *args: str) -> Any:
    code, out, err = cli(capsys, cluster, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def brokers(cluster: ThreadedCluster) -> list[Any]:
    return cluster.cluster.brokers


def wait_routed(cluster: ThreadedCluster, topic: str, n: int) -> None:
    table = cluster.cluster.namesrv.route_info_manager.topic_queue_table  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    while len(table.get(topic, {})) < n:
        assert time.monotonic() < deadline, f"{topic} not on {n} brokers"
        time.sleep(0.01)
