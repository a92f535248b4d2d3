"""RocketMQ 5's typed topics and timer messages, the same scenario against Apache RocketMQ 5.5.0 and pocketmq:
Apache's own mqadmin sets `-a +message.type=...` on both, GET_TOPIC_CONFIG reads the attributes back alike, the
same refusals come with the same codes and texts, and a timer message is delivered by both no earlier than its
time, from the slot before it, with the same timer properties."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from pocketmq.client import Message, MQBrokerException, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting import fastjson
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import GetRouteInfoRequestHeader
from tests.apache.apache_rocketmq import ApacheRocketMQ

PRECISION = 1000  # both servers' default timerPrecisionMs


@dataclass
class Server:
    name: str
    namesrv_addr: str
    broker_addr: str


@pytest.fixture
async def both_servers(apache_rocketmq5: ApacheRocketMQ, tmp_path: Any) -> AsyncIterator[list[Server]]:
    async with EmbeddedCluster(tmp_path) as pocket:
        yield [Server("apache", apache_rocketmq5.namesrv_addr, apache_rocketmq5.broker_addr),
               Server("pocketmq", pocket.namesrv_addr, pocket.brokers[0].address)]


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


async def mqadmin(apache: ApacheRocketMQ, server: Server, expect: str, *args: str) -> str:
    """Apache's mqadmin against ``server`` (in a thread: the embedded pocketmq serves on this test's loop): its
    output once it holds ``expect``. A loaded machine can make a run time out on its way (mqadmin's 3 s): up to
    three runs."""
    out = ""
    for _ in range(3):
        done = await asyncio.to_thread(apache.mqadmin, *args, "-n", server.namesrv_addr)
        out = done.stdout + done.stderr
        if expect in out:
            break
    return out


async def test_mqadmin_sets_message_type_on_both(apache_rocketmq5: ApacheRocketMQ, both_servers: list[Server]) -> None:
    for server in both_servers:
        topic = unique("Typed")
        done = await mqadmin(apache_rocketmq5, server, "success.", "updateTopic", "-c", "DefaultCluster", "-t", topic,
                             "-a", "+message.type=FIFO")
        assert "create topic to " in done and "attributes={+message.type=FIFO}" in done, (server.name, done)
        refusal = "MIXED message type is not supported."
        mixed = await mqadmin(apache_rocketmq5, server, refusal, "updateTopic", "-c", "DefaultCluster", "-t",
                              unique("Mixed"), "-a", "+message.type=MIXED")
        assert refusal in mixed, (server.name, mixed)
        async with MQAdminExt(server.namesrv_addr, protocol="rocketmq") as admin:
            tc = await admin.examine_topic_config(server.broker_addr, topic)
            assert tc.attributes == {"message.type": "FIFO"}, server.name
            await admin.create_topic(TopicConfig(topic, 8, 8, attributes={"+message.type": "DELAY"}),
                                     broker_addr=server.broker_addr)
            assert (await admin.examine_topic_config(server.broker_addr, topic)).attributes == {
                "message.type": "DELAY"}, server.name
            with pytest.raises(MQBrokerException) as refused:
                await admin.create_topic(TopicConfig(topic, 8, 8, attributes={"+color": "red"}),
                                         broker_addr=server.broker_addr)
            assert (refused.value.response_code, refused.value.remark) == (
                ResponseCode.SYSTEM_ERROR, "unsupported key: color"), server.name
            # A route (GET_ROUTEINFO_BY_TOPIC) carries no attributes, in RocketMQ 5 as in 4.x.
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
            route = fastjson.loads((await admin.api.remoting_client.invoke(server.namesrv_addr, request, 10)).body)
            assert "attributes" not in route and all("attributes" not in q for q in route["queueDatas"]), server.name


async def pull_topic(server: Server, topic: str) -> list[Any]:
    async with PullConsumer(unique("cg"), server.namesrv_addr, protocol="rocketmq") as consumer:
        got: list[Any] = []
        for mq in await consumer.fetch_subscribe_message_queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, 32)
                if result.pull_status != PullStatus.FOUND:
                    break
                got += result.msg_found_list
                offset = result.next_begin_offset
        return got


async def test_a_timer_message_on_both(both_servers: list[Server]) -> None:
    for server in both_servers:
        topic = unique("Timer")
        async with Producer(unique("pg"), server.namesrv_addr, protocol="rocketmq", send_timeout=30.0) as producer:
            await producer.send(Message(topic, b"warm-up"))  # (the route: created by the first send)
            warm_deadline = time.monotonic() + 60
            while not await pull_topic(server, topic):  # a send is answered before its dispatch
                assert time.monotonic() < warm_deadline, f"{server.name}: the warm-up never came"
                await asyncio.sleep(0.05)
            msg = Message(topic, b"later", tags="T")
            deliver = time.time_ns() // 1_000_000 + 2_000
            msg.deliver_time_ms = deliver
            await producer.send(msg)
            while time.time_ns() // 1_000_000 < deliver - 50:  # not before its time
                assert [m.body for m in await pull_topic(server, topic)] == [b"warm-up"], server.name
                await asyncio.sleep(0.2)
            deadline = time.monotonic() + 60
            while len(got := await pull_topic(server, topic)) < 2:
                assert time.monotonic() < deadline, server.name
                await asyncio.sleep(0.1)
            [m] = [m for m in got if m.body == b"later"]
            out = int(m.properties["TIMER_OUT_MS"])
            assert m.store_timestamp >= deliver and deliver - PRECISION <= out < deliver, server.name
            assert {"TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS"} <= set(m.properties), server.name
            # (RocketMQ 5 keeps the real address in the delivered message's properties, as 4.x's delay levels do)
            assert (m.properties["REAL_TOPIC"], m.properties["REAL_QID"]) == (topic, str(m.queue_id)), server.name
            assert m.uniq_key == msg.uniq_key and m.tags == "T", server.name
            too_far = Message(topic, b"never")
            too_far.delay_time_sec = 4 * 86400
            with pytest.raises(MQBrokerException) as refused:
                await producer.send(too_far)
            assert refused.value.response_code == ResponseCode.MESSAGE_ILLEGAL, server.name
            assert refused.value.remark == (
                "timer message illegal, the delay time should not be bigger than the max delay 259200000ms; or if "
                "set del msg, the delay time should be bigger than the current time"), server.name


async def test_timer_values_long_parse_long_refuses_are_refused_on_both(both_servers: list[Server]) -> None:
    """TIMER_DELAY_SEC / TIMER_DELAY_MS / TIMER_DELIVER_MS are read with Long.parseLong
    (HookUtils.transformTimerMessage): surrounding spaces and "_" between digits, which Python's int() takes, make
    the send MESSAGE_ILLEGAL on Apache RocketMQ 5.5.0 and on pocketmq alike."""
    later = str(time.time_ns() // 1_000_000 + 60_000)
    bad = [("TIMER_DELAY_SEC", " 2"), ("TIMER_DELAY_SEC", "2 "), ("TIMER_DELAY_SEC", "0_2"),
           ("TIMER_DELAY_MS", "2_000"), ("TIMER_DELAY_MS", "\t2000"), ("TIMER_DELIVER_MS", " " + later)]
    answers: dict[str, list[tuple[int, str]]] = {}
    for server in both_servers:
        topic = unique("TimerBad")
        async with Producer(unique("pg"), server.namesrv_addr, protocol="rocketmq", send_timeout=30.0,
                            retry_times_when_send_failed=0) as producer:
            await producer.send(Message(topic, b"warm-up"))  # (the route: created by the first send)
            for key, value in bad:
                msg = Message(topic, b"bad")
                msg.properties[key] = value
                with pytest.raises(MQBrokerException) as refused:
                    await producer.send(msg)
                answers.setdefault(server.name, []).append((refused.value.response_code, refused.value.remark))
    assert {code for side in answers.values() for code, _ in side} == {ResponseCode.MESSAGE_ILLEGAL}
    [apache, pocketmq] = answers.values()
    assert pocketmq == apache
