"""RocketMQ 5's server-side rebalance asked of pocketmq and of Apache RocketMQ 5.5.0's broker, in RocketMQ's
native protocol through pocketmq's client API: QUERY_ASSIGNMENT in pull mode (the split), after
SET_MESSAGE_REQUEST_MODE to POP (queue -1, shared queues), the refusal of a retry topic; and POP_ROLLBACK
(mqadmin exportPopRecord). The answers must be the same."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from pocketmq.client import Message, MQClientException, Producer, RemotingException
from pocketmq.client.client_config import ClientConfig
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.client.impl.mq_client_api import MQClientAPIImpl
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.assignment_body import QueryAssignmentRequestBody, SetMessageRequestModeRequestBody
from pocketmq.remoting.client_body import ConsumerData, HeartbeatData, SubscriptionData
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand


@dataclass
class Server:
    namesrv: str
    broker: str


@pytest.fixture(params=["pocketmq", "apache5"])
async def server(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Server]:
    if request.param == "apache5":
        apache = request.getfixturevalue("apache_rocketmq5")
        yield Server(apache.namesrv_addr, apache.broker_addr)
        return
    async with EmbeddedCluster(tmp_path) as cluster:
        yield Server(cluster.namesrv_addr, cluster.broker_addr)


async def create_by_sending(namesrv: str, topic: str) -> None:
    async with Producer(f"pg-{topic}", namesrv, protocol="rocketmq", send_timeout=15.0) as producer:
        for attempt in range(60):  # a broker that just started may not have its default topic's route out yet
            try:
                await producer.send(Message(topic, b"x"))
                return
            except (MQClientException, RemotingException):
                assert attempt < 59
                await asyncio.sleep(0.5)


async def answers(server: Server) -> dict[str, Any]:
    topic, group = f"Assign{uuid.uuid4().hex[:8]}", f"cg-{uuid.uuid4().hex[:8]}"
    await create_by_sending(server.namesrv, topic)
    config = ClientConfig(server.namesrv, protocol="rocketmq", mq_client_api_timeout=15.0)
    members = [MQClientAPIImpl(config) for _ in range(3)]
    out: dict[str, Any] = {}
    try:
        for i, member in enumerate(members):
            consumer = ConsumerData(group, subscription_data_set=[SubscriptionData(topic)])
            await member.send_heartbeat(server.broker, HeartbeatData(f"cid-{i}", consumer_data_set=[consumer]), 15.0)
        api = members[0]

        async def assigned(cid: str, strategy: str = "AVG") -> list[tuple[int, str]] | None:
            body = QueryAssignmentRequestBody(topic, group, cid, strategy)
            got = await api.query_assignment(server.broker, body, 15.0)
            return None if got is None else sorted((a.message_queue.queue_id, a.mode) for a in got)

        async def set_mode(body: SetMessageRequestModeRequestBody) -> None:
            await api.set_message_request_mode(server.broker, body, 15.0)

        out["pull"] = [await assigned("cid-0"), await assigned("cid-2"), await assigned("cid-0", "AVG_BY_CIRCLE")]
        out["unknown strategy"] = await assigned("cid-0", "NO_SUCH")
        await set_mode(SetMessageRequestModeRequestBody(topic, group, "POP", -1))
        out["pop, every queue"] = await assigned("cid-1")
        await set_mode(SetMessageRequestModeRequestBody(topic, group, "POP", 1))
        out["pop, shared with one"] = await assigned("cid-2")
        await set_mode(SetMessageRequestModeRequestBody(topic, group, "POP", 2))
        out["pop, shared with all"] = await assigned("cid-0")
        try:
            await set_mode(SetMessageRequestModeRequestBody(f"%RETRY%{group}", group, "POP"))
            out["retry topic"] = "accepted"
        except MQBrokerException as e:
            out["retry topic"] = (e.code, e.remark)
        rollback_request = RemotingCommand.request(RequestCode.POP_ROLLBACK)
        rollback = await api.remoting_client.invoke(server.broker, rollback_request, 15.0)
        out["POP_ROLLBACK"] = rollback.code
    finally:
        for member in members:
            await member.shutdown()
    return out


async def test_assignment_and_request_modes_as_apache(server: Server, request: pytest.FixtureRequest) -> None:
    got = await answers(server)
    # What both must answer (the same dict for both servers: a 4-queue topic, three clients).
    assert got == {
        "pull": [[(0, "PULL"), (1, "PULL")], [(3, "PULL")], [(0, "PULL"), (3, "PULL")]],
        "unknown strategy": None,
        "pop, every queue": [(-1, "POP")],
        "pop, shared with one": [(0, "POP"), (1, "POP"), (3, "POP")],  # its own queue and cid-0's
        "pop, shared with all": [(-1, "POP")],
        "retry topic": (16, "retry topic is not allowed to set mode"),
        "POP_ROLLBACK": 0,  # mqadmin exportPopRecord: nothing to move without RocketMQ's RocksDB pop store
    }
