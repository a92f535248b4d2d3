"""The POP revive offset (the consumer offset of CID_RMQ_SYS_REVIVE_GROUP on each revive queue) is RocketMQ 5's: the
last revive record processed, or the one before the oldest checkpoint still held, and reading goes on from the
record after it. A store handed to RocketMQ 5 then misses no checkpoint (tests/apache/test_store_pop_timers_5.py),
and a consumerOffset.json of an earlier pocketmq (the next record to read, no dataVersion) is read again from
where that pocketmq stopped."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from broker_harness import Cluster
from pop_wire import FAST_REVIVE, PopClient, read_queue, settle_revive

from pocketmq.broker import BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.common.pop_ack_constants import CK_TAG, REVIVE_GROUP
from pocketmq.remoting.codes import ResponseCode
from pocketmq.storage.pop import AckMsg, PopCheckPoint

ONE_QUEUE: dict[str, Any] = dict(FAST_REVIVE, enable_pop_buffer_merge=False, revive_queue_num=1,
                                 revive_interval=3600.0)  # rounds run by hand


async def popping(cluster: Cluster, broker: BrokerController, topic: str, n: int) -> PopClient:
    mq = cluster.mq(broker)
    assert (await mq.create_topic(topic, 1)).code == ResponseCode.SUCCESS
    for i in range(n):
        assert (await mq.send(topic, f"m{i}".encode(), queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return PopClient(mq, broker.broker_config.broker_name)


def committed(broker: BrokerController) -> int:
    revive = broker.pop_revive_service
    return broker.consumer_offset_manager.query_offset(REVIVE_GROUP, revive.revive_topic, 0)


async def revive_log(broker: BrokerController, count: int) -> list[Any]:
    """The revive queue once the timer has put ``count`` records in it (a guard of 10 s, not an expectation)."""
    topic = broker.pop_revive_service.revive_topic
    for _ in range(1000):
        await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
        records = read_queue(broker.store, topic, 0)
        if len(records) >= count:
            return records
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(records)} revive records, expected {count}")


async def test_the_revive_offset_is_the_last_record_processed_as_in_rocketmq_5(cluster: Cluster) -> None:
    broker = await cluster.broker(**ONE_QUEUE)
    pc = await popping(cluster, broker, "PopLast", 3)
    handles = []
    for _ in range(3):  # a checkpoint each
        got = await pc.pop("G", "PopLast", 0, max_nums=1, invisible=300)
        assert len(got.messages) == 1
        handles += got.handles
    assert (await pc.ack("G", "PopLast", handles[0])).code == ResponseCode.SUCCESS
    await settle_revive(broker)
    records = read_queue(broker.store, broker.pop_revive_service.revive_topic, 0)
    assert len(records) == 4 and broker.pop_revive_service.revived == 2  # 3 checkpoints, 1 ack
    # RocketMQ 5 reads on from committed + 1: the next offset to read committed would skip the next record.
    assert committed(broker) == len(records) - 1


async def test_a_held_checkpoint_is_read_again_after_a_restart_and_after_an_earlier_pocketmq(cluster: Cluster) -> None:
    # Margins of 30 s: a checkpoint read stays held (not safe) for the whole test.
    broker = await cluster.broker(**{**ONE_QUEUE, "pop_revive_margin": 30.0})
    pc = await popping(cluster, broker, "PopHeld", 2)
    first = await pc.pop("G", "PopHeld", 0, max_nums=1, invisible=200)
    assert (await pc.ack("G", "PopHeld", first.handles[0])).code == ResponseCode.SUCCESS
    await revive_log(broker, 2)  # the first checkpoint and its ack
    assert (await pc.pop("G", "PopHeld", 0, max_nums=1, invisible=200)).bodies == [b"m1"]
    records = await revive_log(broker, 3)
    assert [m.tags for m in records] == [CK_TAG, "ack", CK_TAG]
    await broker.pop_revive_service.revive_all()
    assert broker.pop_revive_service.held_count == 1
    assert committed(broker) == 1  # the ack before the held checkpoint: RocketMQ 5 reads the checkpoint again

    broker = await cluster.restart(broker)
    await broker.pop_revive_service.revive_all()
    assert [ck.revive_offset for ck in broker.pop_revive_service.queues[0].held.values()] == [2]

    # What an earlier pocketmq left: the next record to read (the held checkpoint), and no dataVersion.
    await broker.shutdown()
    path = broker.consumer_offset_manager.config_file_path
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    assert "dataVersion" in data
    data["offsetTable"][f"{broker.pop_revive_service.revive_topic}@{REVIVE_GROUP}"] = {"0": 2}
    del data["dataVersion"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    broker = BrokerController(BrokerConfig(**vars(broker.broker_config)))
    await broker.start()
    cluster.brokers.append(broker)
    assert committed(broker) == 1
    await broker.pop_revive_service.revive_all()
    assert [ck.revive_offset for ck in broker.pop_revive_service.queues[0].held.values()] == [2]
    # Stopped with nothing else changed, the file is written in the new form (a RocketMQ 5 broker reading the old
    # one would skip the held checkpoint).
    await broker.shutdown()
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    assert "dataVersion" in data
    assert data["offsetTable"][f"{broker.pop_revive_service.revive_topic}@{REVIVE_GROUP}"] == {"0": 1}


async def test_a_checkpoint_is_held_until_a_record_due_past_its_safety_margin_was_read(cluster: Cluster) -> None:
    """The timer hands over the records of one slot in any order: one due just after a checkpoint's revive time
    may come before the checkpoint's ack, due at it. Revived then, the message came back though it was acked.
    The records here are due already when written, so they are in the queue at once, in the order written."""
    broker = await cluster.broker(**ONE_QUEUE)
    pc = await popping(cluster, broker, "PopSafe", 1)
    assert (await pc.pop("G", "PopSafe", 0, invisible=60_000)).bodies == [b"m0"]  # (makes the group)
    revive, log = broker.pop_revive_service, broker.pop_message_processor.revive_log
    now = time.time_ns() // 1_000_000
    ck = PopCheckPoint(0, now - 10_000, 5_000, 1, 0, "PopSafe", "G", broker.broker_config.broker_name,
                       queue_offset_diff=[0])
    other = AckMsg(0, 0, "G", "PopSafe", 0, now - 9_000, ck.broker_name)  # (of no checkpoint read)
    assert (await log.append_check_point(ck, 0)).is_ok
    assert (await log.append_ack(other, 0, ck.revive_time + 10)).is_ok  # within the margin
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    await revive.revive_all()
    assert (revive.held_count, revive.revived) == (1, 0)
    ack = AckMsg(0, 0, "G", "PopSafe", 0, ck.pop_time, ck.broker_name)
    assert (await log.append_ack(ack, 0, ck.revive_time)).is_ok
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    await revive.revive_all()
    assert (revive.held_count, revive.revived) == (0, 0)


async def test_a_checkpoint_revived_behind_a_held_one_is_marked_done_for_a_restart(cluster: Cluster) -> None:
    """B, after A in the revive queue, falls due and is revived while A is held: the revive offset stays before A,
    so a restart reads B again. Its done mark (an ack of its own) keeps it from being revived a second time."""
    broker = await cluster.broker(**ONE_QUEUE)
    pc = await popping(cluster, broker, "PopBehind", 2)
    assert len((await pc.pop("G", "PopBehind", 0, invisible=60_000)).messages) == 2  # (makes the group)
    log = broker.pop_message_processor.revive_log
    now = time.time_ns() // 1_000_000
    name = broker.broker_config.broker_name
    a = PopCheckPoint(0, now - 9_000, 5_000, 1, 0, "PopBehind", "G", name, queue_offset_diff=[0])
    b = PopCheckPoint(1, now - 10_000, 5_000, 1, 0, "PopBehind", "G", name, queue_offset_diff=[0])
    for ck in (a, b):  # (due already: in the queue at once, in this order; B is due well before A)
        assert (await log.append_check_point(ck, 0)).is_ok
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    await broker.pop_revive_service.revive_all()
    assert (broker.pop_revive_service.held_count, broker.pop_revive_service.revived) == (1, 1)
    broker = await cluster.restart(broker)
    await broker.pop_revive_service.revive_all()
    assert (broker.pop_revive_service.held_count, broker.pop_revive_service.revived) == (1, 0)
