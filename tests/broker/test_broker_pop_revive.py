"""POP's checkpoints and acks through the timer wheel (RocketMQ 5), over real sockets: the revive service holds
only the checkpoints about to fall due, however many pops are out; each message not acked is revived exactly once
when due; an ack just before the revive time, or one the timer delivers late, stops the revive; a change of
invisible time finishes the old checkpoint and revives at the new time; across a restart, and a kill -9 of a real
`pocketmq dev`. Timers run in milliseconds (pop_wire.FAST_REVIVE); nothing asserts how long anything took."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from broker_harness import Cluster
from pop_wire import FAST_REVIVE, PopClient, read_queue, revive_records, settle_revive

from pocketmq.broker import BrokerController
from pocketmq.common.constants import PROPERTY_TIMER_DELIVER_MS
from pocketmq.common.extra_info_util import parse_extra_info
from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import PROPERTY_FIRST_POP_TIME
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC

NO_BUFFER: dict[str, Any] = dict(enable_pop_buffer_merge=False, **FAST_REVIVE)  # each pop writes its checkpoint
ACK_INTERVAL = round(FAST_REVIVE["pop_ack_time_interval"] * 1000)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def topic_with(cluster: Cluster, broker: BrokerController, topic: str, bodies: list[bytes]) -> PopClient:
    mq = cluster.mq(broker)
    assert (await mq.create_topic(topic, 1)).code == ResponseCode.SUCCESS
    for body in bodies:
        assert (await mq.send(topic, body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return PopClient(mq, broker.broker_config.broker_name)


async def retried(broker: BrokerController, group: str, topic: str) -> list[MessageExt]:
    """What the revive put back into the group's pop retry topic."""
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return read_queue(broker.store, broker.pop_message_processor.retry_topic(topic, group), 0)


async def deliver_times(broker: BrokerController) -> dict[str, list[int]]:
    """The deliver time of each record written, by tag."""
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    out: dict[str, list[int]] = {}
    for m in revive_records(broker):
        out.setdefault(m.tags or "", []).append(int(m.properties[PROPERTY_TIMER_DELIVER_MS]))
    return {tag: sorted(times) for tag, times in out.items()}


async def test_many_pops_not_acked_wait_in_the_timer_and_each_is_revived_once_when_due(cluster: Cluster) -> None:
    broker = await cluster.broker(**{**NO_BUFFER, "revive_interval": 3600.0})  # rounds run by hand, checked
    n, invisible = 100, 3_000
    bodies = [f"m{i}".encode() for i in range(n)]
    pc = await topic_with(cluster, broker, "PopMany", bodies)
    revive_times = []
    for _ in range(n):  # a checkpoint per message
        got = await pc.pop("G", "PopMany", 0, max_nums=1, invisible=invisible)
        assert len(got.messages) == 1 and got.header is not None
        revive_times.append(got.header.pop_time + invisible)
    # Each checkpoint waits in the timer's queue, due popAckTimeInterval before its revive time.
    cks = (await deliver_times(broker))["ck"]
    assert len(cks) == n, (len(cks), sorted(set(cks) ^ {t - ACK_INTERVAL for t in revive_times}))
    assert cks == sorted(t - ACK_INTERVAL for t in revive_times)
    revive = broker.pop_revive_service
    most_held = 0

    def only_what_is_due() -> None:
        # What the service holds reached its revive queue, so it was due: the whole count of pops before (it held
        # every checkpoint from its pop on).
        nonlocal most_held
        due = sum(1 for t in revive_times if t - ACK_INTERVAL <= now_ms())
        assert revive.held_count <= due
        most_held = max(most_held, revive.held_count)

    await revive.revive_all()
    only_what_is_due()
    await settle_revive(broker, each_round=only_what_is_due)
    assert sorted(m.body for m in (await retried(broker, "G", "PopMany"))) == sorted(bodies)  # each once
    assert revive.revived == n and revive.held_count == 0 and most_held <= n


async def test_an_ack_just_before_the_revive_time_stops_it_and_the_rest_comes_back_once_after_a_restart(
    cluster: Cluster,
) -> None:
    broker = await cluster.broker(**NO_BUFFER)
    pc = await topic_with(cluster, broker, "PopAck", [b"a0", b"a1", b"a2"])
    invisible = 1_500
    got = await pc.pop("G", "PopAck", 0, invisible=invisible)
    assert got.bodies == [b"a0", b"a1", b"a2"] and got.header is not None
    revive_time = got.header.pop_time + invisible
    assert (await pc.ack("G", "PopAck", got.handles[0])).code == ResponseCode.SUCCESS
    await asyncio.sleep(max(0, revive_time - 300 - now_ms()) / 1000)
    # Just before the revive time: the checkpoint reaches its revive queue after this ack was written, and the ack
    # after the checkpoint, both through the timer.
    assert (await pc.batch_ack("G", "PopAck", got.handles[1:2])).code == ResponseCode.SUCCESS
    assert await deliver_times(broker) == {"ck": [revive_time - ACK_INTERVAL], "ack": [revive_time],
                                     "bAck": [revive_time]}
    broker = await cluster.restart(broker)
    await settle_revive(broker)
    [back] = await retried(broker, "G", "PopAck")
    assert (back.body, back.reconsume_times) == (b"a2", 1)
    again = PopClient(cluster.mq(broker), broker.broker_config.broker_name)
    assert (await again.pop("G", "PopAck", invisible=60_000, poll=1_000)).bodies == [b"a2"]


async def test_an_ack_the_timer_delivers_after_the_revive_time_still_stops_the_revive(cluster: Cluster) -> None:
    # Slots of 500 ms: an ack due at the revive time may reach the revive queue up to a slot after it, long after
    # a revive by the clock would have put the message back.
    broker = await cluster.broker(**{**NO_BUFFER, "timer_precision_ms": 500})
    pc = await topic_with(cluster, broker, "PopLate", [f"l{i}".encode() for i in range(4)])
    revive_times = []
    for _ in range(4):  # popped at different times, so some checkpoints and acks fall in different slots
        got = await pc.pop("G", "PopLate", 0, max_nums=1, invisible=700)
        assert got.header is not None
        revive_times.append(got.header.pop_time + 700)
        assert (await pc.ack("G", "PopLate", got.handles[0])).code == ResponseCode.SUCCESS
        await asyncio.sleep(0.13)
    assert await deliver_times(broker) == {"ck": [t - ACK_INTERVAL for t in revive_times], "ack": revive_times}
    await settle_revive(broker)
    assert await retried(broker, "G", "PopLate") == [] and broker.pop_revive_service.revived == 0


async def test_change_invisible_time_finishes_the_old_checkpoint_and_revives_at_the_new_time_after_a_restart(
    cluster: Cluster,
) -> None:
    broker = await cluster.broker(**NO_BUFFER)
    pc = await topic_with(cluster, broker, "PopChg", [b"c0", b"c1"])
    first = await pc.pop("G", "PopChg", 0, invisible=2_000)
    assert first.bodies == [b"c0", b"c1"] and first.header is not None
    old_revive = first.header.pop_time + 2_000
    changed = [await pc.change_invisible("G", "PopChg", handle, 300) for handle in first.handles]
    assert all(resp.code == ResponseCode.SUCCESS for resp, _ in changed)
    assert (await pc.ack("G", "PopChg", changed[1][1])).code == ResponseCode.SUCCESS  # c1 with its new handle
    new_revives = [parse_extra_info(handle).pop_time + 300 for _, handle in changed]
    # The pop's checkpoint, one per change, the changes' acks of the old handles (due at the old revive time),
    # and c1's ack of its new one.
    cks = [old_revive - ACK_INTERVAL] + [t - ACK_INTERVAL for t in new_revives]
    assert await deliver_times(broker) == {"ck": sorted(cks), "ack": sorted([old_revive, old_revive, new_revives[1]])}
    broker = await cluster.restart(broker)
    await settle_revive(broker)  # the old checkpoint's time too: it is acked, nothing comes of it
    [back] = await retried(broker, "G", "PopChg")
    assert (back.body, back.reconsume_times) == (b"c0", 1)


async def test_pops_are_refused_without_the_timer_wheel_as_in_rocketmq_5(cluster: Cluster) -> None:
    broker = await cluster.broker(timer_wheel_enable=False)
    pc = await topic_with(cluster, broker, "PopOff", [b"x"])
    for order in (False, True):
        got = await pc.pop("G", "PopOff", 0, order=order)
        assert got.response.code == ResponseCode.SYSTEM_ERROR and not got.messages
        assert got.response.remark == (f"the broker[{broker.broker_config.broker_ip1}] pop message is forbidden "
                                       f"because timerWheelEnable is false")
    assert broker.consumer_offset_manager.query_offset("G", "PopOff", 0) < 0


async def max_offset(mq: Any, topic: str, queue_id: int) -> int:
    resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, queue_id))
    return resp.decode_header(GetMaxOffsetResponseHeader).offset if resp.code == ResponseCode.SUCCESS else 0


# pop_wire.FAST_REVIVE for a `pocketmq dev` process: its properties file.
DEV_FAST_REVIVE = ("brokerName=broker-a\nreviveInterval=20\ntimerPrecisionMs=50\npopAckTimeInterval=50\n"
                   "popReviveMargin=50\nreviveQueueNum=1\nflushConsumerOffsetInterval=50\n")


async def _equals(value: Any, expected: int) -> bool:
    return await value == expected


def offset_on_disk(store: Path, key: str, queue_id: int) -> int | None:
    """The offset of ``key`` (topic@group) and the queue in the store's consumerOffset.json, None while not there."""
    for path in store.rglob("consumerOffset.json"):
        try:
            table = json.loads(path.read_text()).get("offsetTable", {})
        except (OSError, ValueError):
            return None  # (written by a rename: a read sees the old file or the new one)
        offsets = table.get(key, {})
        return offsets.get(str(queue_id), offsets.get(queue_id))
    return None


async def until(check: Any) -> None:
    """Until ``await check()`` is true (a pop answers with what is dispatched; a guard of 30 s, not an expectation)."""
    for _ in range(3000):
        if await check():
            return
        await asyncio.sleep(0.01)


async def test_a_broker_killed_before_the_revive_time_revives_what_was_not_acked(
    tmp_path: Any, dev_broker: Any
) -> None:
    store = tmp_path / "dev"
    conf = DEV_FAST_REVIVE + "enablePopBufferMerge=false\n"
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        assert (await dev.mq.create_topic("PopKill", 1)).code == ResponseCode.SUCCESS
        for body in (b"k1", b"k2", b"k3"):
            assert (await dev.mq.send("PopKill", body, queue_id=0)).code == ResponseCode.SUCCESS
        await until(lambda: _equals(max_offset(dev.mq, "PopKill", 0), 3))
        got = await pc.pop("GK", "PopKill", 0, invisible=2_000, poll=2_000)
        assert got.bodies == [b"k1", b"k2", b"k3"]
        assert (await pc.ack("GK", "PopKill", got.handles[0])).code == ResponseCode.SUCCESS
        # The checkpoint and the ack wait in the timer's queue (once dispatched), not in the revive queue.
        await until(lambda: _equals(max_offset(dev.mq, TIMER_TOPIC, 0), 2))
        assert await max_offset(dev.mq, TIMER_TOPIC, 0) == 2
        assert await max_offset(dev.mq, "rmq_sys_REVIVE_LOG_DefaultCluster", 0) == 0
        # The group's offset flushed (a pop after the restart reads on past k3): a sleep of 0.3 s was not always
        # enough on a loaded machine, and the restart popped k1, k2 and k3 anew.
        await until(lambda: _equals(asyncio.sleep(0, offset_on_disk(store, "PopKill@GK", 0)), 3))
        assert offset_on_disk(store, "PopKill@GK", 0) == 3
        dev.proc.kill()
        await dev.proc.wait()
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        back: list[Any] = []
        for _ in range(60):  # long polls until the revived messages come (a guard, not an expectation)
            back += (await pc.pop("GK", "PopKill", invisible=60_000, poll=2_000)).messages
            if {b"k2", b"k3"} <= {m.body for m in back}:
                break
        # k1 was acked before the kill: it stays acked. (A crash may revive one twice: at least once.)
        assert {(m.body, m.reconsume_times) for m in back} == {(b"k2", 1), (b"k3", 1)}


async def test_a_broker_killed_right_after_a_change_of_invisible_time_revives_the_message(
    tmp_path: Any, dev_broker: Any
) -> None:
    # With the pop buffer on (the default), the new checkpoint stayed in memory (up to popCkStayBufferTime) while
    # the old one's ack went to the store at once: a kill -9 then lost the message for good.
    store = tmp_path / "dev"
    conf = DEV_FAST_REVIVE
    revive_topic = "rmq_sys_REVIVE_LOG_DefaultCluster"
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        assert (await dev.mq.create_topic("PopChange", 1)).code == ResponseCode.SUCCESS
        assert (await dev.mq.send("PopChange", b"c1", queue_id=0)).code == ResponseCode.SUCCESS
        await until(lambda: _equals(max_offset(dev.mq, "PopChange", 0), 1))
        got = await pc.pop("GC", "PopChange", 0, invisible=1_000, poll=2_000)
        assert got.bodies == [b"c1"]
        async def written() -> bool:  # the buffer has written the pop's checkpoint (its revive time near)
            return await max_offset(dev.mq, TIMER_TOPIC, 0) + await max_offset(dev.mq, revive_topic, 0) >= 1

        await until(written)
        resp, _ = await pc.change_invisible("GC", "PopChange", got.handles[0], 3_000)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        await until(lambda: _equals(asyncio.sleep(0, offset_on_disk(store, "PopChange@GC", 0)), 1))  # flushed
        assert offset_on_disk(store, "PopChange@GC", 0) == 1
        dev.proc.kill()
        await dev.proc.wait()
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        back: list[Any] = []
        for _ in range(30):  # long polls until it comes (a guard, not an expectation)
            back += (await pc.pop("GC", "PopChange", invisible=60_000, poll=2_000)).messages
            if back:
                break
        assert [(m.body, m.reconsume_times) for m in back] == [(b"c1", 1)]


async def test_a_pop_whose_invisible_time_the_timer_would_refuse_is_refused(cluster: Cluster) -> None:
    # Its checkpoint is a timer message: past timerMaxDelaySec the timer refused it, and the message popped never
    # came back (with the pop buffer, its checkpoint was retried for ever and the group's offset stood still).
    broker = await cluster.broker(timer_max_delay_sec=60, **FAST_REVIVE)
    pc = await topic_with(cluster, broker, "PopFar", [b"far"])
    refused = await pc.pop("GF", "PopFar", 0, invisible=60_001)
    assert refused.response.code == ResponseCode.INVALID_PARAMETER and not refused.messages
    assert "timerMaxDelaySec" in (refused.response.remark or "")
    assert (await pc.pop("GF", "PopFar", 0, invisible=60_000)).bodies == [b"far"]


async def test_a_message_sent_as_a_retry_gets_its_first_pop_time_when_revived(cluster: Cluster) -> None:
    """A message that already counts reconsume times (a client's own retry, sent back by a producer) and has no
    FIRST_POP_TIME gets the pop's, as RocketMQ 5's revive gives it (reconsumeTimes 0 or the property missing)."""
    broker = await cluster.broker(**NO_BUFFER)
    pc = await topic_with(cluster, broker, "PopFirst", [])
    assert (await pc.mq.send("PopFirst", b"again", queue_id=0, reconsume_times=3)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    got = await pc.pop("G", "PopFirst", 0, invisible=100)
    assert [m.reconsume_times for m in got.messages] == [3]
    await settle_revive(broker)
    [m] = await retried(broker, "G", "PopFirst")
    assert (m.reconsume_times, m.properties.get(PROPERTY_FIRST_POP_TIME)) == (4, str(got.header.pop_time))
