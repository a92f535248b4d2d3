"""The body classes, with RocketMQ's keys: route data, REGISTER_BROKER's body (plain and compressed) and its CRC,
data versions, cluster info and topic lists, the client bodies, a group's config and retry policies, and
MessageQueue as a table key."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import zlib

import msgpack
import pytest

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
from pocketmq.remoting.codes import BodyDialect, PermName
from pocketmq.remoting.errors import BodyError
from pocketmq.remoting.group_retry_policy import (
    DEFAULT_NEXT,
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
)


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
