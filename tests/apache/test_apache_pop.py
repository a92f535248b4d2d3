"""RocketMQ 5's POP, the same scenario against pocketmq and against Apache RocketMQ 5.5.0's broker, driven by
pocketmq's SimpleConsumer over RocketMQ's native remoting protocol: receive, ack, batch ack, change invisible
duration (a new receipt handle), a message not acked coming back with its attempt count through the retry topic,
and nothing left afterwards. And POP_MESSAGE's filters, the same raw requests to both brokers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.client import Message, MQClientException, Producer, RemotingException, SimpleConsumer
from pocketmq.common.codec import decode_all
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.embedded import EmbeddedCluster, ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import call, request
from .test_differential import create_topic, send_v2


@pytest.fixture(params=["pocketmq", "apache5"])
async def namesrv(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[str]:
    if request.param == "apache5":
        yield request.getfixturevalue("apache_rocketmq5").namesrv_addr
        return
    async with EmbeddedCluster(tmp_path, revive_interval=0.1) as cluster:
        yield cluster.namesrv_addr


async def receive(consumer: SimpleConsumer, n: int, invisible: float, deadline_s: float = 60.0) -> list[Any]:
    got: list[Any] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while len(got) < n and loop.time() < deadline:
        got += await consumer.receive(32, invisible_duration=invisible, await_duration=1.0)
    return got


async def test_pop_ack_change_invisible_and_redelivery_as_apache(namesrv: str) -> None:
    topic = f"Pop{uuid.uuid4().hex[:8]}"
    bodies = [b"acked", b"batch-acked", b"extended", b"dropped"]
    async with Producer(f"pg-{topic}", namesrv, protocol="rocketmq", send_timeout=15.0) as producer:
        for attempt in range(60):  # a broker that just started may not have its default topic's route out yet
            try:
                await producer.send(Message(topic, bodies[0], tags="T"))
                break
            except (MQClientException, RemotingException):
                assert attempt < 59
                await asyncio.sleep(0.5)
        for body in bodies[1:]:
            await producer.send(Message(topic, body, tags="T"))
    async with SimpleConsumer(f"cg-{topic}", namesrv, subscriptions={topic: "*"}, init_mode=0,
                              protocol="rocketmq", mq_client_api_timeout=15.0) as consumer:
        first = {m.body: m for m in await receive(consumer, 4, invisible=3.0)}
        assert sorted(first) == sorted(bodies)
        assert {m.reconsume_times for m in first.values()} == {0}
        await consumer.ack(first[b"acked"])
        await consumer.ack_batch([first[b"batch-acked"]])
        old = first[b"extended"].properties[PROPERTY_POP_CK]
        new = await consumer.change_invisible_duration(first[b"extended"], 60)
        assert new != old
        # "dropped" was never acked: it comes back once its 3 s are over, as attempt 2, under its topic.
        [back] = await receive(consumer, 1, invisible=60)
        assert (back.body, back.reconsume_times, back.topic) == (b"dropped", 1, topic)
        await consumer.ack(back)
        await consumer.ack(first[b"extended"])  # with its new handle
        await asyncio.sleep(4)
        assert await consumer.receive(32, invisible_duration=60, await_duration=1.0) == []


# (expType, exp) of a pop, each by a group of its own, over three messages: m0 (a=5), m1 (a=10), m2 (a=1).
POP_FILTERS = [
    ("SQL92", "a > 5"),  # served whatever enablePropertyFilter says: RocketMQ 5's pop never looks at it
    ("SQL92", ""),  # no expression: TAG "*", whatever the type
    ("SQL92", None),
    ("SQL92", "a >>> 1"),
]


def _pop_filter_rows(broker: str) -> list[tuple[int, list[str] | None]]:
    run = uuid.uuid4().hex[:8]
    topic = f"PopFlt{run}"
    assert call(broker, create_topic(topic, 1)).code == 0
    for i, a in enumerate(("5", "10", "1")):
        assert call(broker, send_v2(topic, b"x", props={"a": a, "KEYS": f"m{i}"})).code == 0
    deadline = time.monotonic() + 30
    while call(broker, request(R.GET_MAX_OFFSET, {"topic": topic, "queueId": 0})).ext.get("offset") != "3":
        assert time.monotonic() < deadline, "the messages never reached the consume queue"
        time.sleep(0.1)
    rows: list[tuple[int, list[str] | None]] = []
    for i, (exp_type, exp) in enumerate(POP_FILTERS):
        ext = {"consumerGroup": f"pf{i}_{run}", "topic": topic, "queueId": -1, "maxMsgNums": 32,
               "invisibleTime": 60_000, "pollTime": 0, "bornTime": int(time.time() * 1000), "initMode": 0,
               "expType": exp_type, "exp": exp, "order": False}
        answer = call(broker, request(R.POP_MESSAGE, ext))
        found = answer.code == 0 and answer.raw_body
        rows.append((answer.code, sorted(m.properties["KEYS"] for m in decode_all(answer.raw_body)) if found else None))
    # A pull with SQL92 is what enablePropertyFilter=false refuses (SYSTEM_ERROR), on both.
    pull = {"consumerGroup": f"pull_{run}", "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
            "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "a > 5",
            "expressionType": "SQL92"}
    rows.append((call(broker, request(R.PULL_MESSAGE, pull)).code, None))
    return rows


def test_pop_filters_as_apache_5_with_property_filter_off(apache_rocketmq5: ApacheRocketMQ, tmp_path: Any) -> None:
    # The shared 5.5.0 broker has enablePropertyFilter=true: turned off for this test (UPDATE_BROKER_CONFIG sets
    # the field its processors read on every request), and on again whatever happens.
    apache = apache_rocketmq5.broker_addr
    assert call(apache, request(R.UPDATE_BROKER_CONFIG, body=b"enablePropertyFilter=false\n")).code == 0
    try:
        want = _pop_filter_rows(apache)
    finally:
        assert call(apache, request(R.UPDATE_BROKER_CONFIG, body=b"enablePropertyFilter=true\n")).code == 0
    assert want == [(0, ["m1"]), (0, ["m0", "m1", "m2"]), (0, ["m0", "m1", "m2"]), (23, None), (1, None)]
    with ThreadedCluster(tmp_path, enable_property_filter=False) as pocket:
        assert _pop_filter_rows(pocket.broker_addr) == want
