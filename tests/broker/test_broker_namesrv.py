"""Registration with real name servers: routes appear, follow topic changes and go away at shutdown."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import DeleteTopicFromNamesrvRequestHeader, DeleteTopicRequestHeader


def hold_port(port: int = 0) -> socket.socket:
    """A loopback port kept bound, not listening (a connection to it is refused as to a name server that is down),
    so that no other socket on the machine (the other test worker's clients) takes it before the test starts its
    name server there; close it just before."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    return s


@pytest.mark.both_loops
async def test_registration_makes_topics_routable_and_shutdown_removes_them(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert [r.ok for r in broker.registration.last_results] == [True]

    route = await mq.route_data(ns.address, "TBW102")
    assert route is not None
    [bd] = route.broker_datas
    assert (bd.cluster, bd.broker_name, bd.broker_addrs) == ("DefaultCluster", "broker-a", {0: broker.address})
    [qd] = route.queue_datas
    assert (qd.broker_name, qd.write_queue_nums, qd.perm) == ("broker-a", 8, 7)

    # A created topic is routable as soon as UPDATE_AND_CREATE_TOPIC returns.
    assert (await mq.create_topic("TopicRouted", queues=3)).code == ResponseCode.SUCCESS
    route = await mq.route_data(ns.address, "TopicRouted")
    assert route is not None and route.queue_datas[0].write_queue_nums == 3

    await broker.shutdown()
    assert (await mq.route(ns.address, "TopicRouted")).code == ResponseCode.TOPIC_NOT_EXIST
    assert ns.route_info_manager.broker_live_table == {}


async def test_auto_created_topic_is_registered_right_away(cluster, poll) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert (await mq.send("TopicAutoRouted", default_topic_queue_nums=2)).code == ResponseCode.SUCCESS

    # The periodic registration is 30 s away: only the change-triggered one can make this pass.
    await poll(lambda: "TopicAutoRouted" in ns.route_info_manager.topic_queue_table)
    route = await mq.route_data(ns.address, "TopicAutoRouted")
    assert route is not None and route.queue_datas[0].read_queue_nums == 2


async def test_an_auto_creating_send_is_answered_once_the_name_server_has_the_topic(cluster, poll) -> None:
    # The registration ran after the send's answer: a Go push consumer started on that answer (it asks for the
    # route at start) found no route in 13 of 20 tries. RocketMQ registers before it answers. Here a registration
    # in flight is stood in for by holding its lock: the send may not be answered before the topic's registration.
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    async with broker.registration.lock:
        send = asyncio.ensure_future(mq.send("TopicAutoWaits", default_topic_queue_nums=2))
        await poll(lambda: "TopicAutoWaits" in broker.topic_config_manager.topic_config_table)
        await asyncio.sleep(0.05)  # (the old answer went out in the turn that created the topic)
        assert not send.done()
    assert (await send).code == ResponseCode.SUCCESS
    assert (await mq.route(ns.address, "TopicAutoWaits")).code == ResponseCode.SUCCESS


async def test_two_name_servers_both_get_the_route(cluster) -> None:
    ns1, ns2 = await cluster.namesrv(), await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=f"{ns1.address};{ns2.address}")
    mq = cluster.mq(broker)
    await mq.create_topic("TopicTwice")
    for ns in (ns1, ns2):
        route = await mq.route_data(ns.address, "TopicTwice")
        assert route is not None and route.broker_datas[0].broker_addrs == {0: broker.address}
    await broker.shutdown()
    for ns in (ns1, ns2):
        assert (await mq.route(ns.address, "TopicTwice")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_unreachable_name_server_is_retried_each_period(cluster, poll) -> None:
    held = hold_port()
    port = held.getsockname()[1]
    late_addr = f"127.0.0.1:{port}"
    broker = await cluster.broker(namesrv_addr=late_addr, register_name_server_period=0.05)
    # Start-up does not fail: the registration result records the error.
    assert [r.ok for r in broker.registration.last_results] == [False]
    held.close()
    ns = NamesrvController(NamesrvConfig(listen_port=port))
    await ns.start()
    cluster.namesrvs.append(ns)
    await poll(lambda: broker.address in ns.route_info_manager.broker_live_table)


async def test_read_only_broker_advertises_read_only_topics(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address, broker_permission=4)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicRo", perm=6)
    route = await mq.route_data(ns.address, "TopicRo")
    assert route.queue_datas[0].perm == 4
    # The broker keeps the topic's own permission; only the advertisement is narrowed.
    assert broker.topic_config_manager.select_topic_config("TopicRo").perm == 6


async def test_a_permission_changed_at_run_time_reaches_the_name_server(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicPerm", perm=6)
    assert (await mq.route_data(ns.address, "TopicPerm")).queue_datas[0].perm == 6
    answer = await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n")
    assert answer.code == ResponseCode.SUCCESS
    assert (await mq.route_data(ns.address, "TopicPerm")).queue_datas[0].perm == 4
    await broker.register_broker_all()  # (a periodic registration afterwards keeps it)
    assert (await mq.route_data(ns.address, "TopicPerm")).queue_datas[0].perm == 4


async def test_topic_changes_reach_the_name_server_as_deltas(cluster, poll) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert [r.delta_accepted for r in broker.registration.last_results] == [False]  # the first one is whole
    for i in range(5):
        assert (await mq.send(f"TopicDelta{i}", default_topic_queue_nums=2)).code == ResponseCode.SUCCESS
    await mq.create_topic("TopicDelta0", queues=3)
    assert [r.delta_accepted for r in broker.registration.last_results] == [True]
    await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("TopicDelta1"))
    assert [r.delta_accepted for r in broker.registration.last_results] == [True]
    rim = ns.route_info_manager
    await poll(lambda: "TopicDelta4" in rim.topic_queue_table)
    assert rim.topic_queue_table["TopicDelta0"]["broker-a"].write_queue_nums == 3
    assert "TopicDelta1" not in rim.topic_queue_table
    assert set(rim.topic_queue_table) == set(broker.topic_config_manager.topic_config_table)
    assert rim.query_broker_topic_config(broker.address) == broker.topic_config_manager.data_version


async def test_a_restarted_name_server_gets_the_whole_table(cluster, poll) -> None:
    ns = NamesrvController(NamesrvConfig(listen_port=0))
    await ns.start()
    port = int(ns.address.rsplit(":", 1)[1])
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicBefore")
    await ns.shutdown()
    held = hold_port(port)
    await mq.create_topic("TopicWhileDown")  # this registration fails: the broker forgets the version acked
    assert [r.ok for r in broker.registration.last_results] == [False]
    held.close()
    ns = NamesrvController(NamesrvConfig(listen_port=port))
    await ns.start()
    cluster.namesrvs.append(ns)
    [result] = await broker.register_broker_all()  # what the periodic registration does
    assert result.ok and not result.delta_accepted
    assert set(ns.route_info_manager.topic_queue_table) == set(broker.topic_config_manager.topic_config_table)
    assert {"TopicBefore", "TopicWhileDown"} <= set(ns.route_info_manager.topic_queue_table)
    # Restarted while the broker was not looking (its version acked is stale there): the delta is refused and
    # the whole table follows in the same round.
    await ns.shutdown()
    ns = NamesrvController(NamesrvConfig(listen_port=port))
    await ns.start()
    cluster.namesrvs.append(ns)
    [result] = await broker.register_broker_all()
    assert result.ok and not result.delta_accepted
    assert "TopicBefore" in ns.route_info_manager.topic_queue_table
    [result] = await broker.register_broker_all()
    assert result.ok and result.delta_accepted  # from here on, heartbeats are empty deltas


async def test_topics_created_while_a_registration_is_in_flight_share_the_next_one(cluster, poll) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    registrations = []
    register = broker.broker_outer_api.register

    async def counted(*args, **kwargs):  # a spy: the real registration runs
        registrations.append(args[0])
        return await register(*args, **kwargs)

    broker.broker_outer_api.register = counted
    # Hold the registration lock as a registration in flight does (a periodic one, or the first topic's)
    # while 20 topics are created by sending: they all ride along in one registration once it is released.
    # (Each send's answer waits for the registration that carries its topic, so they are sent together.)
    async with broker.registration.lock:
        sends = [asyncio.ensure_future(mq.send(f"TopicBurst{i}", default_topic_queue_nums=2)) for i in range(20)]
        table = broker.topic_config_manager.topic_config_table
        await poll(lambda: all(f"TopicBurst{i}" in table for i in range(20)))
    assert {a.code for a in await asyncio.gather(*sends)} == {ResponseCode.SUCCESS}
    rim = ns.route_info_manager
    assert all(f"TopicBurst{i}" in rim.topic_queue_table for i in range(20))
    assert registrations == [ns.address]


@pytest.mark.parametrize("compressed", [False, True], ids=["json", "compressed"])
async def test_native_registration_routes_topics_in_rocketmq_encoding(cluster, poll, compressed) -> None:
    # namesrvProtocol=rocketmq: native frames and RocketMQ's RegisterBrokerBody (what an Apache RocketMQ name server
    # reads, tests/apache/test_mixed_cluster.py); pocketmq's name server reads it too. Whole tables every time.
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address, namesrv_protocol="rocketmq",
                                  compressed_register=compressed)
    mq = cluster.mq(broker)
    assert [r.ok for r in broker.registration.last_results] == [True]
    await mq.create_topic("TopicNative", queues=3)
    route = await mq.route_data(ns.address, "TopicNative")
    assert route is not None and (route.queue_datas[0].write_queue_nums, route.queue_datas[0].perm) == (3, 6)
    assert [(r.ok, r.delta_accepted) for r in broker.registration.last_results] == [(True, False)]
    await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("TopicNative"))
    rim = ns.route_info_manager
    await poll(lambda: rim.query_broker_topic_config(broker.address) == broker.topic_config_manager.data_version)
    # As RocketMQ's name server: a whole table that no longer lists a topic leaves its route (mqadmin deleteTopic
    # removes it from the name servers after the brokers).
    assert "TopicNative" in rim.topic_queue_table
    deleted = await mq.invoke(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicNative"),
                              addr=ns.address)
    assert deleted.code == ResponseCode.SUCCESS
    assert set(rim.topic_queue_table) == set(broker.topic_config_manager.topic_config_table)
    assert rim.query_broker_topic_config(broker.address) == broker.topic_config_manager.data_version
    # The compressed form carries no topicSysFlag/order (RocketMQ's text form of a TopicConfig); JSON does.
    await broker.shutdown()
    assert ns.route_info_manager.broker_live_table == {}


async def test_heartbeat_timeout_of_a_registration_replaces_the_name_server_expiry(cluster, poll) -> None:
    ns = await cluster.namesrv(scan_not_active_broker_interval=0.02)
    broker = await cluster.broker(namesrv_addr=ns.address, broker_not_active_timeout=0.3,
                                  register_name_server_period=30.0)
    live = ns.route_info_manager.broker_live_table[broker.address]
    assert live.heartbeat_timeout == 0.3  # the name server's own expiry is 120 s
    await poll(lambda: broker.address not in ns.route_info_manager.broker_live_table, timeout=10)


async def test_a_send_that_failed_after_creating_its_topic_leaves_no_wait_to_the_next_send(cluster) -> None:
    # The flag that makes a creating send wait for its registration stayed set when the put raised something
    # else than the store's own refusals, and the next send (any topic) waited for that registration too. A store
    # that raises is a fault pocketmq cannot produce for real: the put is replaced for one call (said here).
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert (await mq.send("TopicThere")).code == ResponseCode.SUCCESS
    store = broker.store
    put = store.put_message_nowait

    def broken(msg):
        store.put_message_nowait = put
        raise RuntimeError("a store bug")

    store.put_message_nowait = broken
    async with broker.registration.lock:  # (TopicBrokenPut's registration stays pending meanwhile)
        assert (await mq.send("TopicBrokenPut", default_topic_queue_nums=2)).code != ResponseCode.SUCCESS
        assert "TopicBrokenPut" in broker.topic_config_manager.topic_config_table
        # Answered while that registration still waits (the old wait was bounded at 3 s).
        assert (await asyncio.wait_for(mq.send("TopicThere"), 2.0)).code == ResponseCode.SUCCESS
