"""The Apache RocketMQ fixtures start real servers that pocketmq's client and mqadmin reach, in each version."""

from __future__ import annotations

import signal
import uuid

import pytest

from pocketmq.client import Message, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ


@pytest.fixture(params=[V4, V5])
def server(request: pytest.FixtureRequest) -> ApacheRocketMQ:
    name = "apache_rocketmq" if request.param == V4 else "apache_rocketmq5"
    return request.getfixturevalue(name)


async def send_and_pull(server: ApacheRocketMQ, topic: str, bodies: list[bytes]) -> list[bytes]:
    async with Producer(f"pg-{topic}", server.namesrv_addr, protocol="rocketmq") as producer:
        for body in bodies:
            await producer.send(Message(topic, body, keys="k"))
    async with PullConsumer(f"cg-{topic}", server.namesrv_addr, protocol="rocketmq") as consumer:
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
    async with MQAdminExt(server.namesrv_addr, protocol="rocketmq") as admin:
        info = await admin.examine_broker_cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a"}}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: server.broker_addr}
    listed = server.mqadmin("clusterList")
    assert listed.returncode == 0, listed.stderr
    assert "V" + server.version.replace(".", "_") in listed.stdout


async def test_pocketmq_client_sends_and_pulls(server: ApacheRocketMQ) -> None:
    topic = f"Fixture{uuid.uuid4().hex[:8]}"
    bodies = [f"m{i}".encode() for i in range(5)]
    assert sorted(await send_and_pull(server, topic, bodies)) == sorted(bodies)


def test_missing_jars_fail_with_a_reason(tmp_path) -> None:
    from tests.apache.apache_rocketmq import ApacheRocketMQUnavailable

    with pytest.raises(ApacheRocketMQUnavailable, match="make apache-rocketmq"):
        ApacheRocketMQ(tmp_path, version="0.0.0")


async def test_kill_9_and_restart_keep_acknowledged_messages(tmp_path) -> None:
    topic = f"Crash{uuid.uuid4().hex[:8]}"
    with ApacheRocketMQ(tmp_path / "apache", version=V4, flushDiskType="SYNC_FLUSH") as server:
        bodies = [f"durable {i}".encode() for i in range(20)]
        assert sorted(await send_and_pull(server, topic, bodies)) == sorted(bodies)
        server.restart_broker(signal.SIGKILL)
        assert sorted(await send_and_pull(server, topic, [])) == sorted(bodies)
