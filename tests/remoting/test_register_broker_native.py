"""RegisterBrokerBody in RocketMQ's encodings: its JSON, and its compressed form (register_broker_native).

The layouts are RocketMQ's RegisterBrokerBody.encode(compress)/decode, 4.9.x and 5.x; the servers themselves read
and write them in tests/apache/test_mixed_cluster.py.
"""

from __future__ import annotations

import struct
import zlib

import pytest

from pocketmq.remoting import fastjson
from pocketmq.remoting.body import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from pocketmq.remoting.codes import BodyDialect
from pocketmq.remoting.errors import BodyError
from pocketmq.remoting.register_broker_native import decode_compressed, encode_compressed


def blob(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def java_compressed(topics: list[str], version: bytes, servers: bytes = b"[]", tail: bytes = b"") -> bytes:
    """What RocketMQ's broker sends (``tail``: 5.x's queue-mapping section)."""
    raw = blob(version) + struct.pack(">i", len(topics)) + b"".join(blob(t.encode()) for t in topics)
    return zlib.compress(raw + blob(servers) + tail, 9)


def body(*topics: TopicConfig) -> RegisterBrokerBody:
    return RegisterBrokerBody(
        TopicConfigSerializeWrapper({t.topic_name: t for t in topics}, DataVersion(1700000000123, 7)),
        filter_server_list=["127.0.0.1:9999"],
    )


def test_compressed_round_trip_keeps_what_the_text_form_carries() -> None:
    sent = body(TopicConfig("A", 4, 2, 6, "MULTI_TAG", topic_sys_flag=1, order=True), TopicConfig("B", 1, 1, 4))
    got = RegisterBrokerBody.decode(sent.encode(True, BodyDialect.FASTJSON), True, dialect=BodyDialect.FASTJSON)
    assert got.topic_config_serialize_wrapper.data_version == DataVersion(1700000000123, 7)
    assert got.filter_server_list == ["127.0.0.1:9999"]
    # topicSysFlag and order are not in RocketMQ's text form: they arrive as 0 and false, as in RocketMQ.
    assert got.topic_config_serialize_wrapper.topic_config_table == {
        "A": TopicConfig("A", 4, 2, 6, "MULTI_TAG"), "B": TopicConfig("B", 1, 1, 4)}


def test_compressed_form_is_rocketmqs_layout_with_five_fields_a_topic() -> None:
    raw = zlib.decompress(encode_compressed({"timestamp": 5, "counter": 2}, [("T", 3, 3, 6, "SINGLE_TAG")], []))
    version = fastjson.dumps({"timestamp": 5, "counter": 2}).encode()
    # 4.9.x's TopicConfig.decode takes exactly five space-separated fields: no attributes are written.
    assert raw == blob(version) + struct.pack(">i", 1) + blob(b"T 3 3 6 SINGLE_TAG") + blob(b"[]")


def test_reads_a_5x_broker_body_with_attributes_and_queue_mappings() -> None:
    data = java_compressed(["T 8 8 6 SINGLE_TAG {\"+message.type\":\"NORMAL\"}"],
                           b'{"counter":3,"stateVersion":0,"timestamp":99}', tail=struct.pack(">i", 0))
    got = RegisterBrokerBody.decode(data, True, dialect=BodyDialect.FASTJSON)
    assert got.topic_config_serialize_wrapper.topic_config_table == {"T": TopicConfig("T", 8, 8, 6)}
    assert got.topic_config_serialize_wrapper.data_version == DataVersion(99, 3)


def test_reads_rocketmqs_json_body_with_5x_fields() -> None:
    text = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"stateVersion":0,'
            b'"timestamp":1},"mappingDataVersion":{"counter":0,"timestamp":1},"topicConfigTable":{"T":{"attributes":'
            b'{},"order":true,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"T",'
            b'"topicSysFlag":0,"writeQueueNums":2}},"topicQueueMappingInfoMap":{}}}')
    got = RegisterBrokerBody.decode(text, False, dialect=BodyDialect.FASTJSON)
    assert got.topic_config_serialize_wrapper.topic_config_table == {"T": TopicConfig("T", 2, 2, 6, order=True)}
    assert RegisterBrokerBody.decode(body(TopicConfig("X")).encode(False, BodyDialect.FASTJSON), False,
                                     dialect=BodyDialect.FASTJSON) == body(TopicConfig("X"))


@pytest.mark.parametrize("data, where", [
    (java_compressed(["T 8 8"], b'{"counter":1,"timestamp":1}'), "topicConfigTable[0]"),
    (java_compressed(["T x 8 6 SINGLE_TAG"], b'{"counter":1,"timestamp":1}'), "topicConfigTable[0]"),
    (java_compressed(["T 8 8 6 NO_SUCH"], b'{"counter":1,"timestamp":1}'), "topicConfigTable[0]"),
    (zlib.compress(blob(b'{"counter":1}') + struct.pack(">i", 5)), "topicConfigTable[0]"),
    (zlib.compress(struct.pack(">i", 1 << 30)), "dataVersion"),
    (zlib.compress(blob(b"{nope")), "dataVersion"),
], ids=["short", "not-a-number", "filter-type", "truncated", "huge-length", "bad-json"])
def test_malformed_compressed_bodies_are_body_errors(data: bytes, where: str) -> None:
    with pytest.raises(BodyError) as e:
        RegisterBrokerBody.decode(data, True, dialect=BodyDialect.FASTJSON)
    assert where in str(e.value)


def test_a_deflate_bomb_stops_at_the_limit() -> None:
    bomb = zlib.compress(blob(b"{}") + struct.pack(">i", 0) + blob(b"[" + b" " * 5_000_000 + b"]"))
    with pytest.raises(BodyError, match="compressed body"):
        decode_compressed(bomb, inflate_limit=1024 * 1024)
