"""Order topics end to end on pocketmq's name server, through each of its wire protocols: `updateOrderConf` and
`updateTopic -o true` write the topic's entry in the name server's ORDER_TOPIC_CONFIG namespace, and the brokers take
their order flags from it at their next registration, as RocketMQ's brokers do (TopicConfigManager
.updateOrderTopicConfig): a topic the table names is ordered, any other is not. (Against Apache's name server:
tests/apache/test_mixed_cluster.py; the lines against mqadmin's: tests/apache/mqadmin/test_own_commands.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pocketmq.cli import main
from pocketmq.embedded import ThreadedCluster

CLUSTER = "DefaultCluster"


@pytest.fixture(params=["msgpack", "rocketmq"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    # Registrations every 50 ms: "after the next registration" is soon.
    with ThreadedCluster(tmp_path_factory.mktemp("order-conf"), brokers=2, namesrv_protocol=request.param,
                         register_name_server_period=0.05) as c:
        yield c


def cli(capsys: pytest.CaptureFixture[str], cluster: ThreadedCluster, *args: str) -> str:
    protocol = cluster.cluster.broker_overrides["namesrv_protocol"]
    code = main([args[0], "-n", cluster.namesrv_addr, "--protocol", protocol, *args[1:]])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def order_flags(cluster: ThreadedCluster, topic: str) -> dict[str, bool]:
    return {b.broker_config.broker_name: b.topic_config_manager.topic_config_table[topic].order
            for b in cluster.cluster.brokers if topic in b.topic_config_manager.topic_config_table}


def wait_order_flags(cluster: ThreadedCluster, topic: str, want: dict[str, bool]) -> None:
    deadline = time.monotonic() + 10
    while order_flags(cluster, topic) != want:
        assert time.monotonic() < deadline, (topic, order_flags(cluster, topic), want)
        time.sleep(0.01)


def test_update_order_conf_sets_and_clears_the_brokers_order_flags(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, cluster, "updateTopic", "-c", CLUSTER, "-t", "OrdPlain", "-r", "2", "-w", "2")
    assert order_flags(cluster, "OrdPlain") == {"broker-a": False, "broker-b": False}
    versions = [b.topic_config_manager.data_version.counter for b in cluster.cluster.brokers]

    out = cli(capsys, cluster, "updateOrderConf", "-t", "OrdPlain", "-m", "put", "-v", "broker-a:2;broker-b:2")
    assert out == "update orderConf success. topic=[OrdPlain], orderConf=[broker-a:2;broker-b:2]\n"
    wait_order_flags(cluster, "OrdPlain", {"broker-a": True, "broker-b": True})
    # The change moved each broker's data version (the name servers get the flag with the next registration).
    assert [b.topic_config_manager.data_version.counter for b in cluster.cluster.brokers] > versions
    out = cli(capsys, cluster, "updateOrderConf", "-t", "OrdPlain", "-m", "get")
    assert out == "get orderConf success. topic=[OrdPlain], orderConf=[broker-a:2;broker-b:2] \n"

    assert cli(capsys, cluster, "updateOrderConf", "-t", "OrdPlain", "-m", "delete") == (
        "delete orderConf success. topic=[OrdPlain]\n")
    # The namespace stays, empty: the brokers' answer carries an empty table, and the topic is no longer ordered.
    wait_order_flags(cluster, "OrdPlain", {"broker-a": False, "broker-b": False})


def test_update_topic_with_order_writes_the_order_conf_the_brokers_follow(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    out = cli(capsys, cluster, "updateTopic", "-c", CLUSTER, "-t", "OrdCluster", "-r", "3", "-w", "3", "-o", "true")
    # (the brokers in a Java HashSet's order, as mqadmin joins them)
    assert out.splitlines()[-1] == (
        "set cluster orderConf. isOrder=true, orderConf=[broker-b:3;broker-a:3]TopicConfig [topicName=OrdCluster, "
        "readQueueNums=3, writeQueueNums=3, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=true]")
    # A topic ordered by updateTopic alone (no entry in the table) loses its flag at the next registration.
    cli(capsys, cluster, "updateTopic", "-c", CLUSTER, "-t", "OrdFlagOnly", "-w", "2")
    a, b = (broker.address for broker in cluster.cluster.brokers)
    cli(capsys, cluster, "updateTopic", "-b", a, "-t", "OrdFlagOnly", "-w", "2", "-o", "true")
    cli(capsys, cluster, "updateOrderConf", "-t", "OrdFlagOnly", "-m", "delete")
    wait_order_flags(cluster, "OrdFlagOnly", {"broker-a": False, "broker-b": False})

    # -b merges the broker's part into the entry, the other brokers' parts kept.
    out = cli(capsys, cluster, "updateTopic", "-b", a, "-t", "OrdMerged", "-w", "2", "-o", "true")
    assert out.splitlines()[0] == (
        f"set broker orderConf. isOrder=true, orderConf=[broker-a:2]create topic to {a} success.")
    cli(capsys, cluster, "updateTopic", "-b", b, "-t", "OrdMerged", "-w", "4", "-o", "true")
    assert cli(capsys, cluster, "updateOrderConf", "-t", "OrdMerged", "-m", "get") == (
        "get orderConf success. topic=[OrdMerged], orderConf=[broker-b:4;broker-a:2] \n")
    wait_order_flags(cluster, "OrdMerged", {"broker-a": True, "broker-b": True})
    cli(capsys, cluster, "updateOrderConf", "-t", "OrdCluster", "-m", "delete")
    wait_order_flags(cluster, "OrdCluster", {"broker-a": False, "broker-b": False})
    assert order_flags(cluster, "OrdMerged") == {"broker-a": True, "broker-b": True}

    # An entry ending in ";" merges without an empty part (Java's split drops it; a client's route parse of
    # "brokerName:queueNums" parts would fail on one).
    cli(capsys, cluster, "updateOrderConf", "-t", "OrdTrail", "-m", "put", "-v", "broker-a:2;")
    cli(capsys, cluster, "updateTopic", "-b", b, "-t", "OrdTrail", "-w", "4", "-o", "true")
    assert cli(capsys, cluster, "updateOrderConf", "-t", "OrdTrail", "-m", "get") == (
        "get orderConf success. topic=[OrdTrail], orderConf=[broker-b:4;broker-a:2] \n")


def test_update_order_conf_refuses_a_put_without_a_conf_and_a_get_of_no_entry(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (("-m", "put"), ("-m", "get")):
        code = main(["updateOrderConf", "-n", cluster.namesrv_addr, "-t", "OrdNone", *args])
        err = capsys.readouterr().err
        assert code == 1
        assert err == {"put": "pocketmq updateOrderConf: MQClientException: please set orderConf with option -v.\n",
                       "get": "pocketmq updateOrderConf: MQClientException: No config item, Namespace: "
                              "ORDER_TOPIC_CONFIG Key: OrdNone\n"}[args[1]]
