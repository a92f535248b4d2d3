"""RocketMQ 5's POP, the same scenario against pocketmq and against Apache RocketMQ 5.5.0's broker, driven by
pocketmq's SimpleConsumer over RocketMQ's native remoting protocol: receive, ack, batch ack, change invisible
duration (a new receipt handle), a message not acked coming back with its attempt count through the retry topic,
and nothing left afterwards; the same with enableRetryTopicV2, through %RETRY%<group>+<topic>. And POP_MESSAGE's
filters, the same raw requests to both brokers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from pocketmq.client import Message, MQClientException, Producer, RemotingException, SimpleConsumer
from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import RETRY_TOPIC_V2, parse_extra_info
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK, build_pop_retry_topic
from pocketmq.embedded import EmbeddedCluster, ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, request
from .differential_requests import create_topic, send_v2
from .test_apache_typed_topics_and_timers import Server

RETRY_TOPIC_V2_ON = b"enableRetryTopicV2=true\n"


@asynccontextmanager
async def server(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Server]:
    """The shared Apache RocketMQ 5.5.0, or a pocketmq broker of its own."""
    if request.param == "apache5":
        apache = request.getfixturevalue("apache_rocketmq5")
        yield Server("apache", apache.namesrv_addr, apache.broker_addr)
        return
    async with EmbeddedCluster(tmp_path, revive_interval=0.1) as cluster:
        yield Server("pocketmq", cluster.namesrv_addr, cluster.broker_addr)


@pytest.fixture(params=["pocketmq", "apache5"])
async def namesrv(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[str]:
    async with server(request, tmp_path) as s:
        yield s.namesrv_addr


@pytest.fixture(params=["pocketmq", "apache5"])
async def retry_topic_v2(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Server]:
    """A broker with enableRetryTopicV2 turned on by UPDATE_BROKER_CONFIG, which both apply at once (their pop and
    revive read the field at each use), and its old value back after, whatever happens: Apache's is shared."""
    async with server(request, tmp_path) as s:
        config = (await call_async(s.broker_addr, R.GET_BROKER_CONFIG)).raw_body or b""
        [old] = [line for line in config.decode().splitlines() if line.startswith("enableRetryTopicV2=")]
        assert (await call_async(s.broker_addr, R.UPDATE_BROKER_CONFIG, RETRY_TOPIC_V2_ON)).code == 0
        try:
            yield s
        finally:
            assert (await call_async(s.broker_addr, R.UPDATE_BROKER_CONFIG, f"{old}\n".encode())).code == 0


async def call_async(broker: str, code: int, body: bytes | None = None) -> Answer:
    """differential.call from a test's loop (its own loop, in a thread: the embedded pocketmq serves on this one)."""
    return await asyncio.to_thread(call, broker, request(code, body=body))


async def send_first(producer: Producer, message: Message) -> None:
    """A broker that just started may not have its default topic's route out yet: the first send tries again."""
    for attempt in range(60):
        try:
            await producer.send(message)
            return
        except (MQClientException, RemotingException):
            assert attempt < 59
            await asyncio.sleep(0.5)


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
        await send_first(producer, Message(topic, bodies[0], tags="T"))
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


async def test_with_retry_topic_v2_a_message_not_acked_comes_back_through_its_plus_topic_as_apache(
        retry_topic_v2: Server) -> None:
    run = uuid.uuid4().hex[:8]
    topic, group = f"RetryV2{run}", f"g{run}"
    async with Producer(f"p{run}", retry_topic_v2.namesrv_addr, protocol="rocketmq", send_timeout=15.0) as producer:
        await send_first(producer, Message(topic, b"again", tags="T", keys="k1"))
    async with SimpleConsumer(group, retry_topic_v2.namesrv_addr, subscriptions={topic: "*"}, init_mode=0,
                              protocol="rocketmq", mq_client_api_timeout=15.0) as consumer:
        [first] = await receive(consumer, 1, invisible=1.0)
        [back] = await receive(consumer, 1, invisible=60)  # not acked: back once its second is over
        await consumer.ack(back)
    seen = [(m.body, m.keys, m.tags, m.reconsume_times, m.topic, parse_extra_info(m.properties[PROPERTY_POP_CK]).retry)
            for m in (first, back)]
    # Attempt 2 under its topic, its receipt handle saying it was read from the group's V2 retry topic ("2").
    assert seen == [(b"again", ["k1"], "T", 0, topic, "0"), (b"again", ["k1"], "T", 1, topic, RETRY_TOPIC_V2)]
    # Apart (docs/compatibility.md, differences found): Apache's revive copies the properties and adds ORIGIN_GROUP,
    # pocketmq's gives the message back as CONSUMER_SEND_MSG_BACK does.
    apart = {k: back.properties.get(k) for k in ("ORIGIN_GROUP", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "WAIT")}
    if retry_topic_v2.name == "apache":
        assert apart == {"ORIGIN_GROUP": group, "RETRY_TOPIC": None, "ORIGIN_MESSAGE_ID": None, "WAIT": "true"}
    else:
        assert apart == {"ORIGIN_GROUP": None, "RETRY_TOPIC": topic, "ORIGIN_MESSAGE_ID": first.offset_msg_id,
                         "WAIT": "false"}
    # The topic the revive put it in, %RETRY%group+topic; no %RETRY%group_topic made.
    table = (await call_async(retry_topic_v2.broker_addr, R.GET_ALL_TOPIC_CONFIG)).body
    assert sorted(name for name in table["topicConfigTable"] if name.endswith(topic)) == sorted(
        [topic, build_pop_retry_topic(topic, group, v2=True)])


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
