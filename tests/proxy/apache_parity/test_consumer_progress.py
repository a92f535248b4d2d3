"""A consumer group that has only consumed over gRPC (a simple consumer's Settings, Heartbeat, ReceiveMessage and
AckMessage), as the name server and Apache's mqadmin see it afterwards.

On Apache RocketMQ 5.5.0 (its proxy in cluster mode) no retry topic of the group has a route: neither
%RETRY%<group>, which a broker makes when a 4.x consumer's HEART_BEAT names the group (the proxy keeps gRPC
consumers' heartbeats to itself), nor the POP retry topic %RETRY%<group>_<topic>, made when a message is first
revived. So `consumerProgress -g <group>` fails, with 4.9.7's and 5.5.0's mqadmin alike, on the route of
%RETRY%<group> (CODE 17, printed on stderr), and 5.5.0's `consumerProgress -g <group> -t <topic>` lists the topic's
queues. pocketmq's gRPC endpoint must leave the name server and the broker as Apache's proxy does."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.header import GetRouteInfoRequestHeader
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ
from tests.apache.mqadmin.sides import rows

from ..conftest import D, S, metadata
from .calls import PROGRESS_TOPIC, messages_of, receive_request, send_one, telemetry_session

GROUP = "ParityProgressG"
CLIENT_ID = "parity-progress@1"
RETRY_TOPICS = (f"%RETRY%{GROUP}", f"%RETRY%{GROUP}_{PROGRESS_TOPIC}")


@pytest.fixture(scope="module")
def consumed(both_servers: dict[str, Any], apache: tuple[str, str],
             pocketmq: tuple[str, str]) -> Iterator[dict[str, str]]:
    """Each server's name server, once the group has received and acked one message of its own topic over gRPC
    (its Telemetry stream kept open meanwhile)."""
    stop = threading.Event()
    calls = [telemetry_session(stub, CLIENT_ID, GROUP, PROGRESS_TOPIC, D.ClientType.SIMPLE_CONSUMER, stop, 120)
             for stub in both_servers.values()]
    for name, stub in both_servers.items():
        beat = stub.Heartbeat(S.HeartbeatRequest(group=D.Resource(name=GROUP),
                                                 client_type=D.ClientType.SIMPLE_CONSUMER),
                              metadata=metadata(CLIENT_ID), timeout=30)
        assert beat.status.code == D.Code.OK, (name, beat.status)
        send_one(stub, PROGRESS_TOPIC, "0102FC0000000171190B1C3CCC000001A0")
        route = stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=PROGRESS_TOPIC)),
                                metadata=metadata(CLIENT_ID), timeout=30)
        request = receive_request(route.message_queues[0].broker.name, topic=PROGRESS_TOPIC, group=GROUP,
                                  polling_ms=1000)
        received: list[Any] = []
        deadline = time.monotonic() + 30
        while not received:
            assert time.monotonic() < deadline, name
            received = messages_of(stub.ReceiveMessage(request, metadata=metadata(CLIENT_ID), timeout=30))
        assert len(received) == 1, (name, received)
        props = received[0].system_properties
        acked = stub.AckMessage(S.AckMessageRequest(
            group=D.Resource(name=GROUP), topic=D.Resource(name=PROGRESS_TOPIC),
            entries=[S.AckMessageEntry(message_id=props.message_id, receipt_handle=props.receipt_handle)]),
            metadata=metadata(CLIENT_ID), timeout=30)
        assert acked.status.code == D.Code.OK, (name, acked.status)
    yield {"apache": apache[1], "pocketmq": pocketmq[1]}
    stop.set()
    for call in calls:
        call.cancel()


@pytest.fixture(scope="module")
def mqadmins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ApacheRocketMQ]]:
    """4.9.7's and 5.5.0's mqadmin, no servers."""
    tools = {version: ApacheRocketMQ(tmp_path_factory.mktemp(f"progress-tools-{version}"), version).prepare_tools()
             for version in (V4, V5)}
    yield tools
    for one in tools.values():
        one.close_tools()


async def retry_routes(namesrv: str) -> tuple[list[str], dict[str, int]]:
    """The group's topics among the name server's (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), and the answer's code to
    GET_ROUTEINFO_BY_TOPIC of either retry topic."""
    async with MQAdminExt(namesrv, protocol="rocketmq", timeout=30.0) as admin:
        listed = [t for t in await admin.fetch_all_topic_list() if GROUP in t]
        codes = {topic: (await admin._namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                               GetRouteInfoRequestHeader(topic))).code for topic in RETRY_TOPICS}
    return listed, codes


def test_no_retry_topic_of_a_grpc_group_has_a_route(consumed: dict[str, str]) -> None:
    got = {name: asyncio.run(retry_routes(namesrv)) for name, namesrv in consumed.items()}
    assert got["apache"] == ([], {topic: 17 for topic in RETRY_TOPICS}), got  # TOPIC_NOT_EXIST
    assert got["pocketmq"] == got["apache"]


def test_consumer_progress_of_a_grpc_group(consumed: dict[str, str], mqadmins: dict[str, ApacheRocketMQ]) -> None:
    def failure(text: str) -> str:
        """mqadmin's cause line, without the FAQ address the name server's remark ends with (4.9's on pocketmq,
        5.x's on Apache 5.5.0: docs/protocol.md)."""
        return next(line for line in text.splitlines() if "CODE:" in line)

    def progress(version: str, name: str, *args: str) -> Any:
        return mqadmins[version].mqadmin("consumerProgress", "-g", GROUP, *args, "-n", consumed[name])

    with ThreadPoolExecutor(2) as pool:  # (one mqadmin JVM per version, each asking both servers in turn)
        by_version = dict(zip((V4, V5), pool.map(
            lambda version: {name: progress(version, name) for name in consumed}, (V4, V5)), strict=True))
    for version, answers in by_version.items():
        got = {name: (a.returncode, a.stdout, failure(a.stderr)) for name, a in answers.items()}
        assert got["apache"] == (0, "", "Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 17"
                                        f"  DESC: No topic route info in name server for the topic: %RETRY%{GROUP}"
                                 ), (version, got)
        assert got["pocketmq"] == got["apache"], version

    # With the topic named (an option of 5.x's mqadmin only), the group's queue of it, its one message consumed;
    # Apache's broker commits a POP group's offset a moment after the ack. (The consume rate is masked: a rate.)
    consumed_row = [PROGRESS_TOPIC, "broker-a", "0", "1", "1", "0", "0", "TIME"]
    deadline = time.monotonic() + 30
    while True:
        tables = {name: [row if row[:2] != ["Consume", "TPS:"] else row[:2] + ["RATE"]
                         for row in rows(progress(V5, name, "-t", PROGRESS_TOPIC).stdout)] for name in consumed}
        if all(table[1:2] == [consumed_row] for table in tables.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert tables["apache"][1:] == [consumed_row, ["Consume", "TPS:", "RATE"], ["Consume", "Diff", "Total:", "0"],
                                    ["Consume", "Inflight", "Total:", "0"]], tables
    assert tables["pocketmq"] == tables["apache"]
