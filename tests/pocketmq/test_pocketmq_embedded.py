"""The in-process cluster and the pytest fixture, as a user's tests would use them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from pocketmq import EmbeddedCluster
from pocketmq.client import (
    Message,
    MQClientException,
    Producer,
    PullConsumer,
    PullStatus,
    SyncProducer,
    SyncPullConsumer,
)


async def test_embedded_cluster_round_trip(tmp_path):
    async with EmbeddedCluster(tmp_path) as cluster:
        assert cluster.namesrv_addr.startswith("127.0.0.1:")
        assert cluster.broker_addr.startswith("127.0.0.1:")
        async with Producer("p", cluster.namesrv_addr) as producer:
            sent = await producer.send(Message("Embedded", b"one", tags="A"))
        assert await cluster.wait_dispatched()
        async with PullConsumer("c", cluster.namesrv_addr) as consumer:
            result = await consumer.pull(sent.message_queue, "*", sent.queue_offset)
        assert result.pull_status is PullStatus.FOUND
        assert [m.body for m in result.msg_found_list] == [b"one"]
    # A clean stop: the store is closed without the abort file a crash leaves.
    assert not os.path.exists(tmp_path / "store" / "abort")
    assert os.path.exists(tmp_path / "store" / "commitlog")


async def test_a_test_cluster_takes_the_largest_message_and_little_disk(tmp_path):
    """A suite of hundreds of fixture tests keeps three runs' temp folders: at 21 MB reserved a store (a 16 MiB
    commit-log file and a 4 MB index file, both reserved on disk when made) that was gigabytes."""
    async with EmbeddedCluster(tmp_path) as cluster:
        async with Producer("p", cluster.namesrv_addr) as producer:
            big = await producer.send(Message("Largest", b"x" * (4 * 1024 * 1024), keys="big", tags="A"))
            small = await producer.send(Message("Largest", b"after", keys="small"))
        assert await cluster.wait_dispatched()
        async with PullConsumer("c", cluster.namesrv_addr) as consumer:
            for sent, body_len in ((big, 4 * 1024 * 1024), (small, 5)):
                result = await consumer.pull(sent.message_queue, "*", sent.queue_offset, max_nums=1)
                assert [len(m.body) for m in result.msg_found_list] == [body_len]
    used = sum(os.stat(os.path.join(d, f)).st_blocks * 512 for d, _, files in os.walk(tmp_path) for f in files)
    assert used < 10 * 1024 * 1024, used


def test_a_cluster_stopped_and_started_again_names_its_new_servers(tmp_path):
    # start() appended to the brokers of the last run: broker, broker_addr and store named the stopped one.
    from pocketmq import ThreadedCluster

    cluster = ThreadedCluster(tmp_path, brokers=2)
    with cluster:
        with SyncProducer("p", cluster.namesrv_addr) as producer:
            sent = producer.send(Message("Again", b"one"))
        first_run = list(cluster.cluster.brokers)
    with cluster:
        brokers = cluster.cluster.brokers
        assert len(brokers) == 2 and not set(brokers) & set(first_run)
        assert all(b.remoting_server.started for b in brokers) and cluster.cluster.broker is brokers[0]
        assert cluster.broker_addr == brokers[0].address
        with SyncPullConsumer("c", cluster.namesrv_addr) as consumer:
            result = consumer.pull(sent.message_queue, "*", sent.queue_offset)
        assert [m.body for m in result.msg_found_list] == [b"one"]  # (the store of the first run, read again)


async def test_embedded_cluster_passes_broker_settings(tmp_path):
    async with EmbeddedCluster(tmp_path, auto_create_topic_enable=False) as cluster:
        assert cluster.broker.broker_config.auto_create_topic_enable is False
        async with Producer("p", cluster.namesrv_addr, send_timeout=1.0) as producer:
            with pytest.raises(MQClientException):
                await producer.send(Message("NeverCreated", b"x"))


async def test_wait_routed_waits_for_the_name_server_to_know_a_topic(tmp_path):
    async with EmbeddedCluster(tmp_path) as cluster:
        assert await cluster.wait_routed("NotYet", timeout=0.05) is False
        async with Producer("p", cluster.namesrv_addr) as producer:
            await producer.send(Message("Routed", b"x"))  # creates the topic at the broker
        assert await cluster.wait_routed("Routed")
        async with PullConsumer("c", cluster.namesrv_addr) as consumer:
            queues = await consumer.fetch_subscribe_message_queues("Routed")  # asks the name server
        assert {q.topic for q in queues} == {"Routed"}


def test_fixture_serves_sync_code(pocketmq_cluster):
    with SyncProducer("p", pocketmq_cluster.namesrv_addr) as producer:
        sent = producer.send(Message("FixtureTopic", b"hello", keys="k-1"))
    assert pocketmq_cluster.wait_dispatched()
    with SyncPullConsumer("c", pocketmq_cluster.namesrv_addr) as consumer:
        result = consumer.pull(sent.message_queue, "*", sent.queue_offset)
    assert [(m.body, m.keys) for m in result.msg_found_list] == [(b"hello", ["k-1"])]


async def test_fixture_serves_async_code_on_another_loop(pocketmq_cluster):
    async with Producer("p", pocketmq_cluster.namesrv_addr) as producer:
        result = await producer.send(Message("FixtureAsync", b"x"))
    assert result.queue_offset == 0


def test_plugin_is_registered_for_users(tmp_path):
    """A user's project gets the fixture from the installed entry point, with no conftest of its own."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        from pocketmq.client import Message, SyncProducer

        def test_send(pocketmq_cluster):
            with SyncProducer("g", pocketmq_cluster.namesrv_addr) as producer:
                assert producer.send(Message("UserTopic", b"hi")).queue_offset == 0
    """))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


async def test_embedded_brokers_join_another_name_server(tmp_path):
    # namesrv_addr= starts no name server: the broker joins the given one (here another cluster's, in RocketMQ's
    # native registration as it would join Apache RocketMQ's: tests/apache/test_mixed_cluster.py).
    async with EmbeddedCluster(tmp_path / "first") as first:
        async with EmbeddedCluster(tmp_path / "second", namesrv_addr=first.namesrv_addr, broker_name="broker-b",
                                   namesrv_protocol="rocketmq") as second:
            assert second.namesrv is None and second.namesrv_addr == first.namesrv_addr
            table = first.namesrv.route_info_manager.broker_addr_table
            assert {name: bd.broker_addrs for name, bd in table.items()} == {
                "broker-a": {0: first.broker_addr}, "broker-b": {0: second.broker_addr}}
        assert set(first.namesrv.route_info_manager.broker_addr_table) == {"broker-a"}
