"""A store with POP state and a pending timer message, from pocketmq to Apache RocketMQ 5.5.0 and back.

Each writer (one broker on the store) is left with: a timer message due 12 s (20 s on 5.5.0) after it was sent;
a message popped with the same invisible time and never acked ("late": its checkpoint still in the timer wheel
when the writer stops); and one popped for 2 s and never acked ("early"), which the writer revived into the
group's pop retry topic, committing the revive offset past its checkpoint. The writer stops (clean shutdown) and
the other broker starts on the same folder (same broker name, cluster, file sizes, one revive queue so that the
checkpoints share it). There the timer message is delivered once, and a consumer of the group pops "early" (from
the retry topic) and "late" (revived by the reader when due) once each, with reconsumeTimes 1, and nothing else.
pocketmq writes, 5.5.0 reads and writes a second round, pocketmq reads it: one 5.5.0 broker serves both
directions.

In the second round 5.5.0 also revives a message of a group and topic whose pop retry topic has 142 characters,
which it writes as a message version 2 record (MAGICCODE 0xDAA320AB, a 2-byte topic length): pocketmq recovers the
log through that record (4.x's layout ends the log there, losing every record after it), loads its queue, and pops
the message from it.

The revive offset is where the two kinds of broker must agree: RocketMQ 5 commits the last revive record processed
and reads on from the next one. pocketmq committed the next record to read, so 5.5.0 skipped "late"'s checkpoint
(never popped again: lost); and pocketmq, reading 5.5.0's offset as the next record, revived its last checkpoint
a second time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pocketmq.client import Message, MQClientException, Producer, RemotingException, SimpleConsumer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.pop_ack_constants import REVIVE_GROUP
from pocketmq.remoting import fastjson
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ
from tests.apache.differential import call, request
from tests.apache.pocketmq_process import PocketMQBroker, PocketMQNamesrv
from tests.apache.store_handover import APACHE_PATIENCE, read_topic, wait_for_count

POP_TOPIC, TIMER_TOPIC, GROUP = "HandPop", "HandTimer", "cg-hand-pop"
REVIVE_TOPIC = "rmq_sys_REVIVE_LOG_DefaultCluster"
POP_RETRY_TOPIC = f"%RETRY%{GROUP}_{POP_TOPIC}"  # (RocketMQ 5's pop retry topic, v1: both brokers' default)
LONG_TOPIC, LONG_GROUP = "HandPopLong" + "t" * 89, "cg-hand-pop-long" + "g" * 18  # 100 and 34 characters
LONG_RETRY_TOPIC = f"%RETRY%{LONG_GROUP}_{LONG_TOPIC}"  # 142 characters: a message version 2 record
# broker.conf keys both read. Apache's test broker has the same file sizes (apache_rocketmq.SMALL_STORE); the
# timer log's is pocketmq's to match.
CONF = {
    "brokerName": "broker-a",
    "mappedFileSizeTimerLog": str(4 * 1024 * 1024),
    "timerWheelEnable": "true",
    "reviveQueueNum": "1",
    "enablePopBufferMerge": "false",  # (Apache's default: each pop writes its checkpoint)
    "flushConsumerOffsetInterval": "500",
    "timerFlushIntervalMs": "1000",  # (5.5.0's default: the handed-over wheel as a store's own would be)
}
# "late" and the timer message fall due after the writer stopped: it stops once "early" is revived, ~5 s after the
# pops; pocketmq in well under a second, 5.5.0 in up to 10 s (its shutdown waits for its threads).
EARLY_INVISIBLE_S = 2.0
POCKETMQ_WRITER_DELAY_S, APACHE_WRITER_DELAY_S = 12.0, 20.0
GUARD = 90.0  # a bound for a loaded machine, not an expectation


def pocketmq_on(home: Path, namesrv_addr: str, store: Path) -> PocketMQBroker:
    return PocketMQBroker(home, namesrv_addr, storePathRootDir=str(store), **CONF)


def apache_props(store: Path) -> dict[str, str]:
    return {"storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"), **APACHE_PATIENCE, **CONF}


def broker_addr(broker: ApacheRocketMQ | PocketMQBroker) -> str:
    return broker.broker_addr if isinstance(broker, ApacheRocketMQ) else broker.addr


@asynccontextmanager
async def consumer(namesrv_addr: str) -> AsyncIterator[SimpleConsumer]:
    async with SimpleConsumer(GROUP, namesrv_addr, subscriptions={POP_TOPIC: "*"}, init_mode=0, protocol="rocketmq",
                              mq_client_api_timeout=15.0) as c:
        yield c


async def write(namesrv_addr: str, n: int, delay_s: float) -> None:
    """The writer's part of round ``n``: the timer message due in ``delay_s``, "late<n>" popped for as long,
    "early<n>" popped."""
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        [addr] = (await admin.master_addrs()).values()
        for topic in (POP_TOPIC, TIMER_TOPIC):
            await admin.create_and_update_topic_config(addr, TopicConfig(topic, 1, 1))
    async with Producer("pg-hand-pop", namesrv_addr, protocol="rocketmq", send_timeout=15.0) as producer:
        for attempt in range(60):  # (a broker just started may not have the route out yet)
            try:
                await producer.send(Message(POP_TOPIC, b"late%d" % n))
                break
            except (MQClientException, RemotingException):
                assert attempt < 59
                await asyncio.sleep(0.5)
        await producer.send(Message(POP_TOPIC, b"early%d" % n))
        timer = Message(TIMER_TOPIC, b"timer%d" % n)
        timer.deliver_time_ms = time.time_ns() // 1_000_000 + round(delay_s * 1000)
        await producer.send(timer)
    async with consumer(namesrv_addr) as c:
        # One pop each: a checkpoint each, "early"'s due first in the revive queue.
        late = await receive(c, delay_s)
        early = await receive(c, EARLY_INVISIBLE_S)
    assert [m.body for m in late + early] == [b"late%d" % n, b"early%d" % n]


async def receive(c: SimpleConsumer, invisible: float) -> list[Any]:
    deadline = time.monotonic() + GUARD
    while not (got := await c.receive(1, invisible_duration=invisible, await_duration=1.0)):
        assert time.monotonic() < deadline, "nothing to pop"
    return got


async def wait_revived(broker: ApacheRocketMQ | PocketMQBroker, n: int) -> None:
    """Until the writer has revived "early<n>" (the ``2n - 1``th message of the retry topic), and committed the
    revive offset past its checkpoint as it does (at once), which its clean shutdown writes."""
    asked = request(R.GET_MAX_OFFSET, {"topic": POP_RETRY_TOPIC, "queueId": 0})
    deadline = time.monotonic() + GUARD
    while (await asyncio.to_thread(call, broker_addr(broker), asked)).ext.get("offset") != str(2 * n - 1):
        assert time.monotonic() < deadline, f"the writer never revived early{n}"
        await asyncio.sleep(0.1)


def revive_offsets(store: Path) -> tuple[dict[str, int], str]:
    """The revive offsets the writer left in consumerOffset.json, and the file."""
    text = (store / "config" / "consumerOffset.json").read_text(encoding="utf-8")
    return fastjson.loads(text.encode())["offsetTable"][f"{REVIVE_TOPIC}@{REVIVE_GROUP}"], text


async def write_long(namesrv_addr: str, broker: ApacheRocketMQ) -> None:
    """5.5.0's message of the long topic, popped for EARLY_INVISIBLE_S and revived into LONG_RETRY_TOPIC."""
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        [addr] = (await admin.master_addrs()).values()
        await admin.create_and_update_topic_config(addr, TopicConfig(LONG_TOPIC, 1, 1))
    async with Producer("pg-hand-pop", namesrv_addr, protocol="rocketmq", send_timeout=15.0) as producer:
        await producer.send(Message(LONG_TOPIC, b"long"))
    async with SimpleConsumer(LONG_GROUP, namesrv_addr, subscriptions={LONG_TOPIC: "*"}, init_mode=0,
                              protocol="rocketmq", mq_client_api_timeout=15.0) as c:
        assert [m.body for m in await receive(c, EARLY_INVISIBLE_S)] == [b"long"]
    asked = request(R.GET_MAX_OFFSET, {"topic": LONG_RETRY_TOPIC, "queueId": 0})
    deadline = time.monotonic() + GUARD
    while (await asyncio.to_thread(call, broker.broker_addr, asked)).ext.get("offset") != "1":
        assert time.monotonic() < deadline, "5.5.0 never revived the long topic's message"
        await asyncio.sleep(0.1)


async def read_long(namesrv_addr: str) -> None:
    """The long topic's message popped back once, from its version 2 record."""
    async with SimpleConsumer(LONG_GROUP, namesrv_addr, subscriptions={LONG_TOPIC: "*"}, init_mode=0,
                              protocol="rocketmq", mq_client_api_timeout=15.0) as c:
        [m] = await receive(c, 60)
        await c.ack(m)
    assert (m.body, m.reconsume_times) == (b"long", 1)


async def read(namesrv_addr: str, n: int) -> None:
    """The reader's part of round ``n``: "early<n>" and "late<n>" popped back once each and nothing else, and the
    timer message delivered once."""
    back: list[tuple[bytes, int]] = []
    async with consumer(namesrv_addr) as c:
        deadline = time.monotonic() + GUARD
        quiet = 0  # receives (of 1 s each) that found nothing since both came back
        while quiet < 3:
            got = await c.receive(32, invisible_duration=60, await_duration=1.0)
            for m in got:
                back.append((m.body, m.reconsume_times))
                await c.ack(m)
            if {b"early%d" % n, b"late%d" % n} <= {body for body, _ in back}:
                quiet = 0 if got else quiet + 1
            assert time.monotonic() < deadline, f"popped back: {back}"
    assert sorted(back) == [(b"early%d" % n, 1), (b"late%d" % n, 1)]
    timers = await wait_for_count(namesrv_addr, TIMER_TOPIC, n)
    assert [row[14] for row in timers] == [b"timer%d" % i for i in range(1, n + 1)]


async def timers_pending(namesrv_addr: str, n: int) -> None:
    """Round ``n``'s timer message not delivered yet (by the writer, before it stops)."""
    assert [row[14] for row in await read_topic(namesrv_addr, TIMER_TOPIC)] == [b"timer%d" % i for i in range(1, n)]


async def test_a_store_with_pops_and_timers_from_pocketmq_to_apache_5_and_back(tmp_path: Path) -> None:
    store = tmp_path / "pocketmq" / "store"
    with PocketMQNamesrv(tmp_path / "namesrv") as ns:
        with pocketmq_on(tmp_path / "pocketmq", ns.addr, store) as pocket:
            await write(ns.addr, 1, POCKETMQ_WRITER_DELAY_S)
            await wait_revived(pocket, 1)
            await timers_pending(ns.addr, 1)
        # RocketMQ 5's revive offset: "early1"'s checkpoint (offset 0), the last record processed ("late1"'s,
        # should it have come, is held).
        offsets, text = revive_offsets(store)
        assert offsets == {"0": 0} and "dataVersion" in text
        with ApacheRocketMQ(tmp_path / "apache", V5, namesrv_addr=ns.addr, **apache_props(store)) as apache:
            await read(ns.addr, 1)
            await write(ns.addr, 2, APACHE_WRITER_DELAY_S)
            await write_long(ns.addr, apache)
            await wait_revived(apache, 2)
            await timers_pending(ns.addr, 2)
        # "early2"'s and the long topic's checkpoints after "late1"'s; RocketMQ 5 writes a dataVersion with its
        # offsets: how pocketmq tells them from an earlier pocketmq's.
        offsets, text = revive_offsets(store)
        assert offsets == {"0": 3} and "dataVersion" in text
        with pocketmq_on(tmp_path / "pocketmq-again", ns.addr, store):
            await read_long(ns.addr)
            await read(ns.addr, 2)
