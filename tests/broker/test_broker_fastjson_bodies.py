"""Bodies in Java's JSON as Apache RocketMQ 4.9.7's broker reads them (fastjson into its body classes), where the
differential fuzz (tests/apache/test_differential_fuzz_consumer.py) found pocketmq refusing what 4.9.7 answers:
LOCK_BATCH_MQ and UNLOCK_BATCH_MQ without their group or client, a queue's field missing, "" or true,
CHECK_CLIENT_CONFIG without a topic, with a client id of any JSON type, a subscription "" or [] or the body null, or
with an expression type there is no filter for; and what it refuses where pocketmq answered: a HEART_BEAT with a
set that is null or a producer without a client id."""

from __future__ import annotations

import json
from typing import Any

import pytest
from broker_harness import Cluster

from pocketmq.broker import BrokerController
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol


@pytest.fixture
async def native(cluster: Cluster) -> tuple[BrokerController, RemotingClient]:
    broker = await cluster.broker(enable_property_filter=True)
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    cluster.clients.append(client)
    return broker, client


async def ask(native: tuple[BrokerController, RemotingClient], code: int, body: Any) -> RemotingCommand:
    broker, client = native
    return await client.invoke(broker.address, RemotingCommand.request(code, None, json.dumps(body).encode()), 5.0)


async def test_a_lock_without_its_group_or_client_locks_nothing_of_an_empty_set_and_is_refused_for_a_queue(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    queue = {"topic": "T", "brokerName": "broker-a", "queueId": 0}
    for body in ({"clientId": "c1"}, {"consumerGroup": "G", "mqSet": []}, {}):
        answer = await ask(native, RequestCode.LOCK_BATCH_MQ, body)
        assert (answer.code, json.loads(answer.body or b"")) == (ResponseCode.SUCCESS, {"lockOKMQSet": []})
    for body in ({"clientId": "c1", "mqSet": [queue]}, {"consumerGroup": "G", "mqSet": [queue]},
                 {"consumerGroup": "G", "clientId": "c1", "mqSet": None}):
        assert (await ask(native, RequestCode.LOCK_BATCH_MQ, body)).code == ResponseCode.SYSTEM_ERROR, body
    assert native[0].rebalance_lock_manager.mq_lock_table == {}


async def test_a_queue_missing_fields_is_locked_with_javas_defaults_and_a_group_of_any_json_type_is_its_text(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    answer = await ask(native, RequestCode.LOCK_BATCH_MQ,
                       {"consumerGroup": {"a": 1}, "clientId": 7,
                        "mqSet": [{}, {"topic": "T", "queueId": True}, {"topic": "U", "queueId": ""}]})
    assert answer.code == ResponseCode.SUCCESS
    assert json.loads(answer.body or b"") == {"lockOKMQSet": [{"topic": "", "brokerName": "", "queueId": 0},
                                                              {"topic": "T", "brokerName": "", "queueId": 1},
                                                              {"topic": "U", "brokerName": "", "queueId": 0}]}
    [(group, table)] = native[0].rebalance_lock_manager.mq_lock_table.items()
    assert group == '{"a":1}' and [entry.client_id for entry in table.values()] == ["7", "7", "7"]


async def test_an_unlock_without_a_client_unlocks_nothing_and_without_a_group_is_refused(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    queue = {"topic": "T", "brokerName": "broker-a", "queueId": 0}
    lock = {"consumerGroup": "G", "clientId": "c1", "mqSet": [queue]}
    assert (await ask(native, RequestCode.LOCK_BATCH_MQ, lock)).code == ResponseCode.SUCCESS
    answer = await ask(native, RequestCode.UNLOCK_BATCH_MQ, {"consumerGroup": "G", "mqSet": [queue]})
    assert answer.code == ResponseCode.SUCCESS
    assert len(native[0].rebalance_lock_manager.mq_lock_table["G"]) == 1
    answer = await ask(native, RequestCode.UNLOCK_BATCH_MQ, {"clientId": "c1", "mqSet": []})
    assert answer.code == ResponseCode.SYSTEM_ERROR


async def test_check_client_config_reads_the_expression_alone(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    sql92 = {"expressionType": "SQL92", "subString": "a > 1"}
    body = {"clientId": {}, "group": [], "subscriptionData": sql92}
    answer = await ask(native, RequestCode.CHECK_CLIENT_CONFIG, body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    # (4.9.7: FilterFactory has no filter of the type, and its compile fails as a parse does)
    answer = await ask(native, RequestCode.CHECK_CLIENT_CONFIG, {"subscriptionData": {"expressionType": "FOO"}})
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "FOO" in (answer.remark or "")
    tags = {"subscriptionData": {"topic": "T", "subString": [True], "tagsSet": [None, 1, {}],  # (texts but null)
                                 "codeSet": [None, "", True, "7"]}}  # (Integers: null, null, 1, 7)
    for nothing_to_check in (None, [], {"subscriptionData": ""}, {"subscriptionData": []}, tags):
        assert (await ask(native, RequestCode.CHECK_CLIENT_CONFIG, nothing_to_check)).code == ResponseCode.SUCCESS


async def test_a_heartbeat_with_a_null_set_or_a_producer_without_a_client_id_is_refused_and_registers_no_one(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    consumer = {"groupName": "G", "subscriptionDataSet": [{"topic": "T"}]}
    for body in ({"clientID": "c", "consumerDataSet": None}, {"clientID": "c", "producerDataSet": None},
                 {"clientID": "c", "consumerDataSet": [{**consumer, "subscriptionDataSet": None}]},
                 {"consumerDataSet": [consumer], "producerDataSet": [{"groupName": "P"}]}):
        assert (await ask(native, RequestCode.HEART_BEAT, body)).code == ResponseCode.SYSTEM_ERROR, body
    broker = native[0]
    assert broker.consumer_manager.consumer_table == {} and broker.producer_manager.group_channel_table == {}
    # (a consumer needs no client id, and a set left out is empty)
    assert (await ask(native, RequestCode.HEART_BEAT, {"consumerDataSet": [consumer]})).code == ResponseCode.SUCCESS


async def test_a_subscription_version_of_true_is_refused_as_fastjson_refuses_a_boolean_long(
    native: tuple[BrokerController, RemotingClient],
) -> None:
    body = {"subscriptionData": {"expressionType": "SQL92", "subString": "a > 1", "subVersion": False}}
    assert (await ask(native, RequestCode.CHECK_CLIENT_CONFIG, body)).code == ResponseCode.SYSTEM_ERROR
