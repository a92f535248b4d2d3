"""Hostile peers against a real name server over real sockets (issue 18): what they send costs bounded memory and
leaves the server serving everyone else."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.body import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.common.test_compression import zeros_deflated

GUARD = 5.0
MiB = 1 << 20


@pytest.fixture
async def namesrv() -> AsyncIterator[NamesrvController]:
    controller = NamesrvController(NamesrvConfig(listen_port=0))
    await controller.start()
    yield controller
    await controller.shutdown()


def register_request(body: bytes, compressed: bool, broker_name: str = "broker-a") -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name=broker_name, broker_addr="127.0.0.1:10911", cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912", broker_id=0, compressed=compressed, body_crc32=body_crc32(body),
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)


async def test_a_zlib_bomb_in_register_broker_is_refused_in_bounded_memory(namesrv: NamesrvController) -> None:
    # 256 MiB of zeros in ~256 KB (the was 1 GiB in 1 MB: the same shape, smaller so that a broken
    # build fails this test without taking the machine's memory). The name server inflates at most a frame.
    bomb = zeros_deflated(256 * MiB)
    assert len(bomb) < MiB
    async with RemotingClient() as attacker, RemotingClient() as bystander:
        tracemalloc.start()
        try:
            resp = await attacker.invoke(namesrv.address, register_request(bomb, compressed=True), GUARD)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert f"inflates to more than {16 * MiB} bytes" in resp.remark
        # Everything the process allocated while serving it (both ends are in this process): about twice the 16 MiB
        # the inflation may reach (zlib's output blocks, then joined), not the 256 MiB the bomb holds.
        assert peak < 48 * MiB, f"peak {peak / MiB:.1f} MiB"
        # Nothing was registered, and both connections are still served: a real registration goes through.
        topics = {"TopicTest": TopicConfig("TopicTest", 4, 4, PermName.PERM_READ | PermName.PERM_WRITE)}
        good = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, DataVersion(1, 1))).encode(compress=True)
        route_req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("TopicTest"))
        assert (await bystander.invoke(namesrv.address, route_req, GUARD)).code == ResponseCode.TOPIC_NOT_EXIST
        ok = await attacker.invoke(namesrv.address, register_request(good, compressed=True), GUARD)
        assert ok.code == ResponseCode.SUCCESS
        route_req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("TopicTest"))
        assert (await bystander.invoke(namesrv.address, route_req, GUARD)).code == ResponseCode.SUCCESS


async def test_the_inflate_limit_follows_the_name_servers_frame_limit() -> None:
    controller = NamesrvController(NamesrvConfig(listen_port=0, max_frame_size=MiB))
    await controller.start()
    try:
        async with RemotingClient() as client:
            over = zeros_deflated(MiB + 1)
            resp = await client.invoke(controller.address, register_request(over, compressed=True), GUARD)
            assert resp.code == ResponseCode.SYSTEM_ERROR and f"inflates to more than {MiB} bytes" in resp.remark
    finally:
        await controller.shutdown()


async def test_queue_numbers_beyond_a_java_int_are_refused_and_the_topic_stays_routed(
        namesrv: NamesrvController) -> None:
    # Apache's name server cannot parse such a body either; taken, it broke the topic's route for every client.
    topics = {"Shared": TopicConfig("Shared", 4, 4, PermName.PERM_READ | PermName.PERM_WRITE)}
    good = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, DataVersion(1, 1))).encode(compress=False)
    huge = json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": {"Shared": {
        "topicName": "Shared", "readQueueNums": 10**30, "writeQueueNums": 1 << 31, "perm": 6}},
        "dataVersion": {"counter": 1, "timestamp": 1}}, "filterServerList": []}).encode()
    route_req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("Shared"))
    async with RemotingClient() as client, RemotingClient(wire_protocol=WireProtocol.NATIVE) as native:
        ok = await client.invoke(namesrv.address, register_request(good, False, "broker-b"), GUARD)
        assert ok.code == ResponseCode.SUCCESS
        refused = await native.invoke(namesrv.address, register_request(huge, False, "broker-x"), GUARD)
        assert refused.code == ResponseCode.SYSTEM_ERROR and "out of the range of a 32-bit integer" in refused.remark
        for c in (client, native):
            route = await c.invoke(namesrv.address, route_req, GUARD)
            assert route.code == ResponseCode.SUCCESS
    assert list(namesrv.route_info_manager.topic_queue_table["Shared"]) == ["broker-b"]


async def test_a_registration_whose_connection_closed_meanwhile_does_not_stay(namesrv: NamesrvController, caplog,
                                                                             poll) -> None:
    """A big registration is decoded off the loop; its connection closes meanwhile, so the close's clean-up runs
    before the broker is in the tables. It is dropped once applied, as the close would have (it stayed until it
    expired: never, with a huge heartbeatTimeoutMillis, so such registrations piled up)."""
    topics = {f"Gone{i}": TopicConfig(f"Gone{i}", 4, 4, PermName.PERM_READ | PermName.PERM_WRITE) for i in range(2000)}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, DataVersion(1, 1))).encode()
    assert len(body) > 64 * 1024  # (decoded on a worker thread)
    request = register_request(body, compressed=False, broker_name="broker-gone")
    request.ext_fields["heartbeatTimeoutMillis"] = str(2**62)
    caplog.set_level("INFO", logger="pocketmq.namesrv")
    async with RemotingClient() as attacker:
        await attacker.invoke_oneway(namesrv.address, request)
    await poll(lambda: "new broker registered: 127.0.0.1:10911 (broker-gone" in caplog.text)
    await poll(lambda: not namesrv.route_info_manager.broker_live_table)
    assert "broker-gone" not in namesrv.route_info_manager.broker_addr_table
    assert not namesrv.route_info_manager.topic_queue_table
