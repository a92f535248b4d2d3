"""RouteInfoManager: the routing tables, without I/O, on a fake clock."""

from __future__ import annotations

import pytest

from pocketmq.namesrv.route_info_manager import RouteInfoManager
from pocketmq.remoting.body import DataVersion, QueueData, TopicConfig, TopicConfigSerializeWrapper
from pocketmq.remoting.codes import PermName

CLUSTER = "DefaultCluster"
A_MASTER, A_SLAVE, B_MASTER = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
RW = PermName.PERM_READ | PermName.PERM_WRITE


def wrapper(version: int, **topics: tuple[int, int]) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {name: TopicConfig(name, r, w) for name, (r, w) in topics.items()},
        DataVersion(timestamp=1, counter=version),
    )


@pytest.fixture
def rim(clock) -> RouteInfoManager:
    return RouteInfoManager(broker_channel_expired_time=120.0, clock=clock)


def register(rim: RouteInfoManager, addr: str, name: str, broker_id: int, w, channel=None, cluster=CLUSTER):
    return rim.register_broker(cluster, addr, name, broker_id, addr.replace("10911", "10912"), w, channel)


def test_master_registration_creates_the_route(rim: RouteInfoManager) -> None:
    result = register(rim, A_MASTER, "broker-a", 0, wrapper(1, TopicA=(8, 4)))
    assert (result.master_addr, result.ha_server_addr) == (None, None)
    route = rim.pick_topic_route_data("TopicA")
    assert route is not None
    assert route.queue_datas == [QueueData("broker-a", 8, 4, RW, 0)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        (CLUSTER, "broker-a", {0: A_MASTER})
    ]
    assert rim.pick_topic_route_data("Unknown") is None
    assert rim.cluster_addr_table == {CLUSTER: {"broker-a"}}


def test_route_is_a_copy(rim: RouteInfoManager) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(1, 1)))
    route = rim.pick_topic_route_data("T")
    route.broker_datas[0].broker_addrs[5] = "x"
    route.queue_datas[0].perm = 0
    again = rim.pick_topic_route_data("T")
    assert again.broker_datas[0].broker_addrs == {0: A_MASTER} and again.queue_datas[0].perm == RW


def test_slave_learns_master_and_adds_no_queue_data(rim: RouteInfoManager) -> None:
    early = register(rim, A_SLAVE, "broker-a", 1, wrapper(1, SlaveOnly=(1, 1)))
    assert early.master_addr is None  # no master registered yet
    assert rim.pick_topic_route_data("SlaveOnly") is None
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, TopicA=(4, 4)))
    late = register(rim, A_SLAVE, "broker-a", 1, wrapper(2, TopicA=(4, 4), SlaveOnly=(1, 1)))
    assert (late.master_addr, late.ha_server_addr) == (A_MASTER, "10.0.0.1:10912")
    route = rim.pick_topic_route_data("TopicA")
    assert route.broker_datas[0].broker_addrs == {0: A_MASTER, 1: A_SLAVE}
    assert rim.pick_topic_route_data("SlaveOnly") is None


def test_queue_data_is_rebuilt_only_when_the_data_version_changes(rim: RouteInfoManager) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)))
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(16, 16)))  # same version: ignored
    assert rim.pick_topic_route_data("T").queue_datas[0].read_queue_nums == 4
    register(rim, A_MASTER, "broker-a", 0, wrapper(2, T=(16, 16)))
    assert rim.pick_topic_route_data("T").queue_datas[0].read_queue_nums == 16
    assert rim.broker_live_table[A_MASTER].data_version == DataVersion(1, 2)


def test_a_table_of_one_new_topic_keeps_the_brokers_other_routes(rim: RouteInfoManager) -> None:
    # RocketMQ 4.9.x registers a topic created on it (updateTopic) as a table of that topic alone: as Apache's
    # name server (deleteTopicWithBrokerRegistration off), the routes it does not list stay.
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, Shared=(4, 4), OnlyA=(2, 2)))
    register(rim, A_MASTER, "broker-a", 0, wrapper(2, New=(1, 1)))
    for topic in ("Shared", "OnlyA", "New"):
        assert [q.broker_name for q in rim.pick_topic_route_data(topic).queue_datas] == ["broker-a"]


def test_a_topic_dropped_by_the_broker_leaves_its_route(clock) -> None:
    rim = RouteInfoManager(clock=clock, delete_topic_with_broker_registration=True)
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, Shared=(4, 4), OnlyA=(2, 2)))
    register(rim, B_MASTER, "broker-b", 0, wrapper(1, Shared=(4, 4)))
    register(rim, A_MASTER, "broker-a", 0, wrapper(2, Kept=(1, 1)))
    assert rim.pick_topic_route_data("OnlyA") is None
    assert "OnlyA" not in rim.topic_queue_table
    shared = rim.pick_topic_route_data("Shared")
    assert [q.broker_name for q in shared.queue_datas] == ["broker-b"]
    assert [b.broker_name for b in shared.broker_datas] == ["broker-b"]
    assert rim.pick_topic_route_data("Kept") is not None


def test_first_registration_after_removal_rebuilds_even_with_the_same_version(rim: RouteInfoManager) -> None:
    channel = object()
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)), channel)
    rim.on_channel_destroy(channel)
    assert rim.pick_topic_route_data("T") is None
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)))
    assert rim.pick_topic_route_data("T") is not None


def test_promoted_slave_keeps_one_id_per_address(rim: RouteInfoManager) -> None:
    register(rim, A_SLAVE, "broker-a", 1, wrapper(1, T=(1, 1)))
    register(rim, A_SLAVE, "broker-a", 0, wrapper(1, T=(1, 1)))
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A_SLAVE}
    assert rim.pick_topic_route_data("T") is not None


def test_unregister_keeps_queue_data_while_a_slave_remains(rim: RouteInfoManager) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)))
    register(rim, A_SLAVE, "broker-a", 1, wrapper(1, T=(4, 4)))
    rim.unregister_broker(CLUSTER, A_MASTER, "broker-a", 0)
    route = rim.pick_topic_route_data("T")
    assert route.broker_datas[0].broker_addrs == {1: A_SLAVE}
    assert A_MASTER not in rim.broker_live_table
    rim.unregister_broker(CLUSTER, A_SLAVE, "broker-a", 1)
    assert rim.pick_topic_route_data("T") is None
    assert rim.broker_addr_table == {} and rim.cluster_addr_table == {} and rim.topic_queue_table == {}


def test_scan_drops_brokers_silent_for_longer_than_the_expiry(rim: RouteInfoManager, clock) -> None:
    ch_a, ch_b = object(), object()
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)), ch_a)
    register(rim, B_MASTER, "broker-b", 0, wrapper(1, T=(4, 4)), ch_b)
    clock.advance(100)
    register(rim, B_MASTER, "broker-b", 0, wrapper(1, T=(4, 4)), ch_b)  # b keeps heartbeating
    clock.advance(20)
    assert rim.scan_not_active_broker() == {}  # a: exactly 120 s is not yet expired
    clock.advance(0.5)
    expired = rim.scan_not_active_broker()
    assert list(expired) == [A_MASTER] and expired[A_MASTER].channel is ch_a
    route = rim.pick_topic_route_data("T")
    assert [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert rim.scan_not_active_broker(now=clock.now + 121).keys() == {B_MASTER}
    assert rim.pick_topic_route_data("T") is None and rim.cluster_addr_table == {}


def test_expiry_is_configurable(clock) -> None:
    rim = RouteInfoManager(broker_channel_expired_time=0.2, clock=clock)
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(1, 1)))
    clock.advance(0.25)
    assert list(rim.scan_not_active_broker()) == [A_MASTER]


def test_channel_destroy_drops_only_the_brokers_of_that_channel(rim: RouteInfoManager) -> None:
    ch_a, ch_b, stale = object(), object(), object()
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)), stale)
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)), ch_a)  # reconnected
    register(rim, B_MASTER, "broker-b", 0, wrapper(1, T=(4, 4)), ch_b)
    assert rim.on_channel_destroy(stale, "10.9.9.9:5555") == []
    assert len(rim.pick_topic_route_data("T").broker_datas) == 2
    assert rim.on_channel_destroy(ch_a, "10.0.0.1:40000") == [A_MASTER]
    assert [b.broker_name for b in rim.pick_topic_route_data("T").broker_datas] == ["broker-b"]
    assert rim.on_channel_destroy(None, B_MASTER) == [B_MASTER]  # falls back to the remote address
    assert rim.pick_topic_route_data("T") is None


def test_cluster_info_topic_list_and_delete(rim: RouteInfoManager) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T1=(1, 1), T2=(1, 1)))
    register(rim, B_MASTER, "broker-b", 0, wrapper(1, T2=(1, 1)), cluster="Other")
    info = rim.get_all_cluster_info()
    assert info.cluster_addr_table == {CLUSTER: {"broker-a"}, "Other": {"broker-b"}}
    assert info.broker_addr_table["broker-b"].broker_addrs == {0: B_MASTER}
    assert rim.get_all_topic_list().topic_list == ["T1", "T2"]
    rim.delete_topic("T2", "Other")
    assert [q.broker_name for q in rim.pick_topic_route_data("T2").queue_datas] == ["broker-a"]
    rim.delete_topic("T1")
    assert rim.get_all_topic_list().topic_list == ["T2"]


def test_filter_servers_show_up_in_the_route(rim: RouteInfoManager) -> None:
    rim.register_broker(
        CLUSTER, A_MASTER, "broker-a", 0, "ha", wrapper(1, T=(1, 1)), None, ["10.0.0.1:30000"]
    )
    assert rim.pick_topic_route_data("T").filter_server_table == {A_MASTER: ["10.0.0.1:30000"]}
    rim.register_broker(CLUSTER, A_MASTER, "broker-a", 0, "ha", wrapper(1, T=(1, 1)), None, [])
    assert rim.pick_topic_route_data("T").filter_server_table == {}


def test_data_version_queries(rim: RouteInfoManager, clock) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(3, T=(1, 1)))
    assert not rim.is_broker_topic_config_changed(A_MASTER, DataVersion(1, 3))
    assert rim.is_broker_topic_config_changed(A_MASTER, DataVersion(1, 4))
    assert rim.is_broker_topic_config_changed(B_MASTER, DataVersion(1, 3))
    assert rim.query_broker_topic_config(A_MASTER) == DataVersion(1, 3)
    clock.advance(100)
    rim.update_broker_info_update_timestamp(A_MASTER)
    clock.advance(100)
    assert rim.scan_not_active_broker() == {}


def delta(rim: RouteInfoManager, base: int, w, deleted=(), addr: str = A_MASTER, name: str = "broker-a"):
    return rim.register_broker(CLUSTER, addr, name, 0, "", w, None, None, DataVersion(1, base), deleted)


def test_a_delta_from_the_version_held_adds_updates_and_deletes(rim: RouteInfoManager) -> None:
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, Kept=(1, 1), Changed=(1, 1), Deleted=(1, 1)))
    assert delta(rim, 1, wrapper(4, Changed=(2, 2), Added=(3, 3)), deleted=["Deleted"]).delta_accepted
    assert rim.pick_topic_route_data("Kept").queue_datas[0].write_queue_nums == 1  # absent from the delta: kept
    assert rim.pick_topic_route_data("Changed").queue_datas[0].write_queue_nums == 2
    assert rim.pick_topic_route_data("Added").queue_datas[0].write_queue_nums == 3
    assert rim.pick_topic_route_data("Deleted") is None
    assert rim.query_broker_topic_config(A_MASTER) == DataVersion(1, 4)
    # An empty delta from the version held is a heartbeat.
    assert delta(rim, 4, wrapper(4)).delta_accepted


def test_a_delta_from_another_version_changes_nothing(rim: RouteInfoManager) -> None:
    assert not delta(rim, 0, wrapper(1, New=(1, 1))).delta_accepted  # an unknown broker
    assert rim.broker_live_table == {} and rim.pick_topic_route_data("New") is None
    register(rim, A_MASTER, "broker-a", 0, wrapper(3, Old=(1, 1)))
    result = delta(rim, 2, wrapper(5, New=(1, 1)), deleted=["Old"])  # it missed version 3 -> 4 (say)
    assert not result.delta_accepted
    assert rim.pick_topic_route_data("New") is None and rim.pick_topic_route_data("Old") is not None
    assert rim.query_broker_topic_config(A_MASTER) == DataVersion(1, 3)


def test_a_big_table_applied_in_steps_ends_as_one_applied_at_once(clock) -> None:
    from pocketmq.namesrv.route_info_manager import TOPICS_PER_STEP

    rim = RouteInfoManager(clock=clock, delete_topic_with_broker_registration=True)
    topics = {f"T{i}": (i % 7 + 1, 4) for i in range(TOPICS_PER_STEP * 3 + 1)}
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, Gone=(1, 1), **topics))
    stepped = RouteInfoManager(clock=clock, delete_topic_with_broker_registration=True)
    stepped.register_broker(CLUSTER, A_MASTER, "broker-a", 0, "", wrapper(1, Gone=(1, 1)), None)
    steps = stepped.register_broker_in_steps(CLUSTER, A_MASTER, "broker-a", 0, "", wrapper(2, **topics), None)
    yields = 0
    while True:
        try:
            next(steps)
        except StopIteration:
            break
        yields += 1
        # Until the last step, the broker's version is the old one: a delta based on the new one is refused.
        assert stepped.query_broker_topic_config(A_MASTER) == DataVersion(1, 1)
    assert yields == 3
    assert stepped.pick_topic_route_data("Gone") is None  # a full table drops what it does not list
    rim.register_broker(CLUSTER, A_MASTER, "broker-a", 0, "", wrapper(2, **topics), None)
    assert stepped.topic_queue_table == rim.topic_queue_table


def test_an_expiry_scan_between_the_steps_of_a_registration_leaves_the_broker_whole(clock) -> None:
    # The broker last registered 119.9 s ago and registers again, in steps: a scan in between finds it heard from.
    from pocketmq.namesrv.route_info_manager import TOPICS_PER_STEP

    rim = RouteInfoManager(broker_channel_expired_time=120.0, clock=clock)
    topics = {f"T{i}": (4, 4) for i in range(TOPICS_PER_STEP * 2)}
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, **topics))
    clock.advance(119.9)
    steps = rim.register_broker_in_steps(CLUSTER, A_MASTER, "broker-a", 0, "", wrapper(2, **topics), None)
    next(steps)
    clock.advance(0.2)
    assert rim.scan_not_active_broker() == {}
    for _ in steps:
        pass
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A_MASTER}
    assert rim.cluster_addr_table == {CLUSTER: {"broker-a"}}
    assert all(rim.pick_topic_route_data(t) is not None for t in topics)


def test_unregister_of_an_old_address_leaves_the_broker_where_it_is_now(rim: RouteInfoManager) -> None:
    # broker-a's master moved from A_MASTER to B_MASTER; the old process's UNREGISTER arrives after.
    register(rim, A_MASTER, "broker-a", 0, wrapper(1, T=(4, 4)))
    register(rim, B_MASTER, "broker-a", 0, wrapper(2, T=(4, 4)))
    rim.unregister_broker(CLUSTER, A_MASTER, "broker-a", 0)
    route = rim.pick_topic_route_data("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: B_MASTER}
    assert B_MASTER in rim.broker_live_table
