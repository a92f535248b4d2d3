"""RocketMQ's Java client with vipChannelEnabled (the default of older 4.x clients, and of Spring Boot apps built on
them) against pocketmq and against Apache RocketMQ 4.9.7: the client sends its sends, views, consumer-list, offset
commits and offset reads to the broker's listenPort - 2 (MixAll.brokerVIPChannel), which both brokers serve. The
harness's vip_channel scenario (tests/java_client/src, VipScenarios) with the 4.9.8 client, one JVM at a time.

That the requests went over the VIP channel is shown by the same scenario against a pocketmq broker whose VIP port
another socket holds: its send fails to connect to port - 2, while the broker serves its main port on. A pull on
the VIP port is refused by both alike.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.server import RemotingServer
from tests.apache.apache_rocketmq import ApacheRocketMQ, free_port
from tests.apache.differential import call, request
from tests.java_client import java_harness as jh

VERSION = "4.9.8"  # the 4.x client, beside Apache 4.9.7 (the session's apache_rocketmq)
SCENARIO = "vip_channel"


@pytest.fixture(scope="module")
def pocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    jh.harness_classpath(VERSION)  # (fails with the reason before anything starts)
    port = free_port(-2, 0)  # a fixed port: the client looks for the VIP channel two below it
    with ThreadedCluster(tmp_path_factory.mktemp("vip"), listen_port=port) as cluster:
        yield cluster


def server_of(cluster: ThreadedCluster) -> RemotingServer:
    broker = cluster.cluster.broker
    assert broker is not None
    return broker.remoting_server


def run(namesrv_addr: str, server: str, home: Path) -> dict[str, Any]:
    """The scenario's line: ``{"ok": ..., "result": ...}`` or ``{"ok": false, "error": ...}``."""
    harness = jh.run(VERSION, namesrv_addr, f"V{uuid.uuid4().hex[:8]}", server, home, scenarios=[SCENARIO],
                     threads=1)
    return harness.lines[SCENARIO]


def test_the_vip_channel_serves_sends_views_the_consumer_list_and_offsets(
    pocketmq: ThreadedCluster, apache_rocketmq: ApacheRocketMQ, tmp_path: Path
) -> None:
    assert server_of(pocketmq).vip_address == f"127.0.0.1:{server_of(pocketmq).port - 2}"
    p = run(pocketmq.namesrv_addr, "pocketmq", tmp_path / "pocketmq")
    a = run(apache_rocketmq.namesrv_addr, "apache", tmp_path / "apache")
    expected = {"sends": ["SEND_OK"] * 3, "viewed": "vip 0", "bodies": ["vip 0", "vip 1", "vip 2"],
                "committedSum": 3, "persisted": True}
    for line, server in ((p, "pocketmq"), (a, "Apache RocketMQ 4.9.7")):
        assert line["ok"], (server, line.get("error"))
        assert line["result"] == expected, server


def test_without_the_vip_port_the_clients_send_does_not_connect(tmp_path: Path) -> None:
    jh.harness_classpath(VERSION)
    port = free_port(-2, 0)
    with socket.create_server(("127.0.0.1", port - 2)) as holder, \
            ThreadedCluster(tmp_path / "taken", listen_port=port) as cluster:
        assert server_of(cluster).vip_address is None
        holder.close()  # (refused from now on: nothing listens there, nor does the broker)
        line = run(cluster.namesrv_addr, "pocketmq", tmp_path / "home")
    assert not line["ok"]
    causes, error = [], line["error"]
    while error is not None:
        causes.append((error["type"], error.get("message") or ""))
        error = error.get("cause")
    assert any(kind == "RemotingConnectException" and f"127.0.0.1:{port - 2}" in message
               for kind, message in causes), causes


def test_a_pull_on_the_vip_port_is_refused_alike(pocketmq: ThreadedCluster, apache_rocketmq: ApacheRocketMQ) -> None:
    pull = request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "vip_g", "topic": "VipPull", "queueId": 0, "queueOffset": 0, "maxMsgNums": 32, "sysFlag": 2,
        "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*", "expressionType": "TAG"})
    answers = []
    for port in (server_of(pocketmq).port, apache_rocketmq.broker_port):
        answer = call(f"127.0.0.1:{port - 2}", pull)
        answers.append((answer.code, answer.remark))
    assert answers[0] == answers[1] == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 11 not supported")
