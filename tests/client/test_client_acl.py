"""pocketmq's client with ACL credentials against a real cluster with access control on (the broker checks every
request, the name server the broker's signed registrations), in both wire protocols."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from push_helpers import FAST_CONSUMER, unique

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MQBrokerException,
    MQClientException,
    Producer,
    PullConsumer,
    PushConsumer,
)
from pocketmq.client.client_config import ClientConfig
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import TopicConfig

ACL_YAML = """\
accounts:
  - accessKey: brokerAdmin
    secretKey: brokerSecret
    admin: true
  - accessKey: appUser1
    secretKey: appSecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclTopic=PUB|SUB
    groupPerms:
      - AclGroup=SUB
"""
APP = {"access_key": "appUser1", "secret_key": "appSecret1"}


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> Any:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL_YAML)
    async with EmbeddedCluster(tmp_path / "cluster", acl_enable=True, acl_file=str(path), access_key="brokerAdmin",
                               secret_key="brokerSecret") as cluster:
        cluster.broker.topic_config_manager.update_topic_config(TopicConfig("AclTopic", 2, 2, 6))
        await cluster.broker.register_broker_all()
        assert await cluster.wait_routed("AclTopic")
        yield cluster


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_a_client_with_credentials_sends_and_consumes(acl_cluster: Any, protocol: str) -> None:
    received: list[bytes] = []
    done = asyncio.Event()

    async def listener(msgs: list[Any], _context: Any) -> Any:
        received.extend(m.body for m in msgs)
        if len(received) >= 4:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("AclGroup", acl_cluster.namesrv_addr, protocol=protocol,
                            **dict(FAST_CONSUMER, instance_name=unique("c")), **APP)
    consumer.subscribe("AclTopic", "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        async with Producer("AnyProducerGroup", acl_cluster.namesrv_addr, protocol=protocol,
                            instance_name=unique("p"), **APP) as producer:
            await producer.send(Message("AclTopic", b"one"))
            await producer.send_batch([Message("AclTopic", b"two"), Message("AclTopic", b"three")])
            await producer.send_oneway(Message("AclTopic", b"four"))
        await asyncio.wait_for(done.wait(), 10)
    finally:
        await consumer.shutdown()
    assert sorted(received) == sorted([b"one", b"two", b"three", b"four"])
    # The consumer's progress was committed under its signature.
    om = acl_cluster.broker.consumer_offset_manager
    assert sum(max(om.query_offset("AclGroup", "AclTopic", q), 0) for q in range(2)) == 4


async def test_without_credentials_a_send_fails_with_no_permission(acl_cluster: Any) -> None:
    async with Producer("AnyProducerGroup", acl_cluster.namesrv_addr, instance_name=unique("p")) as producer:
        with pytest.raises((MQBrokerException, MQClientException)) as caught:
            await producer.send(Message("AclTopic", b"anonymous"))
    assert "No accessKey is configured" in str(caught.value)


async def test_a_topic_the_key_may_not_use_is_refused(acl_cluster: Any) -> None:
    acl_cluster.broker.topic_config_manager.update_topic_config(TopicConfig("Forbidden", 1, 1, 6))
    await acl_cluster.broker.register_broker_all()
    assert await acl_cluster.wait_routed("Forbidden")
    async with Producer("AnyProducerGroup", acl_cluster.namesrv_addr, instance_name=unique("p"), **APP) as producer:
        with pytest.raises((MQBrokerException, MQClientException)) as caught:
            await producer.send(Message("Forbidden", b"x"))
    assert "No default permission for topic:Forbidden" in str(caught.value)
    async with PullConsumer("OtherGroup", acl_cluster.namesrv_addr, instance_name=unique("c"), **APP) as consumer:
        mq = (await consumer.fetch_subscribe_message_queues("AclTopic"))[0]
        with pytest.raises((MQBrokerException, MQClientException)) as caught:
            await consumer.pull(mq, "*", 0, 1)
    assert "group:OtherGroup" in str(caught.value)


def test_credentials_are_checked_and_never_printed() -> None:
    with pytest.raises(MQClientException, match="go together"):
        ClientConfig("127.0.0.1:9876", access_key="appUser1")
    config = ClientConfig("127.0.0.1:9876", **APP)
    assert "appSecret1" not in repr(config) and "appSecret1" not in repr(config.request_hook())
