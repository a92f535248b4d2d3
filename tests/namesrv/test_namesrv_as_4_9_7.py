"""Name-server answers the differential fuzzing against Apache RocketMQ 4.9.7 found different
(tests/apache/test_differential_fuzz_namesrv.py), each as 4.9.7 gives it, over a real socket in RocketMQ's native
protocol (JSON bodies, as a Java broker and mqadmin send them)."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.body import body_crc32
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol

GUARD = 5.0
BROKER = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster",
          "haServerAddr": "10.0.0.1:10912", "brokerId": "0"}


@pytest.fixture
async def namesrv() -> AsyncIterator[tuple[RemotingClient, str]]:
    controller = NamesrvController(NamesrvConfig(listen_port=0))
    await controller.start()
    async with RemotingClient(wire_protocol=WireProtocol.NATIVE) as client:
        yield client, controller.address
    await controller.shutdown()


async def ask(namesrv: tuple[RemotingClient, str], code: int, ext: dict[str, str] | None = None,
              body: bytes | None = None) -> RemotingCommand:
    client, addr = namesrv
    return await client.invoke(addr, RemotingCommand.request(code, ext or {}, body), GUARD)


def json_body(table: dict[str, dict[str, Any]], version: tuple[int, int] = (1, 1)) -> bytes:
    wrapper = {"topicConfigTable": table, "dataVersion": {"timestamp": version[0], "counter": version[1]}}
    return json.dumps({"topicConfigSerializeWrapper": wrapper, "filterServerList": []}).encode()


def compressed_body(lines: list[str], filter_servers: bytes) -> bytes:
    def part(blob: bytes) -> bytes:
        return struct.pack(">i", len(blob)) + blob
    raw = (part(b'{"timestamp":1,"counter":1}') + struct.pack(">i", len(lines))
           + b"".join(part(line.encode()) for line in lines) + part(filter_servers))
    return zlib.compress(raw)


def topic(name: str, sys_flag: int = 0) -> dict[str, Any]:
    return {"topicName": name, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": sys_flag}


async def test_a_bad_crc_is_4_9_7s_remark_and_checked_before_a_broker_id_that_does_not_parse(namesrv) -> None:
    body = json_body({"T": topic("T")})
    bad_crc = await ask(namesrv, RequestCode.REGISTER_BROKER, {**BROKER, "brokerId": "x",
                                                               "bodyCrc32": str(body_crc32(body) ^ 1)}, body)
    assert (bad_crc.code, bad_crc.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    good_crc = await ask(namesrv, RequestCode.REGISTER_BROKER, {**BROKER, "brokerId": "x",
                                                                "bodyCrc32": str(body_crc32(body))}, body)
    assert good_crc.code == ResponseCode.SYSTEM_ERROR and "brokerId" in good_crc.remark


async def test_properties_that_do_not_parse_are_4_9_7s_remark(namesrv) -> None:
    answer = await ask(namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"a=\\u12")
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")


async def test_a_topic_registers_under_the_name_its_config_holds_not_its_key(namesrv) -> None:
    registered = await ask(namesrv, RequestCode.REGISTER_BROKER, BROKER, json_body({"Key": topic("Named")}))
    assert registered.code == ResponseCode.SUCCESS
    assert (await ask(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Named"})).code == ResponseCode.SUCCESS
    missing = await ask(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Key"})
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_compressed_topics_numbers_are_read_as_integer_parse_int(namesrv) -> None:
    ext = {**BROKER, "compressed": "true"}
    for line in ("T 1_0 4 6 SINGLE_TAG", "T 4 2147483648 6 SINGLE_TAG"):
        refused = await ask(namesrv, RequestCode.REGISTER_BROKER, ext, compressed_body([line], b"[]"))
        assert refused.code == ResponseCode.SYSTEM_ERROR, line
    taken = await ask(namesrv, RequestCode.REGISTER_BROKER, ext, compressed_body(["T +4 4 6 SINGLE_TAG"], b"[]"))
    assert taken.code == ResponseCode.SUCCESS


async def filter_servers(namesrv) -> dict[str, list[str]]:
    route = await ask(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    table: dict[str, list[str]] = json.loads(route.body)["filterServerTable"]
    return table


async def test_compressed_filter_servers_of_null_change_nothing_and_of_no_list_are_none(namesrv) -> None:
    ext = {**BROKER, "compressed": "true"}
    lines = ["T 4 4 6 SINGLE_TAG"]
    assert (await ask(namesrv, RequestCode.REGISTER_BROKER, ext,
                      compressed_body(lines, b'["10.0.0.9:1"]'))).code == ResponseCode.SUCCESS
    assert await filter_servers(namesrv) == {"10.0.0.1:10911": ["10.0.0.9:1"]}
    for kept in (b"null", b""):
        assert (await ask(namesrv, RequestCode.REGISTER_BROKER, ext,
                          compressed_body(lines, kept))).code == ResponseCode.SUCCESS
        assert await filter_servers(namesrv) == {"10.0.0.1:10911": ["10.0.0.9:1"]}, kept
    # 4.9.7 logs the JSON it cannot read and registers the broker with no filter servers
    assert (await ask(namesrv, RequestCode.REGISTER_BROKER, ext,
                      compressed_body(lines, b"x"))).code == ResponseCode.SUCCESS
    assert await filter_servers(namesrv) == {}


async def test_a_data_version_without_its_timestamp_is_one_of_now(namesrv) -> None:
    # Registered with no body: version 0, 0. A version asked without its timestamp is Java's DataVersion of now.
    assert (await ask(namesrv, RequestCode.REGISTER_BROKER, BROKER)).code == ResponseCode.SUCCESS
    query = {k: BROKER[k] for k in ("brokerName", "brokerAddr", "clusterName", "brokerId")}
    same = await ask(namesrv, RequestCode.QUERY_DATA_VERSION, query, b'{"timestamp":0,"counter":0}')
    assert same.ext_fields["changed"] == "false"
    asked = await ask(namesrv, RequestCode.QUERY_DATA_VERSION, query, b"{}")
    assert asked.code == ResponseCode.SUCCESS and asked.ext_fields["changed"] == "true"


async def test_unit_lists_read_a_topics_first_queue_data_in_4_9_7s_hash_map_order(namesrv) -> None:
    # broker-b comes before broker-a in a java.util.HashMap (their hashes' buckets), whatever the order put: the
    # topic's first queue data is broker-b's, not a unit topic's, though broker-a registered it first as one
    unit = await ask(namesrv, RequestCode.REGISTER_BROKER, {**BROKER, "brokerName": "broker-a"},
                     json_body({"U": topic("U", sys_flag=1)}))
    plain = await ask(namesrv, RequestCode.REGISTER_BROKER, {**BROKER, "brokerName": "broker-b",
                                                             "brokerAddr": "10.0.0.2:10911"},
                      json_body({"U": topic("U", sys_flag=0)}))
    assert unit.code == plain.code == ResponseCode.SUCCESS
    listed = await ask(namesrv, RequestCode.GET_UNIT_TOPIC_LIST)
    assert json.loads(listed.body)["topicList"] == []
