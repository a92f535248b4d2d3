"""INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), as RocketMQ 4.9.7's Broker2Client.getConsumeStatus answers it: the
broker asks each running consumer of the group (or the one named) for its offsets of the topic
(GET_CONSUMER_STATUS_FROM_CLIENT, 221) and answers them by client id. Real pocketmq consumers on a real cluster;
a client too old for the request, or one that answers badly, is a connection of the test's own on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.admin_body import GetConsumerStatusBody
from pocketmq.remoting.admin_header import GetConsumerStatusRequestHeader
from pocketmq.remoting.body import TopicConfig, encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import ConsumerData, HeartbeatData, SubscriptionData
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel
from pocketmq.remoting.wire_protocol import WireProtocol

TOPIC, GROUP, QUEUES = "StatusT", "StatusG", 4
PER_QUEUE = 2
GUARD = 30.0
FAST: dict[str, Any] = {"rebalance_interval": 0.1, "heartbeat_broker_interval": 0.1, "poll_name_server_interval": 0.1,
                        "persist_consumer_offset_interval": 0.1, "pull_time_delay_when_exception": 0.05}
V3_0_6, V3_0_7_SNAPSHOT = 27, 28  # MQVersion.Version ordinals


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, channel_expired_timeout=1.0, client_housekeeping_interval=0.1) as c:
        assert c.broker is not None
        c.broker.topic_config_manager.update_topic_config(TopicConfig(TOPIC, QUEUES, QUEUES, 6))
        await c.broker.register_broker_all()
        async with Producer("StatusPG", c.namesrv_addr, instance_name="status-p") as producer:
            for mq in await producer.fetch_publish_message_queues(TOPIC):
                for n in range(PER_QUEUE):
                    await producer.send(Message(TOPIC, b"q%d-%d" % (mq.queue_id, n)), mq)
        yield c


async def until(predicate: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + GUARD
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def ask(cluster: EmbeddedCluster, group: str = GROUP, topic: str = TOPIC, client_addr: str | None = None,
              protocol: WireProtocol = WireProtocol.MSGPACK) -> RemotingCommand:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS on a connection of its own, in ``protocol``."""
    client = RemotingClient(wire_protocol=protocol)
    try:
        request = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                          GetConsumerStatusRequestHeader(topic, group, client_addr))
        return await client.invoke(cluster.broker_addr, request, GUARD)
    finally:
        await client.close()


def consumer_table(answer: RemotingCommand) -> dict[str, dict[MessageQueue, int]]:
    assert answer.code == ResponseCode.SUCCESS, answer
    body = answer.decode_body(GetConsumerStatusBody)
    assert body.message_queue_table == {}
    return body.consumer_table


async def consuming(cluster: EmbeddedCluster, group: str, instances: int) -> list[PushConsumer]:
    """``instances`` push consumers of ``group`` started, once together they have consumed every message."""
    consumed: list[bytes] = []

    def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        consumed.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumers = []
    for n in range(instances):
        consumer = PushConsumer(group, cluster.namesrv_addr, instance_name=f"{group}-{n}",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", **FAST)
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        consumers.append(consumer)
    # Each queue consumed by one consumer of the group, the consumers settled on their share.
    await until(lambda: len(set(consumed)) == QUEUES * PER_QUEUE
                and sum(mq.topic == TOPIC for c in consumers for mq in c.assigned_queues()) == QUEUES)
    return consumers


def topic_offsets(consumer: PushConsumer) -> dict[MessageQueue, int]:
    impl: Any = consumer.impl  # (a push consumer that rebalances: it has an offset store)
    return {mq: o for mq, o in impl.offset_store.offset_table.items() if mq.topic == TOPIC}


async def test_each_running_consumer_answers_its_own_offsets_of_the_topic(cluster: EmbeddedCluster) -> None:
    consumers = await consuming(cluster, GROUP, 2)
    try:
        await until(lambda: all(topic_offsets(c) and set(topic_offsets(c).values()) == {PER_QUEUE}
                                for c in consumers))
        want = {c.client_id: topic_offsets(c) for c in consumers}
        assert sorted(len(t) for t in want.values()) == [2, 2]
        # The consumers speak msgpack to the broker: the asker gets their answers in its own protocol.
        for protocol in (WireProtocol.MSGPACK, WireProtocol.NATIVE):
            assert consumer_table(await ask(cluster, protocol=protocol)) == want
        # One client, by its id; an id no consumer of the group has: nobody asked, nothing answered.
        first = consumers[0].client_id
        assert consumer_table(await ask(cluster, client_addr=first)) == {first: want[first]}
        assert consumer_table(await ask(cluster, client_addr="10.0.0.1@nobody")) == {}
        # A blank topic: each consumer's offsets of every topic it holds (its group's retry topic too).
        every = consumer_table(await ask(cluster, topic=""))
        assert set(every) == set(want)
        for cid, table in want.items():
            assert every[cid].items() >= table.items()
            assert {mq.topic for mq in every[cid]} <= {TOPIC, f"%RETRY%{GROUP}"}
        async with MQAdminExt(cluster.namesrv_addr) as admin:
            assert await admin.get_consume_status(TOPIC, GROUP) == want
            assert await admin.get_consume_status(TOPIC, GROUP, first) == {first: want[first]}
    finally:
        for c in consumers:
            await c.shutdown()


async def test_a_group_with_no_consumer_online_is_refused(cluster: EmbeddedCluster) -> None:
    answer = await ask(cluster, group="NobodyG")
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                            "No Any Consumer online in the consumer group: [NobodyG]")
    consumers = await consuming(cluster, GROUP, 1)
    await consumers[0].shutdown()  # (UNREGISTER_CLIENT: the group has no client left)
    answer = await ask(cluster)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                            f"No Any Consumer online in the consumer group: [{GROUP}]")
    async with MQAdminExt(cluster.namesrv_addr) as admin:
        with pytest.raises(MQBrokerException) as refused:
            await admin.get_consume_status(TOPIC, GROUP)
    assert refused.value.code == ResponseCode.SYSTEM_ERROR


class WireConsumer:
    """A consumer's connection that heartbeats as client ``client_id`` of a given version and answers
    GET_CONSUMER_STATUS_FROM_CLIENT with ``code`` and ``body``."""

    def __init__(self, client_id: str, version: int, code: int = ResponseCode.SUCCESS,
                 body: bytes | None = None) -> None:
        self.client_id = client_id
        self.version = version
        self.code = code
        self.body = body
        self.asked = 0
        self.client = RemotingClient()
        self.client.register_processor(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self._answer)

    async def _answer(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.asked += 1
        return RemotingCommand.response_to(request, self.code, body=self.body)

    async def join(self, cluster: EmbeddedCluster, group: str) -> None:
        sub = SubscriptionData(TOPIC, "*", [], [], 1)
        heartbeat = HeartbeatData(self.client_id, [], [ConsumerData(group, subscription_data_set=[sub])])
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=encode_body(heartbeat))
        request.version = self.version
        assert (await self.client.invoke(cluster.broker_addr, request, GUARD)).code == ResponseCode.SUCCESS

    async def close(self) -> None:
        await self.client.close()


def offsets_body(queue_id: int, offset: int) -> bytes:
    """A client's answer: its offset of one queue of TOPIC (a MessageQueue key as its JSON text, msgpack's form)."""
    key = f'{{"brokerName":"broker-a","queueId":{queue_id},"topic":"{TOPIC}"}}'
    return encode_body({"messageQueueTable": {key: offset}})


async def test_a_client_older_than_3_0_7_is_refused_unless_the_one_asked_comes_before_it(
        cluster: EmbeddedCluster) -> None:
    group = "OldClientG"
    good = WireConsumer("10.0.0.1@good", V3_0_7_SNAPSHOT, body=offsets_body(0, 5))
    old = WireConsumer("10.0.0.2@old", V3_0_6, body=offsets_body(1, 6))
    try:
        await good.join(cluster, group)
        await old.join(cluster, group)
        answer = await ask(cluster, group)
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                                "the client does not support this feature. version=V3_0_6")
        # The client asked for is met (and asked) before the old one, and the walk stops there. (pocketmq walks the
        # group in the order its clients joined; RocketMQ in its channel table's, a hash map's.)
        assert consumer_table(await ask(cluster, group, client_addr=good.client_id)) == {
            good.client_id: {MessageQueue(TOPIC, "broker-a", 0): 5}}
        # Named itself, the old client is refused too, and never asked.
        assert (await ask(cluster, group, client_addr=old.client_id)).code == ResponseCode.SYSTEM_ERROR
        assert old.asked == 0
    finally:
        await good.close()
        await old.close()


async def test_clients_that_answer_badly_are_left_out(cluster: EmbeddedCluster) -> None:
    group = "BadAnswersG"
    clients = [
        WireConsumer("10.0.0.3@first", V3_0_7_SNAPSHOT, body=offsets_body(3, 9)),
        WireConsumer("10.0.0.4@refuses", 300, code=ResponseCode.SYSTEM_ERROR),
        # (offsets that come with a code other than SUCCESS are not taken either: RocketMQ reads a SUCCESS only)
        WireConsumer("10.0.0.8@refuses-with-offsets", 300, code=ResponseCode.SYSTEM_ERROR, body=offsets_body(1, 7)),
        WireConsumer("10.0.0.5@bodyless", 300),
        WireConsumer("10.0.0.6@garbled", 300, body=encode_body({"messageQueueTable": {"not a queue": 1}})),
        WireConsumer("10.0.0.7@last", 300, body=offsets_body(2, 4)),
    ]
    try:
        for c in clients:
            await c.join(cluster, group)
        assert consumer_table(await ask(cluster, group)) == {
            "10.0.0.3@first": {MessageQueue(TOPIC, "broker-a", 3): 9},
            "10.0.0.7@last": {MessageQueue(TOPIC, "broker-a", 2): 4},
        }
        assert [c.asked for c in clients] == [1] * len(clients)
    finally:
        for c in clients:
            await c.close()


async def test_pull_consumers_answer_their_offsets_other_consumers_none(cluster: EmbeddedCluster) -> None:
    # MQClientInstance.getConsumerStatus: the push and pull consumers' offset stores; a lite pull consumer (and
    # a push consumer that pops) holds none to give.
    mq = MessageQueue(TOPIC, "broker-a", 1)
    groups = cluster.broker.consumer_manager.consumer_table  # type: ignore[union-attr]
    async with PullConsumer("StatusPullG", cluster.namesrv_addr, instance_name="status-pull",
                            heartbeat_broker_interval=0.1) as puller:
        await puller.update_consume_offset(mq, 1, flush=False)
        lite = LitePullConsumer("StatusLiteG", cluster.namesrv_addr, instance_name="status-lite", **FAST)
        lite.subscribe(TOPIC, "*")
        await lite.start()
        try:
            await until(lambda: bool(lite.assignment()) and "StatusPullG" in groups)
            async with MQAdminExt(cluster.namesrv_addr) as admin:
                assert await admin.get_consume_status(TOPIC, "StatusPullG") == {puller.instance.client_id: {mq: 1}}
                assert await admin.get_consume_status(TOPIC, "StatusLiteG") == {lite.client_id: {}}
        finally:
            await lite.shutdown()
