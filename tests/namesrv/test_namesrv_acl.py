"""A name server with a plain ACL file, over real sockets: route changes (REGISTER_BROKER, UNREGISTER_BROKER,
DELETE_TOPIC_IN_NAMESRV) need an admin's signature, so an anonymous impostor cannot take over a broker's route;
route reads stay open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pocketmq.broker import BrokerConfig, BrokerController
from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.acl import AclClientRPCHook, SessionCredentials
from pocketmq.remoting.body import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
    body_crc32,
    decode_body,
)
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
)

GUARD = 5.0
ACL_YAML = """\
accounts:
  - accessKey: brokerAdmin
    secretKey: brokerSecret
    admin: true
  - accessKey: appUser1
    secretKey: appSecret1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""
BROKER_ADMIN = SessionCredentials("brokerAdmin", "brokerSecret")
APP_USER = SessionCredentials("appUser1", "appSecret1")


@pytest.fixture
def acl_path(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL_YAML)
    return path


@pytest.fixture
async def namesrv(acl_path: Path) -> AsyncIterator[NamesrvController]:
    async with NamesrvController(NamesrvConfig(listen_port=0, acl_file=str(acl_path))) as ns:
        yield ns


@pytest.fixture
async def clients() -> AsyncIterator[dict[str, RemotingClient]]:
    made = {name: RemotingClient() for name in ("anonymous", "admin", "user")}
    made["admin"].rpc_hook = AclClientRPCHook(BROKER_ADMIN)
    made["user"].rpc_hook = AclClientRPCHook(APP_USER)
    yield made
    for c in made.values():
        await c.close()


def register_request(broker_addr: str, topic: str = "TopicA") -> RemotingCommand:
    wrapper = TopicConfigSerializeWrapper({topic: TopicConfig(topic, 4, 4, 6)}, DataVersion(timestamp=1, counter=1))
    body = RegisterBrokerBody(wrapper).encode(False)
    header = RegisterBrokerRequestHeader(broker_name="broker-a", broker_addr=broker_addr, cluster_name="DefaultCluster",
                                         ha_server_addr="", broker_id=0, compressed=False, body_crc32=body_crc32(body))
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)


async def route_addrs(client: RemotingClient, namesrv: str, topic: str = "TopicA") -> list[str]:
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
    response = await client.invoke(namesrv, request, GUARD)
    if response.code != ResponseCode.SUCCESS:
        return []
    route = decode_body(response.body, TopicRouteData)
    return [addr for bd in route.broker_datas for addr in bd.broker_addrs.values()]


async def test_an_unsigned_impostor_cannot_take_over_a_route(namesrv, clients) -> None:
    admin, anonymous = clients["admin"], clients["anonymous"]
    assert (await admin.invoke(namesrv.address, register_request("10.0.0.1:10911"), GUARD)).code == 0
    impostor = await anonymous.invoke(namesrv.address, register_request("10.6.6.6:10911"), GUARD)
    assert impostor.code == ResponseCode.NO_PERMISSION
    assert "No accessKey is configured" in (impostor.remark or "") and "request code 103" in impostor.remark
    # Reads are open to anyone, and they still show the real master.
    assert await route_addrs(anonymous, namesrv.address) == ["10.0.0.1:10911"]


async def test_a_signed_non_admin_cannot_register_or_delete(namesrv, clients) -> None:
    admin, user = clients["admin"], clients["user"]
    assert (await admin.invoke(namesrv.address, register_request("10.0.0.1:10911"), GUARD)).code == 0
    refused = await user.invoke(namesrv.address, register_request("10.6.6.6:10911"), GUARD)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert "Need admin permission for request code=103, but accessKey=appUser1 is not" in (refused.remark or "")
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicA"))
    assert (await user.invoke(namesrv.address, delete, GUARD)).code == ResponseCode.NO_PERMISSION
    assert await route_addrs(user, namesrv.address) == ["10.0.0.1:10911"]


async def test_unsigned_unregister_and_delete_are_refused(namesrv, clients) -> None:
    admin, anonymous = clients["admin"], clients["anonymous"]
    assert (await admin.invoke(namesrv.address, register_request("10.0.0.1:10911"), GUARD)).code == 0
    unregister = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, UnRegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="10.0.0.1:10911", cluster_name="DefaultCluster", broker_id=0))
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicA"))
    for request in (unregister, delete):
        response = await anonymous.invoke(namesrv.address, request, GUARD)
        assert response.code == ResponseCode.NO_PERMISSION, response
    assert await route_addrs(anonymous, namesrv.address) == ["10.0.0.1:10911"]
    # The admin may.
    assert (await admin.invoke(namesrv.address, delete, GUARD)).code == ResponseCode.SUCCESS
    assert await route_addrs(anonymous, namesrv.address) == []


async def test_a_broker_signs_its_registration_with_its_account(namesrv, tmp_path) -> None:
    def config(name: str, **acl: str) -> BrokerConfig:
        return BrokerConfig(store_path_root_dir=str(tmp_path / name), listen_port=0, namesrv_addr=namesrv.address,
                            mapped_file_size_commit_log=1024 * 1024, mapped_file_size_consume_queue=20_000,
                            max_hash_slot_num=64, max_index_num=256, broker_name=name, **acl)

    async with BrokerController(config("broker-a", access_key="brokerAdmin", secret_key="brokerSecret")) as good:
        assert [r.ok for r in good.registration.last_results] == [True]
        assert good.broker_config.broker_name in namesrv.route_info_manager.broker_addr_table
        async with BrokerController(config("broker-b")) as unsigned:
            [result] = unsigned.registration.last_results
            assert not result.ok and "code 16" in (result.error or "") and "No accessKey" in (result.error or "")
            assert "broker-b" not in namesrv.route_info_manager.broker_addr_table
