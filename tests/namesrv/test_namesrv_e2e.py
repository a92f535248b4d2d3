"""The name server over real sockets, with fake brokers and clients made of RemotingClients."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable

import msgpack
import pytest
import uvloop

from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.body import (
    ClusterInfo,
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    body_crc32,
    decode_body,
    encode_body,
)
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    BrokerHeartbeatRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from pocketmq.remoting.transport import parse_address

GUARD = 5.0
CLUSTER = "DefaultCluster"


class FakeBroker:
    """Registers like a broker would; owns its own connections."""

    def __init__(self, name: str = "broker-a", broker_id: int = 0, addr: str = "127.0.0.1:10911") -> None:
        self.name, self.broker_id, self.addr = name, broker_id, addr
        self.client = RemotingClient()
        self.version = DataVersion(timestamp=1, counter=1)
        self.topics: dict[str, TopicConfig] = {}

    async def register(
        self, namesrv: str, compressed: bool = False, crc: int | None = None
    ) -> RemotingCommand:
        body = RegisterBrokerBody(TopicConfigSerializeWrapper(self.topics, self.version)).encode(compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=self.name,
            broker_addr=self.addr,
            cluster_name=CLUSTER,
            ha_server_addr=self.addr.replace("10911", "10912"),
            broker_id=self.broker_id,
            compressed=compressed,
            body_crc32=body_crc32(body) if crc is None else crc,
        )
        return await self.client.invoke(
            namesrv, RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body), GUARD
        )

    async def close(self) -> None:
        await self.client.close()


async def get_route(client: RemotingClient, namesrv: str, topic: str) -> RemotingCommand:
    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
    return await client.invoke(namesrv, req, GUARD)


async def has_route(client: RemotingClient, namesrv: str, topic: str) -> bool:
    return (await get_route(client, namesrv, topic)).code == ResponseCode.SUCCESS


async def wait_for_route(client: RemotingClient, namesrv: str, topic: str, present: bool) -> None:
    """Poll the name server until the topic's route is (or is no longer) there; fail after GUARD seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GUARD
    while await has_route(client, namesrv, topic) != present:
        if loop.time() > deadline:
            raise AssertionError(
                f"route of {topic} still {'missing' if present else 'present'} after {GUARD}s"
            )
        await asyncio.sleep(0.005)


def config(**overrides: float) -> NamesrvConfig:
    return NamesrvConfig(listen_port=0, **overrides)  # type: ignore[arg-type]


@pytest.fixture
async def namesrv() -> AsyncIterator[NamesrvController]:
    controller = NamesrvController(config(scan_not_active_broker_interval=0.05))
    await controller.start()
    yield controller
    await controller.shutdown()


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    b = FakeBroker()
    b.topics = {"TopicTest": TopicConfig("TopicTest", 8, 4, PermName.PERM_READ | PermName.PERM_WRITE)}
    yield b
    await b.close()


async def test_registered_topic_has_a_route(namesrv: NamesrvController, broker: FakeBroker, client) -> None:
    assert namesrv.address == f"127.0.0.1:{namesrv.port}" and namesrv.port != 0
    reg = await broker.register(namesrv.address)
    assert reg.code == ResponseCode.SUCCESS
    assert reg.decode_header(RegisterBrokerResponseHeader) == RegisterBrokerResponseHeader(None, None)
    resp = await get_route(client, namesrv.address, "TopicTest")
    assert resp.code == ResponseCode.SUCCESS
    route = decode_body(resp.body, TopicRouteData)
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 8, 4, 6)
    ]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        (CLUSTER, "broker-a", {0: "127.0.0.1:10911"})
    ]


async def test_slave_registration_returns_the_master(namesrv: NamesrvController, broker: FakeBroker) -> None:
    await broker.register(namesrv.address)
    slave = FakeBroker(broker_id=1, addr="127.0.0.2:10911")
    try:
        reg = await slave.register(namesrv.address)
        header = reg.decode_header(RegisterBrokerResponseHeader)
        assert (header.master_addr, header.ha_server_addr) == ("127.0.0.1:10911", "127.0.0.1:10912")
    finally:
        await slave.close()


async def test_unknown_topic_is_topic_not_exist(namesrv: NamesrvController, client: RemotingClient) -> None:
    resp = await get_route(client, namesrv.address, "NoSuchTopic")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST == 17
    assert resp.remark == ("No topic route info in name server for the topic: NoSuchTopic\n"
                           "See http://rocketmq.apache.org/docs/faq/ for further details.")


async def test_closing_the_broker_connection_drops_its_route_at_once(
    namesrv: NamesrvController, broker: FakeBroker, client: RemotingClient
) -> None:
    await broker.register(namesrv.address)
    assert await has_route(client, namesrv.address, "TopicTest")
    await broker.close()
    await wait_for_route(client, namesrv.address, "TopicTest", present=False)
    assert namesrv.route_info_manager.broker_live_table == {}


async def test_silent_broker_is_dropped_by_the_scan(client: RemotingClient, poll: Callable) -> None:
    async with NamesrvController(
        config(broker_channel_expired_time=0.2, scan_not_active_broker_interval=0.05)
    ) as ns:
        b = FakeBroker()
        b.topics = {"Quiet": TopicConfig("Quiet")}
        try:
            await b.register(ns.address)
            channel = await b.client.get_channel(ns.address)
            assert await has_route(client, ns.address, "Quiet")
            # The broker keeps its connection open but stops registering.
            await wait_for_route(client, ns.address, "Quiet", present=False)
            await poll(lambda: channel.closed)  # the name server closed it, as RocketMQ does
        finally:
            await b.close()


async def test_heartbeating_broker_survives_the_scan(clock, client: RemotingClient) -> None:
    async with NamesrvController(config(scan_not_active_broker_interval=3600), clock=clock) as ns:
        b = FakeBroker()
        b.topics = {"Alive": TopicConfig("Alive")}
        try:
            await b.register(ns.address)
            clock.advance(100)
            await b.register(ns.address)  # heartbeat, same data version
            clock.advance(100)
            assert ns.scan_not_active_broker() == []
            assert await has_route(client, ns.address, "Alive")
            clock.advance(21)
            assert ns.scan_not_active_broker() == ["127.0.0.1:10911"]
            assert not await has_route(client, ns.address, "Alive")
        finally:
            await b.close()


async def test_two_name_servers_hold_the_route_independently(
    broker: FakeBroker, client: RemotingClient
) -> None:
    async with NamesrvController(config()) as ns1, NamesrvController(config()) as ns2:
        for ns in (ns1, ns2):
            assert (await broker.register(ns.address)).code == ResponseCode.SUCCESS
        for ns in (ns1, ns2):
            route = decode_body((await get_route(client, ns.address, "TopicTest")).body, TopicRouteData)
            assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
        unregister = UnRegisterBrokerRequestHeader("broker-a", "127.0.0.1:10911", CLUSTER, 0)
        resp = await broker.client.invoke(
            ns1.address, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, unregister), GUARD
        )
        assert resp.code == ResponseCode.SUCCESS
        assert not await has_route(client, ns1.address, "TopicTest")
        assert await has_route(client, ns2.address, "TopicTest")


async def test_unknown_request_code_is_not_supported(
    namesrv: NamesrvController, client: RemotingClient
) -> None:
    for code in (RequestCode.REGISTER_FILTER_SERVER, 4242):
        resp = await client.invoke(namesrv.address, RemotingCommand.request(code), GUARD)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED == 3
        assert resp.remark == f" request type {int(code)} not supported"


async def test_malformed_frame_closes_only_that_connection(
    namesrv: NamesrvController, broker: FakeBroker, client: RemotingClient
) -> None:
    await broker.register(namesrv.address)
    reader, writer = await asyncio.open_connection(*parse_address(namesrv.address))
    payload = msgpack.packb(
        {"code": RequestCode.GET_ROUTEINFO_BY_TOPIC, "opaque": 5, "extFields": {"t": [1]}}
    )
    writer.write(struct.pack(">I", len(payload)) + payload)
    data = await asyncio.wait_for(reader.read(), GUARD)  # everything until the server closes
    (resp,) = decode_frames(data)
    assert (resp.code, resp.opaque) == (ResponseCode.SYSTEM_ERROR, 5)
    writer.close()
    assert not (await broker.client.get_channel(namesrv.address)).closed
    assert await has_route(client, namesrv.address, "TopicTest")  # the broker's registration is untouched
    assert (await broker.register(namesrv.address)).code == ResponseCode.SUCCESS


async def test_bad_header_is_a_system_error_naming_the_field(
    namesrv: NamesrvController, client: RemotingClient
) -> None:
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, {"brokerAddr": "1.2.3.4:10911"})
    resp = await client.invoke(namesrv.address, req, GUARD)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "brokerName" in resp.remark
    route_req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": 12})
    resp = await client.invoke(namesrv.address, route_req, GUARD)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "topic" in resp.remark


async def test_compressed_body_and_crc_check(namesrv: NamesrvController, broker: FakeBroker, client) -> None:
    bad = await broker.register(namesrv.address, crc=12345)
    assert bad.code == ResponseCode.SYSTEM_ERROR and "crc32" in bad.remark
    assert not await has_route(client, namesrv.address, "TopicTest")
    ok = await broker.register(namesrv.address, compressed=True)
    assert ok.code == ResponseCode.SUCCESS
    assert await has_route(client, namesrv.address, "TopicTest")


async def test_cluster_info_topic_list_and_delete_topic(
    namesrv: NamesrvController, broker: FakeBroker, client: RemotingClient
) -> None:
    broker.topics["Second"] = TopicConfig("Second")
    await broker.register(namesrv.address)
    resp = await client.invoke(
        namesrv.address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), GUARD
    )
    info = decode_body(resp.body, ClusterInfo)
    assert info.cluster_addr_table == {CLUSTER: {"broker-a"}}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "127.0.0.1:10911"}
    list_req = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    topics = decode_body((await client.invoke(namesrv.address, list_req, GUARD)).body, TopicList)
    assert topics.topic_list == ["Second", "TopicTest"]
    delete = RemotingCommand.request(
        RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("Second")
    )
    assert (await client.invoke(namesrv.address, delete, GUARD)).code == ResponseCode.SUCCESS
    assert not await has_route(client, namesrv.address, "Second")
    assert await has_route(client, namesrv.address, "TopicTest")


async def test_query_data_version(namesrv: NamesrvController, broker: FakeBroker) -> None:
    await broker.register(namesrv.address)

    async def query(version: DataVersion) -> RemotingCommand:
        header = QueryDataVersionRequestHeader("broker-a", "127.0.0.1:10911", CLUSTER, 0)
        req = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, header, encode_body(version))
        return await broker.client.invoke(namesrv.address, req, GUARD)

    same = await query(DataVersion(1, 1))
    assert same.decode_header(QueryDataVersionResponseHeader).changed is False
    assert decode_body(same.body, DataVersion) == DataVersion(1, 1)
    newer = await query(DataVersion(2, 2))
    assert newer.decode_header(QueryDataVersionResponseHeader).changed is True


def test_runs_on_uvloop() -> None:
    async def scenario() -> int:
        async with NamesrvController(config()) as ns:
            assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
            b = FakeBroker()
            b.topics = {"U": TopicConfig("U")}
            try:
                await b.register(ns.address)
                return (await get_route(b.client, ns.address, "U")).code
            finally:
                await b.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(scenario()) == ResponseCode.SUCCESS


async def test_a_5x_broker_s_heartbeat_keeps_it_alive_between_registrations(clock, client: RemotingClient) -> None:
    """BROKER_HEARTBEAT (904): a RocketMQ 5 broker that registered with heartbeatTimeoutMillis sends it every
    second instead of registering; the name server counts it as alive (DefaultRequestProcessor.brokerHeartbeat)."""
    async with NamesrvController(config(scan_not_active_broker_interval=3600), clock=clock) as ns:
        b = FakeBroker()
        b.topics = {"Beating": TopicConfig("Beating")}
        try:
            await b.register(ns.address)
            beat = RemotingCommand.request(RequestCode.BROKER_HEARTBEAT, BrokerHeartbeatRequestHeader(
                CLUSTER, b.addr, b.name, 0))
            for _ in range(3):
                clock.advance(100)
                assert (await b.client.invoke(ns.address, beat, GUARD)).code == ResponseCode.SUCCESS
            assert ns.scan_not_active_broker() == []
            assert await has_route(client, ns.address, "Beating")
        finally:
            await b.close()


async def test_a_delete_with_an_empty_cluster_name_deletes_everywhere(
    namesrv: NamesrvController, broker: FakeBroker, client: RemotingClient
) -> None:
    await broker.register(namesrv.address)
    delete = RemotingCommand.request(
        RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicTest", ""))
    assert (await client.invoke(namesrv.address, delete, GUARD)).code == ResponseCode.SUCCESS
    assert not await has_route(client, namesrv.address, "TopicTest")


async def test_unit_topic_lists_go_by_the_topic_sys_flag(
    namesrv: NamesrvController, broker: FakeBroker, client: RemotingClient
) -> None:
    """GET_UNIT_TOPIC_LIST, GET_HAS_UNIT_SUB_TOPIC_LIST, GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (RouteInfoManager's
    getUnitTopics, getHasUnitSubTopicList, getHasUnitSubUnUnitTopicList)."""
    for name, flag in (("Plain", 0), ("Unit", 1), ("UnitSub", 2), ("Both", 3)):
        broker.topics[name] = TopicConfig(name, topic_sys_flag=flag)
    await broker.register(namesrv.address)

    async def topics(code: int) -> list[str]:
        resp = await client.invoke(namesrv.address, RemotingCommand.request(code), GUARD)
        assert resp.code == ResponseCode.SUCCESS
        return decode_body(resp.body, TopicList).topic_list

    assert await topics(RequestCode.GET_UNIT_TOPIC_LIST) == ["Both", "Unit"]
    assert await topics(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST) == ["Both", "UnitSub"]
    assert await topics(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST) == ["UnitSub"]


async def test_a_registration_without_a_data_version_is_always_a_change(
    namesrv: NamesrvController, client: RemotingClient
) -> None:
    """A wrapper without dataVersion is Java's new DataVersion(), stamped now: a second such registration with
    other queue counts is applied (it was (0, 0) both times, so taken for unchanged)."""
    b = FakeBroker()
    try:
        for queues in (4, 8):
            body = encode_body({"topicConfigSerializeWrapper": {"topicConfigTable": {"NV": TopicConfig(
                "NV", queues, queues).to_dict()}}, "filterServerList": []})
            header = RegisterBrokerRequestHeader(broker_name=b.name, broker_addr=b.addr, cluster_name=CLUSTER,
                                                 ha_server_addr=b.addr, broker_id=0, compressed=False,
                                                 body_crc32=body_crc32(body))
            resp = await b.client.invoke(namesrv.address, RemotingCommand.request(
                RequestCode.REGISTER_BROKER, header, body), GUARD)
            assert resp.code == ResponseCode.SUCCESS
            await asyncio.sleep(0.002)  # (the next version's timestamp is a later millisecond)
        route = decode_body((await get_route(client, namesrv.address, "NV")).body, TopicRouteData)
        assert route.queue_datas[0].write_queue_nums == 8
    finally:
        await b.close()


async def test_closing_a_connection_of_thousands_of_brokers_drops_them_all(
    namesrv: NamesrvController, client: RemotingClient
) -> None:
    """Every broker registered over one connection goes when it closes, with its topics; another cluster's stay
    (the tables are walked once for all of them)."""
    many = RemotingClient()
    keep = FakeBroker("keeper", addr="127.0.0.2:10911")
    keep.topics = {"Kept": TopicConfig("Kept")}
    await keep.register(namesrv.address)
    try:
        for i in range(300):
            b = FakeBroker(f"b{i}", addr=f"127.0.1.{i % 250}:{10000 + i}")
            b.client, b.topics = many, {f"T{i}": TopicConfig(f"T{i}"), "Shared": TopicConfig("Shared")}
            assert (await b.register(namesrv.address)).code == ResponseCode.SUCCESS
        assert await has_route(client, namesrv.address, "Shared")
    finally:
        await many.close()
    await wait_for_route(client, namesrv.address, "Shared", present=False)
    rim = namesrv.route_info_manager
    assert set(rim.broker_addr_table) == {"keeper"} and rim.cluster_addr_table == {CLUSTER: {"keeper"}}
    assert set(rim.topic_queue_table) == {"Kept"} and list(rim.broker_live_table) == ["127.0.0.2:10911"]
    await keep.close()
