"""The bodies in fastjson's dialects (BodyDialect): what Java writes and the other clients send, read and written
as fastjson reads and writes them, fastjson's casts, and the dialect each command and name server picks."""

from __future__ import annotations

import base64
import json
from typing import Any

import msgpack
import pytest

from pocketmq.remoting.body import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    Reader,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    decode_body,
    encode_body,
    topic_route_body_dialect,
)
from pocketmq.remoting.client_body import (
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
)
from pocketmq.remoting.codes import BodyDialect, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError
from pocketmq.remoting.fastjson import JsonObject

FASTJSON, STANDARD = BodyDialect.FASTJSON, BodyDialect.STANDARD_JSON

# --- bodies in the JSON dialects ---------------------------------------------------------------------------------


def route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData("broker-a", 4, 4, 6, 0)],
        broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "127.0.0.1:10911"})],
    )


def test_route_data_is_what_java_writes() -> None:
    # native-protocol.md §6, without the optional orderTopicConf.
    assert encode_body(route(), FASTJSON) == (
        b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    standard = encode_body(route(), STANDARD)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in standard
    for data in (encode_body(route(), FASTJSON), standard):
        assert decode_body(data, TopicRouteData, FASTJSON) == route()
    with pytest.raises(json.JSONDecodeError):
        json.loads(encode_body(route(), FASTJSON))  # not JSON for a strict parser: why new clients ask


def test_heartbeat_is_what_java_writes() -> None:
    heartbeat = HeartbeatData(
        client_id="192.168.0.5@12345",
        producer_data_set=[ProducerData("pg"), ProducerData("CLIENT_INNER_PRODUCER")],
        consumer_data_set=[ConsumerData("g", subscription_data_set=[SubscriptionData("T", sub_version=1700000000000)])],
    )
    assert encode_body(heartbeat, FASTJSON) == (
        b'{"clientID":"192.168.0.5@12345",'
        b'"consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY",'
        b'"groupName":"g","messageModel":"CLUSTERING",'
        b'"subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
        b'"subVersion":1700000000000,"tagsSet":[],"topic":"T"}],'
        b'"unitMode":false}],'
        b'"producerDataSet":[{"groupName":"pg"},{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    assert decode_body(encode_body(heartbeat, FASTJSON), HeartbeatData, FASTJSON) == heartbeat


def test_the_cpp_clients_heartbeat_reads() -> None:
    # native-protocol.md §6: enum ordinals, subVersion as a string, fields left out, a trailing newline.
    data = (
        b'{"clientID":"7209-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,'
        b'"groupName":"g","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1795588180624",'
        b'"topic":"T"},{"subString":"*","subVersion":"1795588180625","topic":"%RETRY%g"}]}]}\n'
    )
    heartbeat = decode_body(data, HeartbeatData, FASTJSON)
    assert heartbeat.client_id == "7209-127.0.0.1@DEFAULT" and heartbeat.producer_data_set == []
    (consumer,) = heartbeat.consumer_data_set
    assert (consumer.consume_type, consumer.message_model, consumer.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
    )  # fmt: skip
    assert [s.sub_version for s in consumer.subscription_data_set] == [1795588180624, 1795588180625]
    assert consumer.subscription_data_set[0].expression_type == "TAG" and consumer.unit_mode is False
    # Every ConsumeFromWhere ordinal of 4.9.8, the deprecated ones included.
    wheres = [
        decode_body(b'{"groupName":"g","consumeFromWhere":%d}' % i, ConsumerData, FASTJSON).consume_from_where
        for i in range(6)
    ]
    assert wheres[0] == "CONSUME_FROM_LAST_OFFSET"
    assert wheres[4:] == ["CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"]


def test_the_ali_ons_producer_heartbeat_reads() -> None:
    data = b'{"clientID":"10.0.0.1@4242","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[]}'
    heartbeat = decode_body(data, HeartbeatData, FASTJSON)
    assert heartbeat == HeartbeatData("10.0.0.1@4242", [ProducerData("PG")], [])


def test_java_casts_apply_to_json_only() -> None:
    loose = {"groupName": "g", "consumeType": 0, "unitMode": "true"}
    assert decode_body(json.dumps(loose).encode(), ConsumerData, FASTJSON).consume_type == "CONSUME_ACTIVELY"
    with pytest.raises(BodyError, match="consumeType"):  # msgpack keeps the exact types
        decode_body(msgpack.packb(loose), ConsumerData)
    with pytest.raises(BodyError, match="subVersion"):
        SubscriptionData.from_dict({"topic": "T", "subVersion": "17"})
    with pytest.raises(BodyError, match="consumeType"):
        decode_body(b'{"groupName":"g","consumeType":2}', ConsumerData, FASTJSON)  # no such ordinal
    with pytest.raises(BodyError, match=r"codeSet\[1\]"):
        decode_body(b'{"topic":"T","codeSet":[1,"x"]}', SubscriptionData, FASTJSON)
    assert decode_body(b'{"topic":"T","codeSet":[1,"-2"]}', SubscriptionData, FASTJSON).code_set == [1, -2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("T", True), ("y", True), ("TRUE", True), (1, True), (0, False), (2, False), ("0", False),
     ("N", False), ("F", False), ("f", False), (False, False), (1.5, True), (2.0, False), (4294967297.0, True)],
)  # fmt: skip
def test_json_booleans_cast_as_fastjson_casts_them(value: object, expected: bool) -> None:
    assert Reader(JsonObject(x=value)).bool("x") is expected


def test_reader_casts() -> None:
    raw = base64.b64encode(b"\x00\x01").decode()
    r = Reader(JsonObject(s=5, f=1.5, b=True, i="-12", fi=3.0, bad="1.5", e=1, raw=raw))
    assert (r.str("s"), r.str("f"), r.str("b")) == ("5", "1.5", "true")
    assert (r.int("i"), r.int("fi")) == (-12, 3)
    with pytest.raises(BodyError, match="bad"):
        r.int("bad")
    assert r.enum("e", ("A", "B")) == "B"
    assert r.bytes("raw") == b"\x00\x01"
    with pytest.raises(BodyError, match="base64"):
        Reader(JsonObject(raw="***")).bytes("raw")
    assert Reader({"raw": b"\x02"}).bytes("raw") == b"\x02"
    with pytest.raises(BodyError, match="expected bytes"):
        Reader({"raw": "AA=="}).bytes("raw")


def sample_bodies() -> list[object]:
    mqs = {MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)}
    return [
        route(),
        TopicRouteData(route().queue_datas, [BrokerData("c", "b", {0: "a:1", 1: "a:2"})], {"a:1": ["f:1"]}, "conf"),
        ClusterInfo({"b": BrokerData("c", "b", {0: "a:1"})}, {"c": {"b", "b2"}}),
        TopicList(["T1", "T2"], "a:1"),
        DataVersion(1700000000000, 3),
        TopicConfigSerializeWrapper(
            {"T": TopicConfig("T", order=True, topic_filter_type="MULTI_TAG")}, DataVersion(1, 2)
        ),
        RegisterBrokerBody(TopicConfigSerializeWrapper({"T": TopicConfig("T")}, DataVersion(5, 6)), ["f:1"]),
        HeartbeatData("id", [ProducerData("p")], [ConsumerData(
            "g", "CONSUME_ACTIVELY", "BROADCASTING", "CONSUME_FROM_TIMESTAMP",
            [SubscriptionData("T", "a || b", ["a", "b"], [97, 98], 7, "TAG")], True,
        )]),
        LockBatchRequestBody("g", "id", mqs),
        LockBatchResponseBody(mqs),
        GetConsumerListByGroupResponseBody(["c1", "c2"]),
        SubscriptionGroupConfig("g", consume_enable=False, retry_max_times=3),
    ]  # fmt: skip


@pytest.mark.parametrize("dialect", [FASTJSON, STANDARD])
@pytest.mark.parametrize("body", sample_bodies(), ids=lambda b: type(b).__name__)
def test_every_body_class_round_trips_in_the_json_dialects(body: Any, dialect: BodyDialect) -> None:
    data = encode_body(body, dialect)
    assert decode_body(data, type(body), FASTJSON) == body
    assert decode_body(data, type(body), dialect) == body  # a reader takes both dialects alike
    if dialect is STANDARD:
        json.loads(data)


def test_the_command_picks_its_body_dialect() -> None:
    native = RemotingCommand(code=105, opaque=1, serialize_type=SerializeType.ROCKETMQ)
    assert native.encode_body(route()) == encode_body(route(), FASTJSON)
    msgpack_cmd = RemotingCommand(code=105, opaque=1)
    assert msgpack_cmd.encode_body(route()) == encode_body(route())
    response = RemotingCommand.response_to(native, body=native.encode_body(route()))
    assert response.decode_body(TopicRouteData) == route()
    assert response.decode_body()["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}


def test_bad_json_bodies() -> None:
    with pytest.raises(BodyError, match="undecodable JSON"):
        decode_body(b'{"clientID":', HeartbeatData, FASTJSON)
    with pytest.raises(BodyError, match="missing"):
        decode_body(None, HeartbeatData, FASTJSON)
    with pytest.raises(BodyError, match="consumerDataSet"):
        decode_body(b'{"clientID": "c", "consumerDataSet": 2}', HeartbeatData, FASTJSON)


def test_a_json_object_or_array_where_a_string_goes_is_its_text_as_fastjson_reads_it() -> None:
    # (fastjson's StringCodec takes any value for a String field, as the value's toString(); 4.9.7's broker answers
    # a CHECK_CLIENT_CONFIG or a LOCK_BATCH_MQ whose clientId or group is one)
    assert decode_body(b'{"clientID": []}', HeartbeatData, FASTJSON).client_id == "[]"
    text = decode_body(b'{"clientID": {"a": [1, null, "x"]}}', HeartbeatData, FASTJSON).client_id
    assert text == '{"a":[1,null,"x"]}'
    with pytest.raises(BodyError, match="clientID"):
        decode_body(msgpack.packb({"clientID": []}), HeartbeatData)  # (msgpack holds exact types)


@pytest.mark.parametrize(
    ("dialect", "version", "asked", "expected"),
    [
        (FASTJSON, 63, False, FASTJSON),  # the C++ client
        (FASTJSON, 121, False, FASTJSON),  # ali-ons
        (FASTJSON, 400, True, STANDARD),
        (FASTJSON, 401, False, STANDARD),  # V4_9_4
        (FASTJSON, 409, False, STANDARD),
        (BodyDialect.MSGPACK, 409, True, BodyDialect.MSGPACK),  # pocketmq's own frames stay msgpack
    ],
)
def test_route_dialect_follows_the_name_server_of_4_9_8(
    dialect: BodyDialect, version: int, asked: bool, expected: BodyDialect
) -> None:
    assert topic_route_body_dialect(dialect, version, asked) is expected
