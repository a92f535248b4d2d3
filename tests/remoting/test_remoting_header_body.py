"""Typed headers (ext fields) and body classes."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import zlib

import msgpack
import pytest

from pocketmq.remoting import header as h
from pocketmq.remoting.body import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    body_crc32,
    decode_body,
    encode_body,
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
from pocketmq.remoting.codes import BodyDialect, PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError, HeaderError
from pocketmq.remoting.group_retry_policy import (
    DEFAULT_NEXT,
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
)


def v1_header() -> h.SendMessageRequestHeader:
    return h.SendMessageRequestHeader(
        producer_group="PG",
        topic="TopicTest",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1_700_000_000_123,
        flag=0,
        properties="KEYS\x01k1\x02",
        reconsume_times=0,
        max_reconsume_times=16,
        broker_name="broker-a",
    )


def test_codes_match_rocketmq() -> None:
    expected = {
        "SEND_MESSAGE": 10, "PULL_MESSAGE": 11, "QUERY_MESSAGE": 12, "QUERY_CONSUMER_OFFSET": 14,
        "UPDATE_CONSUMER_OFFSET": 15, "UPDATE_AND_CREATE_TOPIC": 17, "GET_ALL_TOPIC_CONFIG": 21,
        "SEARCH_OFFSET_BY_TIMESTAMP": 29, "GET_MAX_OFFSET": 30, "GET_MIN_OFFSET": 31,
        "GET_EARLIEST_MSG_STORETIME": 32, "VIEW_MESSAGE_BY_ID": 33, "HEART_BEAT": 34, "UNREGISTER_CLIENT": 35,
        "CONSUMER_SEND_MSG_BACK": 36, "END_TRANSACTION": 37, "GET_CONSUMER_LIST_BY_GROUP": 38,
        "CHECK_TRANSACTION_STATE": 39, "NOTIFY_CONSUMER_IDS_CHANGED": 40, "LOCK_BATCH_MQ": 41,
        "UNLOCK_BATCH_MQ": 42, "GET_ALL_CONSUMER_OFFSET": 43, "GET_ALL_DELAY_OFFSET": 45,
        "REGISTER_BROKER": 103,
        "UNREGISTER_BROKER": 104, "GET_ROUTEINFO_BY_TOPIC": 105, "GET_BROKER_CLUSTER_INFO": 106,
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP": 200, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER": 206,
        "DELETE_TOPIC_IN_BROKER": 215, "DELETE_TOPIC_IN_NAMESRV": 216, "SEND_MESSAGE_V2": 310,
        "SEND_BATCH_MESSAGE": 320,
    }  # fmt: skip
    assert {name: RequestCode[name].value for name in expected} == expected
    sys_codes = (
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        ResponseCode.TOPIC_NOT_EXIST,
    )
    assert sys_codes == (1, 3, 17)
    assert (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED, ResponseCode.QUERY_NOT_FOUND) == (
        19,
        21,
        22,
    )
    assert PermName.perm_to_string(PermName.PERM_READ | PermName.PERM_WRITE) == "RW-"


def test_to_ext_uses_rocketmq_wire_names_and_omits_none() -> None:
    ext = h.PullMessageRequestHeader("CG", "T", 1, 100, 32, 0x3, 90, 15000, 7, subscription="*").to_ext()
    assert ext == {
        "consumerGroup": "CG",
        "topic": "T",
        "queueId": 1,
        "queueOffset": 100,
        "maxMsgNums": 32,
        "sysFlag": 3,
        "commitOffset": 90,
        "suspendTimeoutMillis": 15000,
        "subVersion": 7,
        "subscription": "*",
    }
    assert h.UnregisterClientRequestHeader(client_id="127.0.0.1@1").to_ext() == {"clientID": "127.0.0.1@1"}
    assert "bname" in v1_header().to_ext()
    assert h.RegisterBrokerRequestHeader("b", "1.2.3.4:10911", "c", "1.2.3.4:10912", 0).to_ext() == {
        "brokerName": "b",
        "brokerAddr": "1.2.3.4:10911",
        "clusterName": "c",
        "haServerAddr": "1.2.3.4:10912",
        "brokerId": 0,
        "compressed": False,
        "bodyCrc32": 0,
    }


def test_from_ext_accepts_the_strings_a_rocketmq_codec_sends() -> None:
    ext = {"consumerGroup": "CG", "topic": "T", "queueId": "-1", "commitOffset": "+42"}
    parsed = h.UpdateConsumerOffsetRequestHeader.from_ext(ext)
    assert (parsed.queue_id, parsed.commit_offset) == (-1, 42)
    cs = h.ConsumerSendMsgBackRequestHeader.from_ext(
        {"offset": "5", "group": "G", "delayLevel": "0", "unitMode": "TRUE"}
    )
    assert cs.unit_mode is True and cs.max_reconsume_times is None and cs.origin_topic is None
    assert (
        h.ConsumerSendMsgBackRequestHeader.from_ext({"offset": 5, "group": "G", "delayLevel": 0}).unit_mode
        is False
    )


@pytest.mark.parametrize(
    ("ext", "field", "reason"),
    [
        ({"topic": "T"}, "queueId", "is missing"),
        ({"topic": "T", "queueId": "1x"}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": True}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": 1.0}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": " 1"}, "queueId", "expected an int"),
        ({"topic": 5, "queueId": 1}, "topic", "expected a str"),
    ],
)
def test_from_ext_errors_name_the_field(ext: dict[str, object], field: str, reason: str) -> None:
    with pytest.raises(HeaderError) as e:
        h.GetMaxOffsetRequestHeader.from_ext(ext)
    assert e.value.field == field
    assert reason in e.value.reason
    assert field in str(e.value)


def test_bad_bool_and_to_ext_checks() -> None:
    ext = {"brokerName": "b", "brokerAddr": "a", "clusterName": "c", "haServerAddr": "h", "brokerId": 0}
    # Java's Boolean.parseBoolean: any text but "true" (in any case) is false, never refused
    assert [h.RegisterBrokerRequestHeader.from_ext({**ext, "compressed": t}).compressed
            for t in ("yes", "", "1", "TRUE", "True")] == [False, False, False, True, True]
    with pytest.raises(HeaderError, match="compressed"):
        h.RegisterBrokerRequestHeader.from_ext({**ext, "compressed": 7})  # not a text: a native peer's bug
    with pytest.raises(HeaderError, match="topic"):
        h.GetRouteInfoRequestHeader(topic=None).to_ext()  # type: ignore[arg-type]
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader("T", "1").to_ext()  # type: ignore[arg-type]
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader("T", True).to_ext()


def test_send_message_header_v2_conversion_both_ways() -> None:
    v1 = v1_header()
    v2 = h.SendMessageRequestHeaderV2.from_v1(v1)
    ext = v2.to_ext()
    assert set(ext) == set("abcdefghijklmn")
    assert (ext["a"], ext["b"], ext["e"], ext["g"], ext["l"], ext["n"]) == (
        "PG",
        "TopicTest",
        3,
        1_700_000_000_123,
        16,
        "broker-a",
    )
    assert v2.to_v1() == v1
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        assert h.parse_send_message_request_header(code, ext) == v1
    assert h.parse_send_message_request_header(RequestCode.SEND_MESSAGE, v1.to_ext()) == v1
    with pytest.raises(HeaderError):
        h.parse_send_message_request_header(RequestCode.SEND_MESSAGE, ext)  # V2 letters under a V1 code


@pytest.mark.parametrize(
    "change",
    [{}, {"properties": None, "reconsume_times": None, "max_reconsume_times": None, "broker_name": None},
     {"unit_mode": True, "batch": True, "queue_id": -1}],
)
def test_send_v2_map_built_and_read_directly_equals_going_through_the_v2_header(change: dict) -> None:
    # Sends skip the SendMessageRequestHeaderV2 object: the direct codec must give the same map and header.
    v1 = dataclasses.replace(v1_header(), **change)
    ext = h.send_message_v2_ext(v1)
    assert ext == h.SendMessageRequestHeaderV2.from_v1(v1).to_ext()
    assert h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, ext) == v1


@pytest.mark.parametrize(
    ("ext", "fragment"),
    [({"b": "T"}, "'a'"), ({**dict.fromkeys("abc", "x"), "d": "four"}, "'d'"), ({"k": 7}, None)],
)
def test_send_v2_map_errors_are_those_of_the_v2_header(ext: dict, fragment: str | None) -> None:
    full = h.SendMessageRequestHeaderV2.from_v1(v1_header()).to_ext()
    bad = {**full, **ext} if fragment is None else ext
    with pytest.raises(HeaderError) as direct:
        h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, bad)
    with pytest.raises(HeaderError) as via_v2:
        h.SendMessageRequestHeaderV2.from_ext(bad)
    assert str(direct.value) == str(via_v2.value)
    with pytest.raises(HeaderError):
        h.send_message_v2_ext(dataclasses.replace(v1_header(), topic=None))  # type: ignore[arg-type]


def _sample_value(kind: type) -> object:
    return {int: 7, str: "s", bool: True, float: 1.5}[kind]


def _header_classes() -> list[type[h.CommandHeader]]:
    return [
        obj
        for obj in vars(h).values()
        if isinstance(obj, type) and issubclass(obj, h.CommandHeader) and obj is not h.CommandHeader
    ]


@pytest.mark.parametrize("cls", _header_classes(), ids=lambda c: c.__name__)
def test_every_header_round_trips_through_ext_and_strings(cls: type[h.CommandHeader]) -> None:
    specs = h._specs(cls)
    header = cls(**{s.attr: _sample_value(s.kind) for s in specs})
    ext = header.to_ext()
    assert set(ext) == {s.wire for s in specs}
    assert cls.from_ext(ext) == header
    as_strings = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in ext.items()}
    assert cls.from_ext(as_strings) == header
    assert RemotingCommand.request(1, header).decode_header(cls) == header


def test_route_data_round_trip_uses_rocketmq_keys() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData("broker-a", 4, 4, PermName.PERM_READ | PermName.PERM_WRITE, 0)],
        broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})],
        filter_server_table={"10.0.0.1:10911": ["10.0.0.1:30000"]},
    )
    raw = msgpack.unpackb(encode_body(route), raw=False, strict_map_key=False)
    assert set(raw) == {"queueDatas", "brokerDatas", "filterServerTable"}
    assert raw["queueDatas"][0] == {
        "brokerName": "broker-a",
        "readQueueNums": 4,
        "writeQueueNums": 4,
        "perm": 6,
        "topicSysFlag": 0,
    }
    assert raw["brokerDatas"][0]["brokerAddrs"] == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert decode_body(encode_body(route), TopicRouteData) == route
    assert route.broker_datas[0].select_broker_addr() == "10.0.0.1:10911"
    assert BrokerData("c", "b", {2: "x", 1: "y"}).select_broker_addr() == "y"


def test_broker_addrs_with_json_style_string_ids_decode() -> None:
    bd = BrokerData.from_dict({"cluster": "c", "brokerName": "b", "brokerAddrs": {"0": "m", "1": "s"}})
    assert bd.broker_addrs == {0: "m", 1: "s"}


_QD = {"brokerName": "b", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"queueDatas": [{**_QD, "perm": "6"}]}, "queueDatas[0].perm"),
        ({"queueDatas": [_QD, {**_QD, "brokerName": None}]}, "queueDatas[1].brokerName"),
        ({"queueDatas": {}}, "queueDatas"),
        ({"brokerDatas": [{"cluster": "c", "brokerName": "b", "brokerAddrs": {"x": "a"}}]},
         "brokerDatas[0].brokerAddrs"),
        ([], ""),
    ],
)  # fmt: skip
def test_body_errors_carry_the_path(obj: object, path: str) -> None:
    with pytest.raises(BodyError) as e:
        TopicRouteData.from_dict(obj)
    assert e.value.path == path


def test_decode_body_rejects_garbage() -> None:
    with pytest.raises(BodyError):
        decode_body(b"\xc1")
    with pytest.raises(BodyError):
        decode_body(None)


def test_register_broker_body_plain_and_compressed() -> None:
    wrapper = TopicConfigSerializeWrapper(
        {"T1": TopicConfig("T1", 8, 8), "T2": TopicConfig("T2", perm=PermName.PERM_READ, order=True)},
        DataVersion(timestamp=1000, counter=3),
    )
    body = RegisterBrokerBody(wrapper, ["127.0.0.1:30000"])
    raw = decode_body(body.encode())
    assert set(raw) == {"topicConfigSerializeWrapper", "filterServerList"}
    assert set(raw["topicConfigSerializeWrapper"]) == {"topicConfigTable", "dataVersion"}
    assert raw["topicConfigSerializeWrapper"]["topicConfigTable"]["T1"]["readQueueNums"] == 8
    assert RegisterBrokerBody.decode(body.encode()) == body
    compressed = body.encode(compress=True)
    assert zlib.decompress(compressed) == body.encode()
    assert RegisterBrokerBody.decode(compressed, compressed=True) == body
    with pytest.raises(BodyError):
        RegisterBrokerBody.decode(b"not zlib", compressed=True)
    empty = RegisterBrokerBody.decode(None)
    assert empty.topic_config_serialize_wrapper.data_version == DataVersion(0, 0)


def test_body_crc32_is_masked_like_java() -> None:
    data = b"\xff" * 100
    assert body_crc32(data) == zlib.crc32(data) & 0x7FFFFFFF
    assert body_crc32(b"") == 0 and body_crc32(None) == 0


def test_data_version_next_and_equality() -> None:
    v = DataVersion(timestamp=5, counter=1)
    w = v.copy()
    assert v == w
    w.next_version(now_ms=9)
    assert (w.timestamp, w.counter) == (9, 2) and v != w


def test_cluster_info_and_topic_list_round_trip() -> None:
    info = ClusterInfo({"b": BrokerData("c", "b", {0: "a:1"})}, {"c": {"b", "b2"}})
    assert decode_body(encode_body(info))["clusterAddrTable"] == {"c": ["b", "b2"]}
    assert decode_body(encode_body(info), ClusterInfo) == info
    tl = TopicList(["A", "B"])
    assert decode_body(encode_body(tl)) == {"topicList": ["A", "B"]}
    assert decode_body(encode_body(tl), TopicList) == tl


def test_client_bodies_round_trip() -> None:
    hb = HeartbeatData(
        client_id="127.0.0.1@123",
        producer_data_set=[ProducerData("PG")],
        consumer_data_set=[
            ConsumerData("CG", subscription_data_set=[SubscriptionData("T", "a||b", ["a", "b"], [97, 98], 1)])
        ],
    )
    raw = decode_body(encode_body(hb))
    assert set(raw) == {"clientID", "producerDataSet", "consumerDataSet"}
    assert raw["consumerDataSet"][0]["subscriptionDataSet"][0]["subString"] == "a||b"
    assert decode_body(encode_body(hb), HeartbeatData) == hb
    mqs = {MessageQueue("T", "b", 1), MessageQueue("T", "b", 0)}
    lock = LockBatchRequestBody("CG", "cid", mqs)
    assert decode_body(encode_body(lock))["mqSet"][0] == {"topic": "T", "brokerName": "b", "queueId": 0}
    assert decode_body(encode_body(lock), LockBatchRequestBody) == lock
    assert decode_body(encode_body(LockBatchResponseBody(mqs)), LockBatchResponseBody).lock_ok_mq_set == mqs
    ids = GetConsumerListByGroupResponseBody(["c1", "c2"])
    assert decode_body(encode_body(ids), GetConsumerListByGroupResponseBody) == ids
    with pytest.raises(BodyError, match="codeSet"):
        SubscriptionData.from_dict({"topic": "T", "codeSet": ["x"]})


def test_subscription_group_config_defaults_and_round_trip() -> None:
    cfg = SubscriptionGroupConfig("CG", retry_max_times=3, consume_broadcast_enable=False)
    raw = decode_body(encode_body(cfg))
    assert raw["groupName"] == "CG" and raw["retryMaxTimes"] == 3 and raw["consumeBroadcastEnable"] is False
    assert decode_body(encode_body(cfg), SubscriptionGroupConfig) == cfg
    defaults = SubscriptionGroupConfig.from_dict({"groupName": "G"})
    assert (defaults.retry_queue_nums, defaults.retry_max_times, defaults.which_broker_when_consume_slowly) == (
        1,
        16,
        1,
    )
    assert defaults.consume_enable and defaults.notify_consumer_ids_changed_enable
    with pytest.raises(BodyError, match="retryMaxTimes"):
        SubscriptionGroupConfig.from_dict({"groupName": "G", "retryMaxTimes": "3"})


def test_a_groups_retry_policy_round_trips_in_every_dialect() -> None:
    """RocketMQ 5's groupRetryPolicy: kept in msgpack and in fastjson's JSON (fields in fastjson's order, null
    members left out); a group without one has RocketMQ's default, written as 5.x writes it; a member's missing
    fields take its defaults, as fastjson's bean would."""
    exponential = SubscriptionGroupConfig("E", group_retry_policy=GroupRetryPolicy(
        "EXPONENTIAL", ExponentialRetryPolicy(12000, 60000, 3)))
    customized = SubscriptionGroupConfig("C", group_retry_policy=GroupRetryPolicy(
        customized_retry_policy=CustomizedRetryPolicy((15000, 15000))))
    for cfg in (exponential, customized, SubscriptionGroupConfig("D")):
        assert decode_body(encode_body(cfg), SubscriptionGroupConfig) == cfg
        assert decode_body(encode_body(cfg, BodyDialect.FASTJSON), SubscriptionGroupConfig, BodyDialect.FASTJSON) == cfg
    assert b'"groupRetryPolicy":{"exponentialRetryPolicy":{"initial":12000,"max":60000,"multiplier":3},' \
           b'"type":"EXPONENTIAL"}' in encode_body(exponential, BodyDialect.FASTJSON)
    default = encode_body(SubscriptionGroupConfig("D"), BodyDialect.FASTJSON)
    assert b'"groupRetryPolicy":{"type":"CUSTOMIZED"}' in default
    assert SubscriptionGroupConfig.from_dict({"groupName": "G"}).group_retry_policy == GroupRetryPolicy()
    partial = decode_body(b'{"groupName":"P","groupRetryPolicy":{"type":"EXPONENTIAL",'
                          b'"exponentialRetryPolicy":{"initial":"12000"},"customizedRetryPolicy":{}}}',
                          SubscriptionGroupConfig, BodyDialect.FASTJSON).group_retry_policy
    assert partial == GroupRetryPolicy("EXPONENTIAL", ExponentialRetryPolicy(12000, 7_200_000, 2),
                                       CustomizedRetryPolicy(DEFAULT_NEXT))
    with pytest.raises(BodyError, match="groupRetryPolicy.type"):
        SubscriptionGroupConfig.from_dict({"groupName": "G", "groupRetryPolicy": {"type": "LINEAR"}})
    # A delay beyond a Java long is refused as Java's reader refuses it: stored, it failed every answer that
    # carries the group (msgpack cannot write it), and the gRPC endpoint lost the group's whole config.
    for huge in (b"100000000000000000000", b"1e30", b"-9223372036854775809"):
        with pytest.raises(BodyError, match=r"customizedRetryPolicy.next\[1\].*64-bit"):
            decode_body(b'{"groupName":"H","groupRetryPolicy":{"customizedRetryPolicy":{"next":[1000,' + huge
                        + b']}}}', SubscriptionGroupConfig, BodyDialect.FASTJSON)
    with pytest.raises(BodyError, match="64-bit"):
        SubscriptionGroupConfig.from_dict({"groupName": "H", "groupRetryPolicy": {
            "customizedRetryPolicy": {"next": [1 << 63]}}})
    longest = [-(1 << 63), (1 << 63) - 1]
    assert SubscriptionGroupConfig.from_dict({"groupName": "H", "groupRetryPolicy": {"customizedRetryPolicy": {
        "next": longest}}}).group_retry_policy.customized_retry_policy.next == tuple(longest)


def test_retry_policies_next_delay_duration() -> None:
    """nextDelayDuration: a customized policy's next[reconsumeTimes + 2] (the last past the end), an exponential
    one's initial * multiplier ^ reconsumeTimes up to max; getRetryPolicy falls back to the default customized
    policy when the type's member is null."""
    assert [CustomizedRetryPolicy().next_delay_duration(n) for n in (-1, 0, 1, 14, 15, 99)] == [
        10000, 10000, 30000, 3_600_000, 7_200_000, 7_200_000]
    assert [ExponentialRetryPolicy(1000, 60000, 2).next_delay_duration(n) for n in (0, 1, 5, 6, 40)] == [
        1000, 2000, 32000, 60000, 60000]
    assert GroupRetryPolicy("EXPONENTIAL").get_retry_policy() == CustomizedRetryPolicy()
    exponential = ExponentialRetryPolicy(7)
    assert GroupRetryPolicy("EXPONENTIAL", exponential).get_retry_policy() is exponential


def test_header_dataclasses_are_slotted() -> None:
    for cls in _header_classes():
        assert dataclasses.is_dataclass(cls) and "__slots__" in vars(cls), cls


def test_message_queue_hash_is_cached_yet_follows_its_fields() -> None:
    # The hash is computed once, at construction; equal queues must still hash alike, a changed copy anew.
    mq = MessageQueue("T", "broker-a", 1)
    assert hash(mq) == hash(MessageQueue("T", "broker-a", 1)) == hash(("T", "broker-a", 1))
    other = dataclasses.replace(mq, queue_id=2)
    assert hash(other) == hash(("T", "broker-a", 2)) and other != mq
    table = {mq: "one", other: "two"}
    assert table[MessageQueue("T", "broker-a", 2)] == "two"
    assert repr(mq) == "MessageQueue(topic='T', broker_name='broker-a', queue_id=1)"
    assert MessageQueue.from_dict(mq.to_dict()) == mq


def test_a_message_queue_pickled_in_another_process_keys_tables_here() -> None:
    # Spark pickles its readers (and their queues) into worker processes, which hash strings with another
    # seed: a hash cached by the pickling process must not travel with the queue.
    script = (
        "import pickle, sys; from pocketmq.remoting.client_body import MessageQueue; "
        "sys.stdout.buffer.write(pickle.dumps({MessageQueue('T', 'broker-a', 1): 'one'}))"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": root}
    pickled = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True, env=env).stdout
    table = pickle.loads(pickled)
    assert table[MessageQueue("T", "broker-a", 1)] == "one"
