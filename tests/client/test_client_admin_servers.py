"""The admin API's calls whose answers differ between brokers, against pocketmq (both protocols), Apache RocketMQ
4.9.7 and Apache RocketMQ 5.5.0 (the session's real servers, tests/apache/): deleting a group with its offsets
(4.9.x's removeOffset, 5.x's cleanOffset), one topic's config (5.x's GET_TOPIC_CONFIG, which 4.9.x lacks), an
offset reset with and without consumers (5.x resets on the broker and answers SUCCESS either way) and a running
consumer's offsets, which the broker asks of the consumer (pocketmq's client answering Apache's brokers). Then the
client's default msgpack protocol against Apache's name server, which closes the connection: the error must name
protocol='rocketmq'.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException, MQClientException, RemotingSendRequestError
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.codes import ResponseCode
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ
from tests.client.test_client_servers import POCKETMQ_BROKER, Server, push_consumer, unique, until, until_async

SERVERS = ["pocketmq-msgpack", "pocketmq-rocketmq", f"apache-{V4}", f"apache-{V5}"]


@pytest.fixture(params=SERVERS)
async def server(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Server]:
    kind = str(request.param)
    if kind.startswith("apache"):
        apache: ApacheRocketMQ = request.getfixturevalue("apache_rocketmq" if kind.endswith(V4) else "apache_rocketmq5")
        yield Server(kind, apache.namesrv_addr, "rocketmq", apache.broker_name, apache.cluster_name)
        return
    async with EmbeddedCluster(tmp_path, **POCKETMQ_BROKER) as cluster:
        yield Server(kind, cluster.namesrv_addr, kind.split("-")[1])


async def broker_address(admin: MQAdminExt, server: Server) -> str:
    info = await admin.examine_broker_cluster_info()
    return info.broker_addr_table[server.broker_name].broker_addrs[0]


async def committed(server: Server, topic: str, group: str, queues: int) -> None:
    """An offset of ``group`` for each queue of ``topic`` (a message in each, committed past)."""
    async with Producer(unique("AdmPG"), server.namesrv_addr, **server.options()) as producer:
        for q in range(queues):
            await producer.send(Message(topic, b"m%d" % q), MessageQueue(topic, server.broker_name, q))
    async with PullConsumer(group, server.namesrv_addr, **server.options()) as consumer:
        for q in range(queues):
            await consumer.update_consume_offset(MessageQueue(topic, server.broker_name, q), 1)


async def test_delete_subscription_group_removes_its_offsets(server: Server) -> None:
    topic, group = unique("AdmDel"), unique("AdmDelG")
    await server.create_topic(topic, 2)
    await committed(server, topic, group, 2)
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
        stats = await until_async(lambda: admin.examine_consume_stats(group, topic),
                                  lambda s: sorted(w.consumer_offset for w in s.offset_table.values()) == [1, 1])
        assert len(stats.offset_table) == 2
        addr = await broker_address(admin, server)
        assert await admin.delete_subscription_group(group, broker_addr=addr, remove_offset=True) == [addr]
        assert group not in await admin.get_all_subscription_group(addr)
        # (5.x's cleanOffset; 4.9.x's removeOffset: without the one its broker reads, the offsets stayed)
        with pytest.raises(MQClientException, match="Not found the consumer group consume stats"):
            await admin.examine_consume_stats(group)  # (the topics of the group's offsets: none left)


async def test_examine_topic_config_of_a_topic_and_of_none(server: Server) -> None:
    topic = unique("AdmCfg")
    await server.create_topic(topic, 3)
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
        addr = await broker_address(admin, server)
        config = await admin.examine_topic_config(addr, topic)  # (4.9.7: from GET_ALL_TOPIC_CONFIG)
        assert (config.topic_name, config.read_queue_nums, config.write_queue_nums) == (topic, 3, 3)
        with pytest.raises(MQBrokerException) as refused:
            await admin.examine_topic_config(addr, unique("AdmNone"))
        assert refused.value.code == ResponseCode.TOPIC_NOT_EXIST


async def test_reset_offset_online_only_with_consumers_running(server: Server) -> None:
    topic, group = unique("AdmRst"), unique("AdmRstG")
    await server.create_topic(topic, 2)
    async with Producer(unique("AdmRstPG"), server.namesrv_addr, **server.options()) as producer:
        for i in range(4):
            await producer.send(Message(topic, b"r%d" % i), MessageQueue(topic, server.broker_name, i % 2))
        consumed: list[bytes] = []

        async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
            consumed.extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        # (a small offset_illegal_delay: a 5.x broker answers the next pull OFFSET_MOVED to the reset offset; a
        # small reset_offset_settle_time: a 4.x or pocketmq broker pushes the reset to the consumer, which lets
        # its dropped queues settle for that long, RocketMQ's 10 s by default, before it takes the offsets)
        consumer = push_consumer(server, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                 offset_illegal_delay=0.05, reset_offset_settle_time=0.05)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
            try:
                await until(lambda: len(consumed) == 4)
                await until_async(lambda: admin.examine_consume_stats(group, topic),
                                  lambda s: s.compute_total_diff() == 0)
                running = await admin.reset_offset_by_timestamp(topic, group, 0)
                assert running.online and sorted(running.offsets.values()) == [0, 0]
                # A 5.x broker's running consumer moves at its next pull, which a new message wakes.
                await producer.send(Message(topic, b"wake"), MessageQueue(topic, server.broker_name, 0))
                await producer.send(Message(topic, b"wake"), MessageQueue(topic, server.broker_name, 1))
                await until(lambda: sorted(consumed).count(b"r0") == 2 and sorted(consumed).count(b"r3") == 2)
            finally:
                await consumer.shutdown()
            stopped = await admin.reset_offset_by_timestamp(topic, group, 0)
            assert not stopped.online and sorted(stopped.offsets.values()) == [0, 0]
            stats = await admin.examine_consume_stats(group, topic)
            assert sorted(w.consumer_offset for w in stats.offset_table.values()) == [0, 0]


async def test_consumer_status_of_a_running_push_consumer(server: Server) -> None:
    # The broker asks the consumer itself (GET_CONSUMER_STATUS_FROM_CLIENT): Apache's brokers ask pocketmq's client.
    topic, group = unique("AdmSts"), unique("AdmStsG")
    await server.create_topic(topic, 2)
    async with Producer(unique("AdmStsPG"), server.namesrv_addr, **server.options()) as producer:
        for i in range(4):
            await producer.send(Message(topic, b"s%d" % i), MessageQueue(topic, server.broker_name, i % 2))
    consumed: list[bytes] = []

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        consumed.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push_consumer(server, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    async with MQAdminExt(server.namesrv_addr, protocol=server.protocol) as admin:
        try:
            await until(lambda: len(consumed) == 4)
            want = {consumer.client_id: {MessageQueue(topic, server.broker_name, q): 2 for q in (0, 1)}}
            await until_async(lambda: admin.get_consume_status(topic, group), lambda s: s == want)
            assert await admin.get_consume_status(topic, group, consumer.client_id) == want
            assert await admin.get_consume_status(topic, group, "10.0.0.9@nobody") == {}
        finally:
            await consumer.shutdown()
        with pytest.raises(MQBrokerException) as refused:  # (no consumer of the group online)
            await admin.get_consume_status(topic, group)
        assert refused.value.code == ResponseCode.SYSTEM_ERROR


# --- the msgpack protocol against Apache's name server ---------------------------------------------------------


async def test_msgpack_client_against_apache_names_the_protocol(apache_rocketmq: ApacheRocketMQ) -> None:
    namesrv = apache_rocketmq.namesrv_addr  # (no protocol="rocketmq": the client's default, msgpack)
    # (NameServerProtocolError: an MQClientException, as a send's "No route info" was, and a
    # RemotingSendRequestError, as the admin's error was)
    hint = "closed the connection without answering: if it is Apache RocketMQ, use protocol='rocketmq'"
    async with Producer(unique("MsgpPG"), namesrv) as producer:
        with pytest.raises(MQClientException, match=hint):
            await producer.send(Message(unique("MsgpT"), b"x"))
    consumer = PushConsumer(unique("MsgpG"), namesrv)
    consumer.subscribe(unique("MsgpT"), "*")
    consumer.register_message_listener(lambda msgs, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    with pytest.raises(MQClientException, match=hint):
        await consumer.start()
    async with MQAdminExt(namesrv) as admin:
        with pytest.raises(RemotingSendRequestError, match=hint):  # (still the remoting error it was)
            await admin.examine_broker_cluster_info()
    async with MQAdminExt(namesrv, protocol="rocketmq") as admin:  # and the protocol named is the one that works
        assert apache_rocketmq.broker_name in (await admin.examine_broker_cluster_info()).broker_addr_table
