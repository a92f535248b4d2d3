"""RocketMQ 5's admin requests answered as Apache RocketMQ 5.5.0 answers them, where the differential fuzz
(tests/apache/test_differential_fuzz_admin_5.py) found pocketmq answering otherwise: GET_TOPIC_NAME_LIST (5.5.0's
broker does not serve it), SET_MESSAGE_REQUEST_MODE of a topic or group the broker has not, QUERY_ASSIGNMENT without
a topic or a message model, of a light message queue and of a topic created after a first query, the list requests
with no list, a topic list naming a topic twice, the HA status's fields and a group's RocketMQ 5 fields."""

from __future__ import annotations

import json
from typing import Any

import pytest
from broker_harness import Cluster

from pocketmq.broker import BrokerController
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol

Native = tuple[BrokerController, RemotingClient]


@pytest.fixture
async def native(cluster: Cluster) -> Native:
    broker = await cluster.broker()
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    cluster.clients.append(client)
    return broker, client


async def ask(native: Native, code: int, body: Any = None, ext: dict[str, str] | None = None) -> RemotingCommand:
    broker, client = native
    data = None if body is None else json.dumps(body).encode()
    return await client.invoke(broker.address, RemotingCommand.request(code, ext, data), 5.0)


async def test_get_topic_name_list_is_not_served(native: Native) -> None:
    answer = await ask(native, RequestCode.GET_TOPIC_NAME_LIST)
    assert (answer.code, answer.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 23 not supported")


async def test_a_request_mode_of_a_topic_or_group_the_broker_has_not_is_refused(native: Native) -> None:
    broker = native[0]
    broker.topic_config_manager.update_topic_config(TopicConfig("ModeTopic", 4, 4, 6))
    mode = RequestCode.SET_MESSAGE_REQUEST_MODE
    answer = await ask(native, mode, {"topic": "NoSuchTopic", "consumerGroup": "g", "mode": "POP"})
    assert (answer.code, answer.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[NoSuchTopic] not exist")
    answer = await ask(native, mode, {"topic": "ModeTopic", "consumerGroup": "bad!group", "mode": "POP"})
    assert (answer.code, answer.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                            "subscription group does not exist")
    for body in ({"consumerGroup": "g"}, {"topic": "ModeTopic", "mode": "POP"}):  # (5.5.0: NullPointerException)
        assert (await ask(native, mode, body)).code == ResponseCode.SYSTEM_ERROR, body
    # A group not there yet is created, as 5.5.0's lookup creates it
    assert (await ask(native, mode, {"topic": "ModeTopic", "consumerGroup": "new_g"})).code == ResponseCode.SUCCESS
    assert "new_g" in broker.subscription_group_manager.subscription_group_table


async def test_query_assignment_without_a_topic_or_a_known_message_model_is_refused(native: Native) -> None:
    query = {"topic": "T", "consumerGroup": "g", "clientId": "c", "strategyName": "AVG"}
    for body in ({**query, "messageModel": "x"}, query, {**query, "topic": None, "messageModel": "CLUSTERING"}):
        assert (await ask(native, RequestCode.QUERY_ASSIGNMENT, body)).code == ResponseCode.SYSTEM_ERROR, body


async def test_a_light_message_queue_is_one_queue_of_the_broker(native: Native) -> None:
    query = {"topic": "%LMQ%x", "consumerGroup": "g", "clientId": "c", "strategyName": "AVG",
             "messageModel": "CLUSTERING"}
    answer = await ask(native, RequestCode.QUERY_ASSIGNMENT, query)  # (no consumer of g: no assignment)
    assert (answer.code, json.loads(answer.body or b"")) == (ResponseCode.SUCCESS, {})
    del query["consumerGroup"]  # (5.5.0 looks the group's consumers up: a NullPointerException)
    assert (await ask(native, RequestCode.QUERY_ASSIGNMENT, query)).code == ResponseCode.SYSTEM_ERROR


async def test_a_topic_created_after_a_query_is_assigned_at_once(native: Native) -> None:
    query = {"topic": "Later", "consumerGroup": "g", "clientId": "c", "strategyName": "AVG",
             "messageModel": "BROADCASTING"}
    assert json.loads((await ask(native, RequestCode.QUERY_ASSIGNMENT, query)).body or b"") == {}
    native[0].topic_config_manager.update_topic_config(TopicConfig("Later", 2, 2, 6))
    answer = json.loads((await ask(native, RequestCode.QUERY_ASSIGNMENT, query)).body or b"")
    assert sorted(a["messageQueue"]["queueId"] for a in answer["messageQueueAssignments"]) == [0, 1]


@pytest.mark.parametrize("code,key", [(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, "topicConfigList"),
                                      (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, "groupConfigList")])
async def test_a_list_request_without_its_list_is_refused(native: Native, code: int, key: str) -> None:
    for body in ({}, {key: None}):  # (5.5.0 iterates the list: a NullPointerException)
        assert (await ask(native, code, body)).code == ResponseCode.SYSTEM_ERROR, body
    assert (await ask(native, code, {key: []})).code == ResponseCode.SUCCESS


async def test_a_topic_list_naming_a_topic_twice_is_refused_unwritten(native: Native) -> None:
    topic = {"topicName": "Twice", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}
    answer = await ask(native, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, {"topicConfigList": [topic, topic]})
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "Duplicate key Twice")
    assert native[0].topic_config_manager.select_topic_config("Twice") is None


async def test_the_ha_status_has_5_5_0s_fields(native: Native) -> None:
    body = json.loads((await ask(native, RequestCode.GET_BROKER_HA_STATUS)).body or b"")
    assert sorted(body["haClientRuntimeInfo"]) == ["lastReadTimestamp", "lastWriteTimestamp", "masterFlushOffset",
                                                   "maxOffset", "transferredByteInSecond"]


async def test_a_groups_rocketmq_5_fields_are_kept_and_given_back(native: Native) -> None:
    group = {"groupName": "g5", "groupSysFlag": 3, "consumeTimeoutMinute": 20}
    assert (await ask(native, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
                      {"groupConfigList": [group]})).code == ResponseCode.SUCCESS
    answer = await ask(native, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, ext={"group": "g5"})
    body = json.loads(answer.body or b"")
    assert (body["groupSysFlag"], body["consumeTimeoutMinute"], body["attributes"]) == (3, 20, {})
    assert body["consumeMessageOrderly"] is False  # (written whatever its value, as 5.5.0 writes it)
    # A value that is no int is skipped, as 4.9.x's fastjson skips a field it does not have
    group = {"groupName": "g5b", "groupSysFlag": "abc"}
    assert (await ask(native, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, group)).code == ResponseCode.SUCCESS
    assert native[0].subscription_group_manager.subscription_group_table["g5b"].group_sys_flag == 0
