"""Access control on a real broker over real sockets (aclEnable with a plain_acl.yml): each refusal is
NO_PERMISSION (16) with a remark naming the key, the resource and the permission; msgpack and native frames go
through the same check."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from broker_harness import MQ

from pocketmq.remoting.acl import AclClientRPCHook, SessionCredentials
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import DeleteTopicRequestHeader
from pocketmq.remoting.topic_config import TopicConfig
from pocketmq.remoting.wire_protocol import WireProtocol

NO_PERMISSION = ResponseCode.NO_PERMISSION

ACL_YAML = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: producerKey
    secretKey: producerSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - pubOnly=PUB
      - denied=DENY
      - shared=PUB|SUB
  - accessKey: consumerKey
    secretKey: consumerSecret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
    topicPerms:
      - denied=DENY
  - accessKey: adminKey1
    secretKey: adminSecret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""

PRODUCER = SessionCredentials("producerKey", "producerSecret")
CONSUMER = SessionCredentials("consumerKey", "consumerSecret")
ADMIN = SessionCredentials("adminKey1", "adminSecret")


def acl_file(tmp_path: Path, text: str = ACL_YAML, name: str = "plain_acl.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def signed_mq(cluster: Any, addr: str, credentials: SessionCredentials | None,
              protocol: WireProtocol = WireProtocol.MSGPACK) -> MQ:
    client = RemotingClient(wire_protocol=protocol)
    if credentials is not None:
        client.rpc_hook = AclClientRPCHook(credentials)
    cluster.clients.append(client)
    return MQ(client, addr)


@pytest.fixture
async def acl_broker(cluster: Any, tmp_path: Path) -> Any:
    broker = await cluster.broker(acl_enable=True, acl_file=str(acl_file(tmp_path)))
    admin = signed_mq(cluster, broker.address, ADMIN)
    for topic in ("pubOnly", "denied", "shared", "open"):
        assert (await admin.create_topic(topic)).code == ResponseCode.SUCCESS
    return broker


def refused(response: RemotingCommand, *fragments: str) -> bool:
    assert response.code == NO_PERMISSION, response
    assert all(f in (response.remark or "") for f in fragments), response.remark
    return True


@pytest.mark.parametrize("protocol", [WireProtocol.MSGPACK, WireProtocol.NATIVE])
async def test_an_unsigned_request_is_refused_in_either_protocol(cluster, acl_broker, protocol) -> None:
    mq = signed_mq(cluster, acl_broker.address, None, protocol)
    assert refused(await mq.send("shared"), "No accessKey is configured", "request code 310", "127.0.0.1")
    assert acl_broker.store.get_max_phy_offset() == 0  # nothing was written


@pytest.mark.parametrize("protocol", [WireProtocol.MSGPACK, WireProtocol.NATIVE])
async def test_a_signed_request_with_the_right_permission_is_served(
    cluster, acl_broker, protocol, dispatched
) -> None:
    producer = signed_mq(cluster, acl_broker.address, PRODUCER, protocol)
    assert (await producer.send("shared", b"one")).code == ResponseCode.SUCCESS
    assert (await producer.send("pubOnly", b"two")).code == ResponseCode.SUCCESS
    await dispatched(acl_broker)
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER, protocol)
    pulled = await consumer.pull("anyGroup", "shared", 0, 0)
    assert pulled.code == ResponseCode.SUCCESS and b"one" in (pulled.body or b"")


async def test_an_unknown_access_key_is_refused(cluster, acl_broker) -> None:
    mq = signed_mq(cluster, acl_broker.address, SessionCredentials("ghostKey1", "producerSecret"))
    assert refused(await mq.send("shared"), "No acl config for ghostKey1")


async def test_a_wrong_secret_key_is_refused(cluster, acl_broker) -> None:
    mq = signed_mq(cluster, acl_broker.address, SessionCredentials("producerKey", "not-the-secret"))
    assert refused(await mq.send("shared"), "Check signature failed for accessKey=producerKey")


async def test_a_pub_only_key_cannot_pull(cluster, acl_broker) -> None:
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)
    assert refused(await producer.pull("someGroup", "pubOnly", 0, 0),
                   "No permission for topic:pubOnly", "accessKey=producerKey", "needs SUB", "give PUB")


async def test_a_denied_topic_is_refused_to_every_ordinary_key(cluster, acl_broker) -> None:
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)
    assert refused(await producer.send("denied"), "topic:denied", "accessKey=producerKey", "needs PUB", "DENY")
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER)
    assert refused(await consumer.pull("someGroup", "denied", 0, 0), "topic:denied", "accessKey=consumerKey")
    # A topic the key has no entry for takes its default: the consumer may read, not write.
    assert refused(await consumer.send("open"), "No default permission for topic:open", "defaultTopicPerm is SUB")


async def test_a_replayed_request_with_another_body_is_refused(cluster, acl_broker) -> None:
    mq = signed_mq(cluster, acl_broker.address, None)  # signs by hand below
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE, {
        "producerGroup": "PG", "topic": "shared", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
        "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0, "properties": ""}, b"pay 10 EUR")
    AclClientRPCHook(PRODUCER)(request)
    assert (await mq.client.invoke(mq.addr, request, 5.0)).code == ResponseCode.SUCCESS
    written = acl_broker.store.get_max_phy_offset()
    replay = RemotingCommand.request(request.code, dict(request.ext_fields), b"pay 10000 EUR")
    assert refused(await mq.client.invoke(mq.addr, replay, 5.0), "Check signature failed for accessKey=producerKey")
    assert acl_broker.store.get_max_phy_offset() == written


async def test_admin_requests_need_an_admin_key(cluster, acl_broker) -> None:
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER)
    assert refused(await consumer.create_topic("takeover"),
                   "Need admin permission for request code=17, but accessKey=consumerKey is not")
    assert acl_broker.topic_config_manager.select_topic_config("takeover") is None
    delete = await consumer.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("shared"))
    assert refused(delete, "Need admin permission for request code=215")
    assert acl_broker.topic_config_manager.select_topic_config("shared") is not None
    admin = signed_mq(cluster, acl_broker.address, ADMIN)
    assert (await admin.create_topic("takeover")).code == ResponseCode.SUCCESS


async def test_the_list_creates_of_topics_and_groups_need_an_admin_key_too(cluster, acl_broker) -> None:
    # RocketMQ 5's updateTopicList and updateSubGroupList (18, 225): any signed key overwrote a topic's perm or
    # disabled a group with them, while the single creates (17, 200) need an admin.
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER)
    topics = encode_body({"topicConfigList": [TopicConfig("shared", 1, 1, perm=0).to_dict()]})
    assert refused(await consumer.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, None, topics),
                   "Need admin permission for request code=18")
    assert acl_broker.topic_config_manager.select_topic_config("shared").perm != 0
    groups = encode_body({"groupConfigList": [SubscriptionGroupConfig("takenGroup", consume_enable=False).to_dict()]})
    assert refused(await consumer.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, None, groups),
                   "Need admin permission for request code=225")
    assert "takenGroup" not in acl_broker.subscription_group_manager.subscription_group_table


async def test_offsets_of_a_group_need_sub_on_the_group(cluster, acl_broker) -> None:
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)  # defaultGroupPerm DENY
    update = await producer.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "victims", "topic": "shared", "queueId": 0, "commitOffset": 99})
    assert refused(update, "No default permission for group:victims", "accessKey=producerKey")
    # A one-way request that is refused gets no answer and changes nothing.
    anonymous = signed_mq(cluster, acl_broker.address, None)
    await anonymous.update_offset("victims", "shared", 0, 77, oneway=True)
    # (one connection's requests are handled in order: once this is answered, the one-way one was handled)
    assert refused(await anonymous.query_offset("victims", "shared", 0), "No accessKey")
    assert acl_broker.consumer_offset_manager.query_offset("victims", "shared", 0) == -1


async def test_a_heartbeat_needs_sub_on_its_groups_and_topics(cluster, acl_broker) -> None:
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)
    assert (await producer.heartbeat("producer@1", producer_groups=("PG",))).code == ResponseCode.SUCCESS
    refusal = await producer.heartbeat("consumer@1", consumer_groups={"CG": {"shared": "*"}})
    assert refused(refusal, "group:CG", "accessKey=producerKey")
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER)
    assert (await consumer.heartbeat("consumer@1", consumer_groups={"CG": {"shared": "*"}})).code == 0


async def test_a_white_listed_address_needs_no_signature(cluster, tmp_path) -> None:
    text = ACL_YAML.replace("  - 10.10.103.*", "  - 127.0.0.*")
    broker = await cluster.broker(acl_enable=True, acl_file=str(acl_file(tmp_path, text, "white.yml")))
    mq = signed_mq(cluster, broker.address, None)
    assert (await mq.create_topic("whiteTopic")).code == ResponseCode.SUCCESS
    assert (await mq.send("whiteTopic")).code == ResponseCode.SUCCESS


async def test_an_account_white_address_needs_the_key_but_no_signature(cluster, tmp_path) -> None:
    text = ACL_YAML.replace("    secretKey: consumerSecret\n",
                            "    secretKey: consumerSecret\n    whiteRemoteAddress: 127.0.0.1\n")
    broker = await cluster.broker(acl_enable=True, acl_file=str(acl_file(tmp_path, text, "account.yml")))
    mq = signed_mq(cluster, broker.address, None)
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, mq.pull_request("G", "open", 0, 0))
    request.ext_fields["AccessKey"] = "consumerKey"
    assert (await mq.client.invoke(mq.addr, request, 5.0)).code != NO_PERMISSION
    assert refused(await mq.send("open"), "No accessKey is configured")


async def test_with_acl_off_nothing_is_checked(cluster) -> None:
    broker = await cluster.broker()
    assert broker.remoting_server.request_validator is None
    anonymous = signed_mq(cluster, broker.address, None)
    assert (await anonymous.create_topic("free")).code == ResponseCode.SUCCESS
    assert (await anonymous.send("free")).code == ResponseCode.SUCCESS
    # Signed requests are served as well: the extra header fields mean nothing to a broker without ACL.
    signed = signed_mq(cluster, broker.address, SessionCredentials("whoever1", "whatever1"))
    assert (await signed.send("free")).code == ResponseCode.SUCCESS
    # A pull answers FOUND once the dispatcher has indexed the sends; under load that can take a moment.
    for _ in range(3000):
        pulled = await signed.pull("G", "free", 0, 0)
        if pulled.code == ResponseCode.SUCCESS:
            break
        await asyncio.sleep(0.01)
    assert pulled.code == ResponseCode.SUCCESS


async def test_a_bad_acl_file_stops_the_broker_before_it_listens(cluster, tmp_path) -> None:
    bad = acl_file(tmp_path, "accounts:\n  - accessKey: short\n    secretKey: x\n", "bad.yml")
    with pytest.raises(ValueError, match="longer than 6"):
        await cluster.broker(acl_enable=True, acl_file=str(bad))


async def test_pops_and_acks_need_sub_on_the_topic(cluster: Any, acl_broker: Any) -> None:
    from pocketmq.remoting.pop_header import AckMessageRequestHeader, PopMessageRequestHeader

    pop = PopMessageRequestHeader("G", "denied", -1, 1, 60_000, 0, 0, 0)
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)
    assert refused(await producer.invoke(RequestCode.POP_MESSAGE, pop), "producerKey", "group:G")
    consumer = signed_mq(cluster, acl_broker.address, CONSUMER)
    assert refused(await consumer.invoke(RequestCode.POP_MESSAGE, pop), "consumerKey", "denied")
    ack = AckMessageRequestHeader("G", "denied", 0, "0 1 2 3 0 b 0 0", 0)
    assert refused(await consumer.invoke(RequestCode.ACK_MESSAGE, ack), "consumerKey", "denied")
    allowed = PopMessageRequestHeader("G", "open", -1, 1, 60_000, 0, 0, 0)
    assert (await consumer.invoke(RequestCode.POP_MESSAGE, allowed)).code == ResponseCode.POLLING_TIMEOUT


async def test_a_reply_cannot_write_a_topic_the_key_may_not_publish_to(cluster, acl_broker) -> None:
    # The reply codes store into the topic their header names (4.9.8 checks nothing for them).
    producer = signed_mq(cluster, acl_broker.address, PRODUCER)
    ext = {"a": "PG", "b": "denied", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 1, "h": 0, "i": "", "j": 0,
           "k": False, "m": False}
    for code in (RequestCode.SEND_REPLY_MESSAGE_V2, RequestCode.SEND_MESSAGE_V2):
        answer = await producer.invoke(code, ext, b"written through a reply")
        assert refused(answer, "topic:denied", "accessKey=producerKey", "needs PUB")
    v1 = {"producerGroup": "PG", "topic": "denied", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
          "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0, "properties": ""}
    assert refused(await producer.invoke(RequestCode.SEND_REPLY_MESSAGE, v1, b"v1"), "topic:denied")
    assert acl_broker.store.get_max_offset_in_queue("denied", 0) == 0


async def test_the_brokers_own_key_pair_is_not_in_the_config_any_key_may_read(cluster, tmp_path) -> None:
    broker = await cluster.broker(acl_enable=True, acl_file=str(acl_file(tmp_path)), access_key="adminKey1",
                                  secret_key="adminSecret")
    consumer = signed_mq(cluster, broker.address, CONSUMER)
    answer = await consumer.invoke(RequestCode.GET_BROKER_CONFIG)
    assert answer.code == ResponseCode.SUCCESS  # (as in RocketMQ: no admin key needed)
    keys = {line.split("=", 1)[0] for line in answer.body.decode().splitlines() if "=" in line}
    assert "aclEnable" in keys and not keys & {"accessKey", "secretKey"}
    assert b"adminSecret" not in answer.body
