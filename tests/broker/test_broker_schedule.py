"""Delay levels (ScheduleMessageService): the DELAY property as RocketMQ reads it, delivery never before it is due,
and the schedule's progress in the broker's runtime info."""

from __future__ import annotations

import asyncio

import pytest
from broker_harness import MQ

from pocketmq.common.codec import decode_all
from pocketmq.common.message import delay_time_level
from pocketmq.common.message_batch import BatchItem
from pocketmq.remoting.admin_body import KVTable
from pocketmq.remoting.codes import RequestCode, ResponseCode

LEVELS = "20ms 45ms 300ms"


@pytest.mark.parametrize("text", ["abc", " 1", "1 ", "1_0", "2147483648", "99999999999", "1.0"])
async def test_a_delay_that_is_no_int_is_refused_as_rocketmq_refuses_it(cluster, text) -> None:
    """RocketMQ's put reads DELAY with Integer.parseInt and answers SYSTEM_ERROR when it throws (tests/apache's
    differential table shows Apache 4.9.7 doing so); pocketmq stored these undelayed, or read " 1" and "1_0" as
    levels, and a level past the int's range as the longest delay."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("BadDelay", queues=1)
    resp = await mq.send("BadDelay", b"x", properties=MQ.props(DELAY=text))
    assert resp.code == ResponseCode.SYSTEM_ERROR, resp
    assert "DELAY" in resp.remark
    assert broker.store.get_max_offset_in_queue("BadDelay", 0) == 0
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 0) <= 0


@pytest.mark.parametrize(("text", "level"), [("+1", 1), ("\u0661", 1), ("-1", -1), ("0", 0), ("7", 7)])
def test_delay_levels_are_read_as_integer_parse_int_reads_them(text, level) -> None:
    assert delay_time_level({"DELAY": text}) == level


async def test_a_well_formed_delay_with_a_sign_is_taken(cluster, dispatched) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("SignDelay", queues=1)
    assert (await mq.send("SignDelay", b"x", properties=MQ.props(DELAY="+2"))).code == ResponseCode.SUCCESS
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 1) == 1


async def test_a_batch_header_whose_delay_is_no_int_is_refused(cluster) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("BadDelayBatch", queues=1)
    resp = await mq.send_batch("BadDelayBatch", [BatchItem(0, b"y", "")], properties=MQ.props(WAIT="true", DELAY="x"))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "DELAY" in resp.remark
    assert broker.store.get_max_offset_in_queue("BadDelayBatch", 0) == 0


@pytest.mark.both_loops
async def test_no_delayed_message_is_delivered_before_it_is_due(cluster, poll, dispatched) -> None:
    """The level's worker slept until the due time and delivered: the loop's timers round to the millisecond and
    woke it up to 1 ms early, about one message in fifty on uvloop (the CLI's loop; Apache never delivers early)."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("OnTime", queues=2)
    count = 300
    for i in range(count):
        level = i % 2 + 1
        sent = await mq.send("OnTime", f"{level}:{i}".encode(), queue_id=level - 1,
                             properties=MQ.props(DELAY=str(level)))
        assert sent.code == ResponseCode.SUCCESS
        if i % 25 == 0:
            await asyncio.sleep(0.003)  # (the sends spread over several of the loop's timer ticks)
    await poll(lambda: sum(broker.store.get_max_offset_in_queue("OnTime", q) for q in (0, 1)) == count, timeout=20)
    await dispatched(broker)
    scheduled = {m.body: m.store_timestamp for q in (0, 1) for m in await read_all(mq, "SCHEDULE_TOPIC_XXXX", q)}
    delays = {b"1": 20, b"2": 45}
    early = []
    for q in (0, 1):
        for m in await read_all(mq, "OnTime", q):
            due = scheduled[m.body] + delays[m.body.split(b":")[0]]
            if m.store_timestamp < due:
                early.append((m.body, due - m.store_timestamp))
    assert len(scheduled) == count
    assert early == []


async def read_all(mq: MQ, topic: str, queue_id: int) -> list:
    out, offset = [], 0
    while True:
        resp = await mq.pull("SchedReader", topic, queue_id, offset)
        if resp.code != ResponseCode.SUCCESS:
            return out
        msgs = decode_all(resp.body)
        out += msgs
        offset = int(resp.ext_fields["nextBeginOffset"])


async def test_runtime_info_shows_each_levels_progress(cluster, poll, dispatched) -> None:
    """buildRunningStats: scheduleMessageOffset_<level> = "<next offset to deliver>,<the level queue's max offset>"
    for each level in the offset table (mqadmin brokerStatus shows them; tests/apache compares with Apache)."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("Progress", queues=1)
    for level in (1, 1, 3):
        assert (await mq.send("Progress", b"x", properties=MQ.props(DELAY=str(level)))).code == ResponseCode.SUCCESS
    await dispatched(broker)
    await poll(lambda: broker.store.get_max_offset_in_queue("Progress", 0) == 2)

    async def schedule_keys() -> dict[str, str]:
        resp = await mq.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
        table = resp.decode_body(KVTable).table
        return {k: v for k, v in table.items() if k.startswith("scheduleMessageOffset_")}

    assert (await schedule_keys())["scheduleMessageOffset_1"] == "2,2"
    await poll(lambda: broker.store.get_max_offset_in_queue("Progress", 0) == 3)
    await poll(lambda: broker.schedule_message_service.offset_table.get(3) == 1)
    keys = await schedule_keys()
    assert keys["scheduleMessageOffset_1"] == "2,2" and keys["scheduleMessageOffset_3"] == "1,1"


async def test_runtime_info_shows_a_level_whose_messages_all_wait(cluster, poll, dispatched) -> None:
    """As RocketMQ 5's task, which writes the offset of a message not due yet: the level is listed, "0,<stored>",
    before anything of it is delivered; a level whose queue never had a message is not."""
    broker = await cluster.broker(message_delay_level="20ms 1h")
    mq = cluster.mq(broker)
    await mq.create_topic("Waiting", queues=1)
    for _ in range(3):
        assert (await mq.send("Waiting", b"x", properties=MQ.props(DELAY="2"))).code == ResponseCode.SUCCESS
    await dispatched(broker)

    async def schedule_keys() -> dict[str, str]:
        resp = await mq.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
        table = resp.decode_body(KVTable).table
        return {k: v for k, v in table.items() if k.startswith("scheduleMessageOffset_")}

    await poll(lambda: 2 in broker.schedule_message_service.offset_table)
    assert await schedule_keys() == {"scheduleMessageOffset_2": "0,3"}
