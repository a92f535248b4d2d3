"""One store, two brokers: a workload of mixed messages written by one kind of broker, read back by the other.

``write_workload`` sends, through pocketmq's client in RocketMQ's native protocol, what a store holds in practice:
plain messages with keys, tags and properties over several queues (every 25th with a body big enough to be sent
compressed), batches, transactions (committed and rolled back: half and op records), delayed messages (some fired,
some still pending when the writer stops), retries (messages sent back by a consumer: the schedule topic and
%RETRY%), and a consumer group's committed offsets. ``snapshot`` reads everything back: every message of every
queue with its queue offset, commit-log offset, keys, tags, properties, store time and ids, the group's offsets, and
what queryMessage finds by key through the index. The test starts the other broker on the same folder and asks for
the same snapshot; the pending delayed messages must then fire there.

Both brokers run with the same small files (STORE), so the commit log spans several files with blank end records,
every queue several consume-queue files and the index several index files.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pocketmq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.producer.transaction_producer import LocalTransactionState, TransactionProducer
from pocketmq.common.message import MessageExt
from pocketmq.remoting import fastjson
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader
from tests.apache.apache_rocketmq import V4, ApacheRocketMQ
from tests.apache.pocketmq_process import PocketMQBroker, PocketMQNamesrv

# Small files on both sides (broker.conf keys; both read the same names): the store must be written and read
# with the same sizes.
STORE = {
    "mappedFileSizeCommitLog": str(32 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 64),
    "maxIndexNum": "500",
    "maxHashSlotNum": "200",
    # Level 1 fires while the writer runs; level 3 is still pending when it stops and must fire on the reader.
    "messageDelayLevel": "1s 2s 25s",
    "flushConsumerOffsetInterval": "500",
    "flushDelayOffsetInterval": "500",
    # A pull answers up to READ_BATCH messages (both brokers' default is 32): a snapshot of 100,000 messages is
    # ~100 pulls instead of ~3,100, each one work for the broker and the client on top of the messages it carries.
    "maxTransferCountOnMessageInMemory": "1024",
}
READ_BATCH = 1024

NORMAL, BATCH, TX, DELAY = "HandNormal", "HandBatch", "HandTx", "HandDelay"
RETRY_GROUP, RESUME_GROUP, CUSTOM_GROUP = "cg-hand-retry", "cg-hand-resume", "cg-hand-custom"
# A topic with settings of its own. (Not the order flag: 4.9.x's broker does not keep it from
# UPDATE_AND_CREATE_TOPIC, pocketmq's and 5.x's do.)
CUSTOM_TOPIC = TopicConfig("HandCustom", 3, 2, 4, "MULTI_TAG")
RETRY_TOPIC = f"%RETRY%{RETRY_GROUP}"
PENDING_DELAY_LEVEL = 3
# The reader's level 3 is short, so the test does not wait out the writer's 25 s: what the writer stored under it
# is due at once there (Apache's correctDeliverTimestamp takes a due time past now + the level's delay as now;
# pocketmq counts the reader's delay from the store time). The writer's 25 s keep them pending until it stops.
READER_DELAYS = {"messageDelayLevel": "1s 2s 3s"}
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
# Properties a pull adds on the way out (the client's, or the broker's answer): not part of the store.
READ_TIME_PROPERTIES = {"MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"}


@dataclass
class Workload:
    normal: int
    batches: int = 0
    batch_size: int = 10
    sent_ids: list[str] = field(default_factory=list)
    pending_delayed: list[bytes] = field(default_factory=list)  # bodies of the level-3 messages


def _normal_message(i: int) -> Message:
    body = (f"normal {i} " * (700 if i % 25 == 0 else 1)).encode()  # 25th: over 4 KiB, sent compressed
    msg = Message(NORMAL, body, tags=f"tag{i % 3}", keys=f"key-{i} shared-{i % 7}")
    msg.put_user_property("seq", str(i))
    return msg


class _Committing:
    """Commits even-numbered transactions and rolls back the others, at once."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE if int(arg) % 2 == 0 else LocalTransactionState.ROLLBACK_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def _in_chunks(send: Callable[[int], Awaitable[Any]], count: int, width: int = 16) -> list[Any]:
    """``send(i)`` for i < count, ``width`` at a time."""
    out: list[Any] = []
    for start in range(0, count, width):
        out += await asyncio.gather(*(send(i) for i in range(start, min(start + width, count))))
    return out


async def write_workload(namesrv_addr: str, normal: int, batched: int = 0) -> Workload:
    """``normal`` messages sent one by one; ``batched`` more in batches of 100 (else a few batches of 10)."""
    work = Workload(normal, batches=max(1, normal // 100))
    if batched:
        work.batches, work.batch_size = batched // 100, 100

    def batch(b: int) -> list[Message]:
        return [Message(BATCH, f"batch {b}.{j}".encode(), keys=f"bkey-{b}-{j}") for j in range(work.batch_size)]

    async with Producer("pg-hand", namesrv_addr, protocol="rocketmq") as producer:
        results = await _in_chunks(lambda i: producer.send(_normal_message(i)), normal)
        work.sent_ids += [r.msg_id for r in results]
        for sent in await _in_chunks(lambda b: producer.send_batch(batch(b)), work.batches, width=4):
            work.sent_ids += sent.msg_id.split(",")
    async with TransactionProducer("pg-hand-tx", namesrv_addr, _Committing(), protocol="rocketmq") as tx:
        for i in range(6):
            await tx.send_message_in_transaction(Message(TX, f"tx {i}".encode(), keys=f"tkey-{i}"), str(i))
    async with PullConsumer(RETRY_GROUP, namesrv_addr, protocol="rocketmq") as consumer:
        # Five messages a consumer gives back (CONSUMER_SEND_MSG_BACK): stored delayed, then in %RETRY%.
        mq = sorted(await consumer.fetch_subscribe_message_queues(NORMAL), key=lambda q: q.queue_id)[0]
        pulled = await consumer.pull(mq, "*", 0, 5)
        api = consumer.instance.mq_client_api
        addr = consumer.instance.find_broker_address_in_publish(mq.broker_name)
        for m in pulled.msg_found_list:
            header = ConsumerSendMsgBackRequestHeader(m.commit_log_offset, RETRY_GROUP, 1, m.msg_id, NORMAL,
                                                      max_reconsume_times=16)
            await api.consumer_send_message_back(addr, header, 5.0)
    async with PullConsumer(RESUME_GROUP, namesrv_addr, protocol="rocketmq") as consumer:
        for mq in await consumer.fetch_subscribe_message_queues(NORMAL):
            await consumer.update_consume_offset(mq, 3 + mq.queue_id, flush=True)
    # A group and a topic with settings of their own (subscriptionGroup.json, topics.json).
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        await admin.create_subscription_group(SubscriptionGroupConfig(
            CUSTOM_GROUP, consume_broadcast_enable=False, retry_queue_nums=2, retry_max_times=5), "DefaultCluster")
        [addr] = (await admin.master_addrs()).values()
        await admin.create_and_update_topic_config(addr, CUSTOM_TOPIC)
        # 4.9.x registers the topic it just created as a table of that topic alone: the name server keeps the
        # broker's other routes (RocketMQ's does not drop what a table leaves out).
        for topic in (NORMAL, BATCH, TX):
            assert (await admin.examine_topic_route_info(topic)).queue_datas, topic
    # The retries are in their topic before the writer stops.
    await wait_for_count(namesrv_addr, RETRY_TOPIC, 5)
    return work


async def write_delays(namesrv_addr: str, work: Workload) -> list[tuple[Any, ...]]:
    """Delayed messages, last thing before the writer stops: three that fire at once and three still pending when
    it stops; returns the topic once the first three are in it."""
    async with Producer("pg-hand-delay", namesrv_addr, protocol="rocketmq") as producer:
        for level in (1, PENDING_DELAY_LEVEL):
            for i in range(3):
                msg = Message(DELAY, f"delay {level}.{i}".encode(), keys=f"dkey-{level}-{i}")
                msg.delay_time_level = level
                await producer.send(msg)
                if level == PENDING_DELAY_LEVEL:
                    work.pending_delayed.append(msg.body)
    return await wait_for_count(namesrv_addr, DELAY, 3)


def _row(m: MessageExt) -> tuple[Any, ...]:
    props = {k: v for k, v in m.properties.items() if k not in READ_TIME_PROPERTIES}
    return (m.topic, m.queue_id, m.queue_offset, m.commit_log_offset, m.store_size, m.body_crc, m.flag, m.sys_flag,
            m.born_timestamp, m.born_host, m.store_timestamp, m.store_host, m.reconsume_times,
            m.prepared_transaction_offset, m.body, tuple(sorted(props.items())), m.msg_id, m.offset_msg_id)


async def read_topic(namesrv_addr: str, topic: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    async with PullConsumer("cg-hand-reader", namesrv_addr, protocol="rocketmq") as consumer:
        for mq in sorted(await consumer.fetch_subscribe_message_queues(topic), key=lambda q: q.queue_id):
            # Up to the queue's max offset: a broker just started on the store (Apache's above all, on a loaded
            # machine) may answer a pull in the middle with a retry status before it serves the rest.
            offset, end, retries = 0, await consumer.max_offset(mq), 0
            while offset < end:
                result = await consumer.pull(mq, "*", offset, READ_BATCH)
                if result.pull_status == PullStatus.FOUND:
                    rows += [_row(m) for m in result.msg_found_list]
                    offset = result.next_begin_offset
                    continue
                retries += 1
                # (the broker's own view, min and max offset and where to go on, says whether the queue or the
                # read went wrong: a CI run once had every pull of a queue answered OFFSET_ILLEGAL here)
                assert retries <= 100, (f"{mq}: {result.pull_status} at {offset} of {end}; the broker answered "
                                        f"min {result.min_offset}, max {result.max_offset}, next "
                                        f"{result.next_begin_offset}")
                await asyncio.sleep(0.1)
    return rows


async def wait_for_count(namesrv_addr: str, topic: str, count: int, timeout: float = 90.0) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            rows = await read_topic(namesrv_addr, topic)
        except Exception:  # no route yet
            rows = []
        if len(rows) >= count:
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic} has {len(rows)} messages, expected {count}")
        await asyncio.sleep(0.2)


def differing_rows(topic: str, got: list[tuple[Any, ...]], expected: list[tuple[Any, ...]]) -> str:
    """What a failed comparison needs to be understood: the counts, and the first row that differs."""
    pairs = enumerate(zip(got, expected, strict=False))
    first = next((i for i, (a, b) in pairs if a != b), min(len(got), len(expected)))
    served = got[first] if first < len(got) else None
    written = expected[first] if first < len(expected) else None
    return (f"{topic}: {len(got)} rows served, {len(expected)} written; first difference at row {first}: "
            f"served {served}, written {written}")


@dataclass
class Snapshot:
    topics: dict[str, list[tuple[Any, ...]]]
    offsets: dict[int, int]  # RESUME_GROUP's committed offset per queue of NORMAL
    by_key: dict[str, list[str]]  # key -> offsetMsgIds queryMessage finds
    configs: dict[str, Any] = field(default_factory=dict)  # the workload's topic configs and CUSTOM_GROUP's


async def snapshot(namesrv_addr: str, work: Workload,
                   topics: tuple[str, ...] = (NORMAL, BATCH, TX, RETRY_TOPIC)) -> Snapshot:
    """Every message of ``topics`` and the rest of what the reader must serve alike (DELAY is read apart: its
    pending messages fire in between)."""
    got = {topic: await read_topic(namesrv_addr, topic) for topic in topics}
    offsets: dict[int, int] = {}
    async with PullConsumer(RESUME_GROUP, namesrv_addr, protocol="rocketmq") as consumer:
        for mq in await consumer.fetch_subscribe_message_queues(NORMAL):
            offsets[mq.queue_id] = await consumer.fetch_consume_offset(mq, from_store=True)
    by_key: dict[str, list[str]] = {}
    keys = [f"key-{i}" for i in range(0, work.normal, max(1, work.normal // 20))] + [
        "shared-3", "bkey-0-4", f"bkey-{work.batches - 1}-{work.batch_size - 1}"]
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        for key in keys:
            topic = BATCH if key.startswith("bkey") else NORMAL
            found = await admin.query_message(topic, key, max_num=64, begin=0)
            by_key[key] = sorted(m.offset_msg_id for m in found)
        [addr] = (await admin.master_addrs()).values()
        configs: dict[str, Any] = {
            name: tc for name, tc in (await admin.get_all_topic_config(addr)).topic_config_table.items()
            if name in topics or name == CUSTOM_TOPIC.topic_name}
        configs[CUSTOM_GROUP] = (await admin.get_all_subscription_group(addr)).get(CUSTOM_GROUP)
    return Snapshot(got, offsets, by_key, configs)


# --- the handover, each way --------------------------------------------------------------------------------------


# Apache's flow control answers SYSTEM_BUSY to a send that waited 200 ms in its queue or a put that took 1 s, which a
# busy test machine sees; the workload's sends are not retried on it (nor are the Java client's).
APACHE_PATIENCE = {"waitTimeMillsInSendQueue": "10000", "osPageCacheBusyTimeOutMills": "10000"}


def apache_on(home: Path, namesrv_addr: str, store: Path, conf: dict[str, str]) -> ApacheRocketMQ:
    return ApacheRocketMQ(home, version=V4, namesrv_addr=namesrv_addr, brokerName="broker-a",
                          storePathRootDir=str(store), storePathCommitLog=str(store / "commitlog"),
                          **APACHE_PATIENCE, **conf)


def pocketmq_on(home: Path, namesrv_addr: str, store: Path, conf: dict[str, str]) -> PocketMQBroker:
    return PocketMQBroker(home, namesrv_addr, brokerName="broker-a", storePathRootDir=str(store), **conf)


class Phases:
    """Wall time of each phase (for bench/store_handover.py; the test asserts none)."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._start = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.times[name] = now - self._start
        self._start = now


def check_workload(before: Snapshot, work: Workload) -> None:
    """The writer stored what the workload says: every kind of record is there."""
    normal = before.topics[NORMAL]
    assert len(normal) == work.normal
    assert any(row[7] & 1 for row in normal), "no compressed body"
    assert len(before.topics[BATCH]) == work.batches * work.batch_size
    assert len(before.topics[TX]) == 3  # the committed half of six
    assert len(before.topics[RETRY_TOPIC]) == 5
    assert set(before.offsets.values()) == {3, 4, 5, 6}
    assert len(before.by_key["shared-3"]) >= 2 and all(before.by_key.values())
    assert not set(work.pending_delayed) & {row[14] for row in before.topics[DELAY]}, "fired on the writer"
    assert set(before.configs) == {NORMAL, BATCH, TX, RETRY_TOPIC, CUSTOM_TOPIC.topic_name, CUSTOM_GROUP}
    assert before.configs[CUSTOM_TOPIC.topic_name] == CUSTOM_TOPIC
    assert before.configs[CUSTOM_GROUP] == SubscriptionGroupConfig(
        CUSTOM_GROUP, consume_broadcast_enable=False, retry_queue_nums=2, retry_max_times=5)


async def check_served_alike(namesrv_addr: str, before: Snapshot, work: Workload) -> Snapshot:
    """The reader serves what the writer did (every field of every message, offsets, queries by key), fires the
    delayed messages still pending exactly once, and appends after the writer's last record."""
    after = await snapshot(namesrv_addr, work)
    for topic, rows in after.topics.items():
        assert rows == before.topics[topic], differing_rows(topic, rows, before.topics[topic])
    assert after.offsets == before.offsets
    assert after.by_key == before.by_key
    assert after.configs == before.configs
    # Exactly once: the ones that fired on the writer are not delivered again (the reader resumed each delay level
    # where delayOffset.json says), and neither are the retries.
    fired = await wait_for_count(namesrv_addr, DELAY, 6)
    seen = [(row[14], row[1], row[2], row[10]) for row in fired]  # body, queue, offset, store time
    assert len(fired) == 6 and set(before.topics[DELAY]) <= set(fired), seen
    assert set(work.pending_delayed) <= {row[14] for row in fired}, seen
    # ...and no more after: once every level has handed on all its queue holds, the six are all there is.
    levels = await wait_levels_delivered(namesrv_addr)
    assert await read_topic(namesrv_addr, DELAY) == fired, (levels, seen)
    assert await read_topic(namesrv_addr, RETRY_TOPIC) == before.topics[RETRY_TOPIC]
    # Appends go on where the writer stopped: the next queue offset and a commit-log offset past every record.
    last = max(before.topics[NORMAL], key=lambda row: row[3])
    async with Producer("pg-hand-after", namesrv_addr, protocol="rocketmq") as producer:
        result = await producer.send(Message(NORMAL, b"after the handover", keys="after"))
    queue_rows = [row for row in before.topics[NORMAL] if row[1] == result.message_queue.queue_id]
    assert result.queue_offset == len(queue_rows)
    rows = await read_topic(namesrv_addr, NORMAL)
    [new] = [row for row in rows if row[14] == b"after the handover"]
    assert new[3] > last[3]
    # What the reader now holds, for a handover back.
    return Snapshot({**before.topics, NORMAL: rows, DELAY: fired}, after.offsets, after.by_key, after.configs)


async def wait_levels_delivered(namesrv_addr: str, timeout: float = 90.0) -> dict[str, str]:
    """Until the broker's delay levels have delivered every message their queues hold: each
    ``scheduleMessageOffset_<level>`` of its runtime info (``delivered,stored``) at its queue's end, the pending
    level among them."""
    deadline = time.monotonic() + timeout
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        [addr] = (await admin.master_addrs()).values()
        while True:
            stats = await admin.fetch_broker_runtime_stats(addr)
            levels = {k: v for k, v in stats.items() if k.startswith("scheduleMessageOffset_")}
            done = {k: v for k, v in levels.items() if len(set(v.split(","))) == 1}
            if f"scheduleMessageOffset_{PENDING_DELAY_LEVEL}" in levels and done == levels:
                return levels
            assert time.monotonic() < deadline, levels
            await asyncio.sleep(0.2)


async def wait_persisted(namesrv_addr: str, store: Path, timeout: float = 60.0) -> None:
    """Until Apache's broker has written the group's offsets and how far level 1 of the delays has been delivered
    (it writes both every flush...Interval: a kill before that loses them on its own restart too)."""
    async with PullConsumer("cg-hand-schedule", namesrv_addr, protocol="rocketmq") as consumer:
        # Level 1 is queue 0 of the schedule topic: the retries and the three level-1 delays went through it.
        delivered = await consumer.max_offset(MessageQueue(SCHEDULE_TOPIC, "broker-a", 0))
    deadline = time.monotonic() + timeout
    offsets, delays = store / "config" / "consumerOffset.json", store / "config" / "delayOffset.json"
    while True:
        try:
            # fastjson's text ({1:8}: not JSON to Python's json module)
            levels = fastjson.loads(delays.read_bytes()).get("offsetTable", {})
            if "@" + RESUME_GROUP in offsets.read_text() and levels.get("1") == delivered:
                return
        except (OSError, ValueError):
            pass
        assert time.monotonic() < deadline, "Apache never persisted the offsets"
        await asyncio.sleep(0.1)


async def store_from_pocketmq_to_apache_rocketmq(root: Path, messages: int, conf: dict[str, str],
                                                 check_files: Callable[[Path], None] | None = None,
                                                 and_back: bool = False, batched: int = 0) -> Phases:
    """pocketmq writes (clean shutdown), Apache RocketMQ 4.9.7 reads and appends; ``and_back``: pocketmq then takes
    the store back (after Apache's clean shutdown) and serves what Apache appended too."""
    phases = Phases()
    store = root / "pocketmq" / "store"
    with PocketMQNamesrv(root / "namesrv") as ns:
        with pocketmq_on(root / "pocketmq", ns.addr, store, conf):
            phases.mark("start writer")
            work = await write_workload(ns.addr, messages, batched)
            phases.mark("write")
            before = await snapshot(ns.addr, work)
            before.topics[DELAY] = await write_delays(ns.addr, work)
            phases.mark("read on writer")
        phases.mark("stop writer")
        check_workload(before, work)
        if check_files is not None:
            check_files(store)
        with apache_on(root / "apache", ns.addr, store, conf | READER_DELAYS):
            await wait_for_count(ns.addr, NORMAL, 1)
            phases.mark("start reader")
            held = await check_served_alike(ns.addr, before, work)
            phases.mark("read on reader")
        phases.mark("stop reader")
        if and_back:
            with pocketmq_on(root / "pocketmq-again", ns.addr, store, conf | READER_DELAYS):
                await wait_for_count(ns.addr, NORMAL, 1)
                again = await snapshot(ns.addr, work)
                again.topics[DELAY] = await read_topic(ns.addr, DELAY)
                assert again.topics == held.topics and again.offsets == held.offsets
                assert again.by_key == held.by_key and again.configs == held.configs
                async with MQAdminExt(ns.addr, protocol="rocketmq") as admin:
                    [found] = await admin.query_message(NORMAL, "after", begin=0)
                assert found.body == b"after the handover"
            phases.mark("back on pocketmq")
    return phases


async def store_from_apache_rocketmq_to_pocketmq(root: Path, messages: int, conf: dict[str, str],
                                                 stop: signal.Signals,
                                                 check_files: Callable[[Path], None] | None = None,
                                                 batched: int = 0) -> Phases:
    """Apache RocketMQ 4.9.7 writes and stops (SIGTERM: clean, SIGKILL: a crash), pocketmq reads."""
    phases = Phases()
    with PocketMQNamesrv(root / "namesrv") as ns:
        apache = apache_on(root / "apache", ns.addr, root / "apache" / "store", conf)
        store = apache.store_dir
        with apache:
            phases.mark("start writer")
            work = await write_workload(ns.addr, messages, batched)
            phases.mark("write")
            before = await snapshot(ns.addr, work)
            before.topics[DELAY] = await write_delays(ns.addr, work)
            phases.mark("read on writer")
            if stop == signal.SIGKILL:
                await wait_persisted(ns.addr, store)
                phases.mark("wait persisted")
            assert apache.broker is not None
            apache.broker.stop(stop)
            phases.mark("stop writer")
        check_workload(before, work)
        assert (store / "abort").exists() == (stop == signal.SIGKILL)
        if check_files is not None:
            check_files(store)
        with pocketmq_on(root / "pocketmq", ns.addr, store, conf | READER_DELAYS):
            await wait_for_count(ns.addr, NORMAL, 1)
            phases.mark("start reader")
            await check_served_alike(ns.addr, before, work)
            phases.mark("read on reader")
        phases.mark("stop reader")
    return phases
