"""The Apache RocketMQ fixtures start real servers that pocketmq's client and mqadmin reach, in each version."""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest

from pocketmq.client import Message, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.remoting.topic_config import TopicConfig
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ
from tests.apache.pocketmq_process import PocketMQBroker, PocketMQNamesrv


@pytest.fixture(params=[V4, V5])
def server(request: pytest.FixtureRequest) -> ApacheRocketMQ:
    name = "apache_rocketmq" if request.param == V4 else "apache_rocketmq5"
    return request.getfixturevalue(name)


async def send_and_pull(namesrv_addr: str, topic: str, bodies: list[bytes]) -> list[bytes]:
    async with Producer(f"pg-{topic}", namesrv_addr, protocol="rocketmq") as producer:
        for body in bodies:
            await producer.send(Message(topic, body, keys="k"))
    async with PullConsumer(f"cg-{topic}", namesrv_addr, protocol="rocketmq") as consumer:
        got: list[bytes] = []
        for mq in await consumer.fetch_subscribe_message_queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, 32)
                if result.pull_status != PullStatus.FOUND:
                    break
                got += [m.body for m in result.msg_found_list]
                offset = result.next_begin_offset
    return got


async def test_broker_registers_with_its_version(server: ApacheRocketMQ) -> None:
    topic = f"Route{uuid.uuid4().hex[:8]}"
    async with MQAdminExt(server.namesrv_addr, protocol="rocketmq") as admin:
        info = await admin.examine_broker_cluster_info()
        # Read and write queue counts that differ, so a route of any other topic (or of defaults) cannot pass.
        await admin.create_topic(TopicConfig(topic, 3, 2), cluster="DefaultCluster")
        for _ in range(50):  # (the broker registers the new topic with its name server after answering)
            try:
                route = await admin.examine_topic_route_info(topic)
                break
            except Exception:
                await asyncio.sleep(0.2)
        else:
            route = await admin.examine_topic_route_info(topic)
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 3, 2, 6)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: server.broker_addr})]
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a"}}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: server.broker_addr}
    listed = server.mqadmin("clusterList")
    assert listed.returncode == 0, listed.stderr
    assert "V" + server.version.replace(".", "_") in listed.stdout


async def test_pocketmq_client_sends_and_pulls(server: ApacheRocketMQ) -> None:
    topic = f"Fixture{uuid.uuid4().hex[:8]}"
    bodies = [f"m{i}".encode() for i in range(5)]
    assert sorted(await send_and_pull(server.namesrv_addr, topic, bodies)) == sorted(bodies)


def test_missing_jars_fail_with_a_reason(tmp_path) -> None:
    from tests.apache.apache_rocketmq import ApacheRocketMQUnavailable

    with pytest.raises(ApacheRocketMQUnavailable, match="make apache-rocketmq"):
        ApacheRocketMQ(tmp_path, version="0.0.0")


async def test_kill_9_and_restart_keep_acknowledged_messages(tmp_path) -> None:
    topic = f"Crash{uuid.uuid4().hex[:8]}"
    bodies = [f"durable {i}".encode() for i in range(20)]
    with ApacheRocketMQ(tmp_path / "apache", version=V4, flushDiskType="SYNC_FLUSH").killed_at_exit() as server:
        assert sorted(await send_and_pull(server.namesrv_addr, topic, bodies)) == sorted(bodies)
        server.restart_broker(signal.SIGKILL)
        assert sorted(await send_and_pull(server.namesrv_addr, topic, [])) == sorted(bodies)
    # pocketmq's broker, a process of its own, under the same send, kill -9, restart on the same store and pull.
    with (PocketMQNamesrv(tmp_path / "pocketmq-namesrv") as namesrv,
          PocketMQBroker(tmp_path / "pocketmq-broker", namesrv.addr, flushDiskType="SYNC_FLUSH") as broker):
        assert sorted(await send_and_pull(namesrv.addr, topic, bodies)) == sorted(bodies)
        broker.stop(signal.SIGKILL)
        assert broker.process is not None and broker.process.proc is not None
        assert broker.process.proc.returncode == -signal.SIGKILL
        broker.start()  # (same port and store)
        assert sorted(await send_and_pull(namesrv.addr, topic, [])) == sorted(bodies)


def test_the_jvms_temporary_files_stay_in_the_fixtures_folder(apache_rocketmq5: ApacheRocketMQ) -> None:
    # 5.5.0's broker unpacks RocksDB's JNI library (12 MB) into java.io.tmpdir at every start and never removes it;
    # under /tmp a few hundred starts of the suite filled it.
    assert list((apache_rocketmq5.home / "tmp").glob("librocksdbjni*.so"))
