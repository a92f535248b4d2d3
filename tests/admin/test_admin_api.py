"""The admin requests of brokers and name servers, through MQAdminExt over real sockets, in both wire protocols
(msgpack and RocketMQ's native one), against a cluster of two brokers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from pocketmq.client import Message, MessageQueue, Producer, PullConsumer, PushConsumer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.consumer.message_listener import ConsumeConcurrentlyStatus
from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand


async def ok(msgs: list[Any], ctx: Any) -> ConsumeConcurrentlyStatus:
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


async def routed(cluster: Any, topic: str, brokers: int) -> None:
    table = cluster.namesrv.route_info_manager.topic_queue_table
    for _ in range(1500):  # (under the broker's periodic registration)
        if len(table.get(topic, {})) >= brokers:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{topic} not routed on {brokers} brokers")


async def test_clusters_topics_and_routes(cluster2: Any, admin: MQAdminExt) -> None:
    info = await admin.examine_broker_cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a", "broker-b"}}
    masters = await admin.master_addrs("DefaultCluster")
    assert masters == {"broker-a": cluster2.brokers[0].address, "broker-b": cluster2.brokers[1].address}

    addrs = await admin.create_topic(TopicConfig("TopicTwo", 3, 3), cluster="DefaultCluster")
    assert sorted(addrs) == sorted(masters.values())
    await admin.create_topic(TopicConfig("TopicOne", 2, 2, perm=4), broker_addr=masters["broker-b"])
    route = await admin.examine_topic_route_info("TopicTwo")
    assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
    assert [(q.broker_name, q.perm) for q in (await admin.examine_topic_route_info("TopicOne")).queue_datas] == [
        ("broker-b", 4)
    ]
    assert {"TopicOne", "TopicTwo"} <= set(await admin.fetch_all_topic_list())
    assert "TopicTwo" in await admin.fetch_topics_by_cluster("DefaultCluster")
    assert await admin.fetch_topics_by_cluster("NoSuchCluster") == []
    configs = (await admin.get_all_topic_config(masters["broker-a"])).topic_config_table
    assert configs["TopicTwo"].write_queue_nums == 3 and "TopicOne" not in configs

    await admin.delete_topic("TopicTwo", "DefaultCluster")
    with pytest.raises(MQClientException) as e:
        await admin.examine_topic_route_info("TopicTwo")
    assert e.value.response_code == ResponseCode.TOPIC_NOT_EXIST
    with pytest.raises(MQClientException, match="cluster 'Nope' not found"):
        await admin.create_topic(TopicConfig("X"), cluster="Nope")


async def test_typed_topic(cluster2: Any, admin: MQAdminExt) -> None:
    """RocketMQ 5's attributes through the admin API, in both wire protocols: a plain key is an addition."""
    addr = cluster2.brokers[0].address
    await admin.create_topic(TopicConfig("TopicTyped", 2, 2, attributes={"message.type": "FIFO"}), broker_addr=addr)
    tc = await admin.examine_topic_config(addr, "TopicTyped")
    assert (tc.write_queue_nums, tc.attributes) == (2, {"message.type": "FIFO"})
    configs = (await admin.get_all_topic_config(addr)).topic_config_table
    assert configs["TopicTyped"].attributes == {"message.type": "FIFO"}
    await admin.create_topic(TopicConfig("TopicTyped", 2, 2, attributes={"-message.type": ""}), broker_addr=addr)
    assert (await admin.examine_topic_config(addr, "TopicTyped")).attributes == {}
    with pytest.raises(MQBrokerException, match="No topic in this broker. topic: NoSuchTopic"):
        await admin.examine_topic_config(addr, "NoSuchTopic")


async def test_topic_stats_consume_stats_and_who_consumes(cluster2: Any, admin: MQAdminExt, protocol: str) -> None:
    await admin.create_topic(TopicConfig("TopicStat", 2, 2), cluster="DefaultCluster")
    await routed(cluster2, "TopicStat", 2)
    async with Producer("PGStat", cluster2.namesrv_addr, protocol=protocol) as producer:
        for broker in ("broker-a", "broker-b"):
            for i in range(3):
                await producer.send(Message("TopicStat", b"m%d" % i), MessageQueue("TopicStat", broker, 1))
    assert await cluster2.wait_dispatched()

    stats = await admin.examine_topic_stats("TopicStat")
    assert len(stats.offset_table) == 4
    q = stats.offset_table[MessageQueue("TopicStat", "broker-b", 1)]
    assert (q.min_offset, q.max_offset) == (0, 3) and q.last_update_timestamp > 0
    assert stats.offset_table[MessageQueue("TopicStat", "broker-a", 0)].max_offset == 0
    one = await admin.examine_topic_stats("TopicStat", broker_addr=cluster2.brokers[1].address)  # that broker alone
    assert {mq.broker_name for mq in one.offset_table} == {"broker-b"} and len(one.offset_table) == 2

    async with PullConsumer("GStat", cluster2.namesrv_addr, protocol=protocol) as consumer:
        mq = MessageQueue("TopicStat", "broker-a", 1)
        got = await consumer.pull(mq, "*", 0, 2)
        assert len(got.msg_found_list) == 2
        await consumer.update_consume_offset(mq, 2)
    broker_a = cluster2.brokers[0]
    for _ in range(3000):
        if broker_a.consumer_offset_manager.query_offset("GStat", "TopicStat", 1) == 2:
            break
        await asyncio.sleep(0.01)
    cs = await admin.examine_consume_stats("GStat", "TopicStat")
    w = cs.offset_table[MessageQueue("TopicStat", "broker-a", 1)]
    assert (w.broker_offset, w.consumer_offset) == (3, 2) and w.last_timestamp > 0
    assert cs.compute_total_diff() == 1 + 3  # broker-a queue 1: 1 behind; broker-b queue 1: nothing consumed
    only_a = await admin.examine_consume_stats("GStat", broker_addr=broker_a.address)
    assert {mq.broker_name for mq in only_a.offset_table} == {"broker-a"} and only_a.compute_total_diff() == 1
    for _ in range(1500):  # the consume TPS comes from the stats timer's next snapshot
        cs = await admin.examine_consume_stats("GStat", "TopicStat")
        if cs.consume_tps > 0:
            break
        await asyncio.sleep(0.02)
    assert cs.consume_tps > 0
    assert "GStat" in await admin.query_topic_consume_by_who("TopicStat")
    with pytest.raises(MQClientException, match="consume stats"):
        await admin.examine_consume_stats("NoSuchGroup")  # no offsets anywhere: nothing to show

    runtime = await admin.fetch_broker_runtime_stats(broker_a.address)
    assert runtime["brokerVersionDesc"] == "V4_9_8"
    assert int(runtime["msgPutTotalTodayNow"]) == 3 and int(runtime["msgGetTotalTodayNow"]) == 2
    assert float(runtime["putTps"].split()[0]) >= 0 and "commitLogDiskRatio" in runtime


async def test_subscription_groups(cluster2: Any, admin: MQAdminExt) -> None:
    cfg = SubscriptionGroupConfig("GroupAdm", retry_max_times=3, consume_broadcast_enable=False)
    await admin.create_subscription_group(cfg, cluster="DefaultCluster")
    for b in cluster2.brokers:
        got = (await admin.get_all_subscription_group(b.address))["GroupAdm"]
        assert (got.retry_max_times, got.consume_broadcast_enable) == (3, False)
    b = cluster2.brokers[1]
    b.consumer_offset_manager.commit_offset("test", "GroupAdm", "T", 0, 5)
    await admin.delete_subscription_group("GroupAdm", broker_addr=b.address, remove_offset=True)
    assert "GroupAdm" not in await admin.get_all_subscription_group(b.address)
    assert "GroupAdm" in await admin.get_all_subscription_group(cluster2.brokers[0].address)
    assert b.consumer_offset_manager.query_offset("GroupAdm", "T", 0) == -1


async def test_connections_and_running_info(cluster2: Any, admin: MQAdminExt, protocol: str) -> None:
    await admin.create_topic(TopicConfig("TopicConn", 2, 2), cluster="DefaultCluster")
    await routed(cluster2, "TopicConn", 2)
    consumer = PushConsumer("GConn", cluster2.namesrv_addr, protocol=protocol)
    consumer.subscribe("TopicConn", "*")
    consumer.register_message_listener(ok)
    async with Producer("PGConn", cluster2.namesrv_addr, protocol=protocol, heartbeat_broker_interval=0.05) as producer:
        await producer.send(Message("TopicConn", b"x"))
        await consumer.start()
        try:
            cc = await admin.examine_consumer_connection_info("GConn")
            assert [c.language for c in cc.connection_set] == ["PYTHON"]
            assert cc.message_model == "CLUSTERING" and "TopicConn" in cc.subscription_table
            client_id = cc.connection_set[0].client_id
            for _ in range(1000):  # the producer is known to a broker from its first heartbeat on
                if cluster2.brokers[0].producer_manager.group_channel_table.get("PGConn"):
                    break
                await asyncio.sleep(0.01)
            pc = await admin.examine_producer_connection_info("PGConn", "TopicConn")
            assert len(pc.connection_set) == 1 and pc.connection_set[0].version > 0
            info = await admin.get_consumer_running_info("GConn", client_id)
            assert info.properties["consumerGroup"] == "GConn"
            assert {s.topic for s in info.subscription_set} >= {"TopicConn", "%RETRY%GConn"}
            with pytest.raises(MQBrokerException) as e:
                await admin.get_consumer_running_info("GConn", "nobody@0")
            assert "not online" in (e.value.remark or "")
        finally:
            await consumer.shutdown()
    with pytest.raises(MQBrokerException):
        await admin.examine_producer_connection_info("NoGroup", "TopicConn")


async def test_kv_config_on_the_name_server(cluster2: Any, admin: MQAdminExt) -> None:
    assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "T") is None
    await admin.put_kv_config("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    await admin.put_kv_config("ORDER_TOPIC_CONFIG", "U", "broker-b:2")
    assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "T") == "broker-a:4"
    assert await admin.get_kv_list_by_namespace("ORDER_TOPIC_CONFIG") == {"T": "broker-a:4", "U": "broker-b:2"}
    await admin.delete_kv_config("ORDER_TOPIC_CONFIG", "T")
    assert await admin.get_kv_list_by_namespace("ORDER_TOPIC_CONFIG") == {"U": "broker-b:2"}
    assert await admin.get_kv_list_by_namespace("NONE") == {}


async def test_name_server_config_get_update_and_order_topic_conf(cluster2: Any, admin: MQAdminExt,
                                                                   protocol: str) -> None:
    """RocketMQ's orderMessageEnable, turned on at run time: a route then carries the topic's ORDER_TOPIC_CONFIG
    entry, and a producer sends to the queues it names, not to the route's."""
    ns = cluster2.namesrv_addr
    conf = (await admin.get_name_server_config())[ns]
    assert conf["listenPort"] == ns.rsplit(":", 1)[1] and conf["orderMessageEnable"] == "false"
    assert conf["scanNotActiveBrokerInterval"] == "10000"
    await admin.create_topic(TopicConfig("TopicOrdered", 4, 4), cluster="DefaultCluster")
    await routed(cluster2, "TopicOrdered", 2)
    await admin.put_kv_config("ORDER_TOPIC_CONFIG", "TopicOrdered", "broker-b:2")
    assert (await admin.examine_topic_route_info("TopicOrdered")).order_topic_conf is None  # (off by default)
    assert await admin.update_name_server_config({"orderMessageEnable": "true",
                                                  "brokerChannelExpiredTime": "60000"}) == [ns]
    assert (await admin.get_name_server_config())[ns]["orderMessageEnable"] == "true"
    assert cluster2.namesrv.route_info_manager.broker_channel_expired_time == 60.0
    assert (await admin.examine_topic_route_info("TopicOrdered")).order_topic_conf == "broker-b:2"
    async with Producer("PGOrdered", ns, protocol=protocol) as producer:
        queues = {(r.message_queue.broker_name, r.message_queue.queue_id)
                  for r in [await producer.send(Message("TopicOrdered", b"x")) for _ in range(8)]}
    assert queues == {("broker-b", 0), ("broker-b", 1)}

    with pytest.raises(MQBrokerException, match="Can not update config path") as e:
        await admin.update_name_server_config({"kvConfigPath": "/tmp/elsewhere"})
    assert e.value.response_code == ResponseCode.NO_PERMISSION
    with pytest.raises(MQBrokerException, match="cannot change at run time"):
        await admin.update_name_server_config({"listenPort": "1"})
    with pytest.raises(MQBrokerException, match="unknown name server config key"):
        await admin.update_name_server_config({"noSuchKey": "1"})
    with pytest.raises(MQBrokerException, match="bad value for orderMessageEnable"):
        await admin.update_name_server_config({"orderMessageEnable": "maybe"})
    with pytest.raises(MQBrokerException, match="bad value for scanNotActiveBrokerInterval"):
        await admin.update_name_server_config({"scanNotActiveBrokerInterval": "0"})
    with pytest.raises(MQBrokerException, match="bad value for brokerChannelExpiredTime"):
        await admin.update_name_server_config({"brokerChannelExpiredTime": "NaN"})
    # (a body Java's Properties.load throws on: RocketMQ answers SYSTEM_ERROR "string2Properties error")
    malformed = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=\\u12\n")
    answer = await admin.api.remoting_client.invoke(ns, malformed, 3.0)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")
    assert cluster2.namesrv.config.order_message_enable is True  # (a refused update changes nothing)


async def test_broker_config_get_and_update_at_run_time(cluster2: Any, admin: MQAdminExt) -> None:
    addr = cluster2.brokers[1].address
    conf = await admin.get_broker_config(addr)
    assert conf["brokerName"] == "broker-b" and conf["autoCreateTopicEnable"] == "true"
    await admin.update_broker_config(addr, {"autoCreateTopicEnable": "false", "defaultTopicQueueNums": "2"})
    assert cluster2.brokers[1].broker_config.auto_create_topic_enable is False
    assert (await admin.get_broker_config(addr))["defaultTopicQueueNums"] == "2"
    with pytest.raises(MQBrokerException, match="cannot change at run time"):
        await admin.update_broker_config(addr, {"listenPort": "1"})
    with pytest.raises(MQBrokerException, match="unknown broker config key"):
        await admin.update_broker_config(addr, {"noSuchKey": "1"})
    with pytest.raises(MQBrokerException, match="bad value"):
        await admin.update_broker_config(addr, {"autoCreateTopicEnable": "maybe"})
    with pytest.raises(MQBrokerException, match="bad value for shortPollingTimeMills"):
        await admin.update_broker_config(addr, {"shortPollingTimeMills": "NaN"})
    assert cluster2.brokers[1].broker_config.default_topic_queue_nums == 2


async def test_message_lookups_by_either_id_key_and_offset(cluster2: Any, admin: MQAdminExt, protocol: str) -> None:
    await admin.create_topic(TopicConfig("TopicFind", 2, 2), cluster="DefaultCluster")
    await routed(cluster2, "TopicFind", 2)
    async with Producer("PGFind", cluster2.namesrv_addr, protocol=protocol) as producer:
        sent = await producer.send(
            Message("TopicFind", b"needle", keys="order-7"), MessageQueue("TopicFind", "broker-b", 1)
        )
    assert await cluster2.wait_dispatched()
    by_uniq = await admin.view_message(sent.msg_id, "TopicFind")
    by_offset = await admin.view_message(sent.offset_msg_id)
    no_topic = await admin.view_message(sent.msg_id)
    for m in (by_uniq, by_offset, no_topic):
        assert m is not None and m.body == b"needle" and m.offset_msg_id == sent.offset_msg_id
    assert [m.body for m in await admin.query_message("TopicFind", "order-7")] == [b"needle"]
    assert (await admin.query_message_by_unique_key("TopicFind", sent.msg_id)).msg_id == sent.msg_id  # type: ignore[union-attr]
    at = await admin.query_message_by_offset("TopicFind", "broker-b", 1, 0)
    assert at is not None and at.msg_id == sent.msg_id
    assert await admin.query_message_by_offset("TopicFind", "broker-b", 1, 5) is None
    assert await admin.view_message("0" * 32, "TopicFind") is None


async def test_reset_offset_online_to_a_running_push_consumer_and_offline(
    cluster2: Any, admin: MQAdminExt, protocol: str
) -> None:
    topic, group = "TopicReset", "GReset"
    await admin.create_topic(TopicConfig(topic, 1, 1), broker_addr=cluster2.brokers[0].address)
    await routed(cluster2, topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    async with Producer("PGReset", cluster2.namesrv_addr, protocol=protocol) as producer:
        for i in range(4):
            await producer.send(Message(topic, b"%d" % i), mq)
    assert await cluster2.wait_dispatched()
    seen: list[bytes] = []
    consumer = PushConsumer(
        group,
        cluster2.namesrv_addr,
        protocol=protocol,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        reset_offset_settle_time=0.05,
        persist_consumer_offset_interval=0.05,
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[Any], ctx: Any) -> ConsumeConcurrentlyStatus:
        seen.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    await consumer.start()
    om = cluster2.brokers[0].consumer_offset_manager
    try:
        for _ in range(3000):
            if len(seen) >= 4 and om.query_offset(group, topic, 0) == 4:
                break
            await asyncio.sleep(0.01)
        assert sorted(seen) == [b"0", b"1", b"2", b"3"] and om.query_offset(group, topic, 0) == 4
        # Online: back to the start (timestamp 0 = the first message); the running consumer gets all four again.
        result = await admin.reset_offset_by_timestamp(topic, group, 0)
        assert result.online and result.offsets == {mq: 0}
        for _ in range(3000):
            if len(seen) >= 8:
                break
            await asyncio.sleep(0.01)
        assert sorted(seen[4:]) == [b"0", b"1", b"2", b"3"]
    finally:
        await consumer.shutdown()
    # Offline: no consumer runs; the stored offset is set directly.
    result = await admin.reset_offset_by_timestamp(topic, group, int(time.time() * 1000) + 60_000)
    assert not result.online and result.offsets == {mq: 4}
    result = await admin.reset_offset_by_timestamp(topic, group, 0)
    assert om.query_offset(group, topic, 0) == 0 and result.offsets == {mq: 0}


async def test_an_offline_reset_that_only_moves_back_writes_no_offset_it_would_not_change(
    cluster2: Any, admin: MQAdminExt
) -> None:
    # It wrote every queue's offset back, so a queue the group never committed got offset 0 (its whole history
    # consumed again), and one the group committed in the meantime could move back (resetOffsetConsumeOffset).
    topic, group = "TopicRstOff", "GRstOff"
    await admin.create_topic(TopicConfig(topic, 2, 2), broker_addr=cluster2.brokers[0].address)
    await routed(cluster2, topic, 1)
    async with Producer("PGRstOff", cluster2.namesrv_addr) as producer:
        for queue_id in (0, 1):
            await producer.send(Message(topic, b"x"), MessageQueue(topic, "broker-a", queue_id))
    assert await cluster2.wait_dispatched()
    # (the group exists, as a consumer's heartbeat would have made it: a broker refuses a commit for a group it
    # does not have, as RocketMQ 5's does)
    await admin.create_and_update_subscription_group_config(
        cluster2.brokers[0].address, SubscriptionGroupConfig(group)
    )
    om = cluster2.brokers[0].consumer_offset_manager
    om.commit_offset("test", group, topic, 0, 1)
    result = await admin.reset_offset_by_timestamp(topic, group, int(time.time() * 1000) + 60_000, force=False)
    assert not result.online
    assert {mq.queue_id: o for mq, o in result.offsets.items()} == {0: 1, 1: 0}
    assert (om.query_offset(group, topic, 0), om.query_offset(group, topic, 1)) == (1, -1)


async def test_consume_time_span(cluster2: Any, admin: MQAdminExt) -> None:
    topic, group = "TopicSpan", "GSpan"
    await admin.create_topic(TopicConfig(topic, 2, 2), broker_addr=cluster2.brokers[0].address)
    await routed(cluster2, topic, 1)
    async with Producer("PGSpan", cluster2.namesrv_addr) as producer:
        sent = [await producer.send(Message(topic, b"%d" % i), MessageQueue(topic, "broker-a", 0)) for i in range(2)]
    assert await cluster2.wait_dispatched()
    cluster2.brokers[0].consumer_offset_manager.commit_offset("test", group, topic, 0, 1)
    stored = [(await admin.view_message(s.offset_msg_id)).store_timestamp for s in sent]
    spans = {s.message_queue.queue_id: s for s in await admin.query_consume_time_span(topic, group)}
    q0, q1 = spans[0], spans[1]
    # (the group is at message 1: it consumed message 0, and message 1 waits)
    assert (q0.min_time_stamp, q0.max_time_stamp, q0.consume_time_stamp) == (stored[0], stored[1], stored[0])
    assert q0.delay_time >= 0
    assert (q1.min_time_stamp, q1.max_time_stamp, q1.consume_time_stamp) == (-1, -1, -1)  # (empty, as Apache's)
    with pytest.raises(MQClientException):
        await admin.query_consume_time_span("NoSuchTopic", group)


async def test_clone_group_offset_and_correction_offsets(cluster2: Any, admin: MQAdminExt) -> None:
    topic = "TopicClone"
    await admin.create_topic(TopicConfig(topic, 2, 2), cluster="DefaultCluster")
    await routed(cluster2, topic, 2)
    a, b = cluster2.brokers
    for broker, offset in ((a, 4), (b, 6)):
        broker.consumer_offset_manager.commit_offset("test", "GSrc", topic, 0, offset)
        broker.consumer_offset_manager.commit_offset("test", "GLow", topic, 0, 1)
    assert sorted(await admin.clone_group_offset("GSrc", "GDest", topic)) == sorted([a.address, b.address])
    assert [x.consumer_offset_manager.query_offset_table("GDest", topic) for x in (a, b)] == [{0: 4}, {0: 6}]
    assert await admin.query_correction_offset(b.address, topic, "GSrc") == {0: 1}
    assert await admin.query_correction_offset(b.address, topic, "GSrc", ["GLow", "GDest"]) == {0: 6}
    assert await admin.query_correction_offset(b.address, topic, "GSrc", []) == {0: 1}
    # Without a topic: each topic of the group, at the brokers of its retry topic (which a group that never
    # consumed lacks).
    with pytest.raises(MQClientException):
        await admin.clone_group_offset("GSrc", "GAll", None)
    await admin.create_topic(TopicConfig("%RETRY%GSrc", 1, 1), broker_addr=a.address)
    await routed(cluster2, "%RETRY%GSrc", 1)
    assert await admin.clone_group_offset("GSrc", "GAll", None) == [a.address]
    assert [x.consumer_offset_manager.query_offset_table("GAll", topic) for x in (a, b)] == [{0: 4}, {}]


async def test_get_topic_config_answers_what_rocketmq_5_asks(cluster2: Any, protocol: str) -> None:
    """GET_TOPIC_CONFIG (351), which mqadmin 5.x's topicStatus sends each broker of the route first: the
    topic's config with its attributes, or TOPIC_NOT_EXIST."""
    from pocketmq.remoting.admin_header import GetTopicConfigRequestHeader
    from pocketmq.remoting.client import RemotingClient
    from pocketmq.remoting.codes import RequestCode, ResponseCode
    from pocketmq.remoting.command import RemotingCommand
    from pocketmq.remoting.wire_protocol import WireProtocol

    async with MQAdminExt(cluster2.namesrv_addr, protocol=protocol) as admin:
        await admin.create_topic(TopicConfig("TopicCfg5", 3, 2, perm=4), cluster="DefaultCluster")
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE if protocol == "rocketmq" else WireProtocol.MSGPACK)
    try:
        addr = cluster2.brokers[0].address
        ok = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG,
                                                               GetTopicConfigRequestHeader("TopicCfg5", True)), 5)
        missing = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG,
                                                                    GetTopicConfigRequestHeader("NoSuchTopic")), 5)
    finally:
        await client.close()
    assert ok.code == ResponseCode.SUCCESS
    body = ok.decode_body()
    assert (body["topicName"], body["readQueueNums"], body["writeQueueNums"], body["perm"]) == ("TopicCfg5", 3, 2, 4)
    assert body["attributes"] == {} and "mappingDetail" not in body
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in (missing.remark or "")
