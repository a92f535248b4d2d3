"""VIEW_BROKER_STATS_DATA (315, mqadmin's statsAll): a statistics item's figures over the last minute, hour and day,
from the hour's and the day's snapshots (RocketMQ's samplingInMinutes and samplingInHour)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from broker_harness import MQ

from pocketmq.broker.stats import BrokerStatsManager, StatsSnapshot
from pocketmq.common.codec import decode_all
from pocketmq.remoting.admin_header import ViewBrokerStatsDataRequestHeader
from pocketmq.remoting.broker_stats_data import BrokerStatsData, BrokerStatsItem
from pocketmq.remoting.codes import RequestCode, ResponseCode

MINUTE_MS = 60_000.0
HOUR_MS = 3_600_000.0


def test_the_hour_and_the_day_are_sampled_every_60_and_360_intervals_and_keep_7_and_25() -> None:
    m = BrokerStatsManager("DefaultCluster", sample_interval=10.0)
    m.sample(0.0)  # the start: all three samplings run at once (RocketMQ schedules them with no delay), no items
    m.inc_put("T", 6, 600)
    m.inc_put("T", 6, 600)
    item = m.get_stats_item("TOPIC_PUT_NUMS", "T")
    assert item is not None
    tick = 0

    def run_to(ms: float) -> None:
        nonlocal tick
        while (tick + 1) * 10_000.0 <= ms:
            tick += 1
            m.sample(tick * 10_000.0)

    run_to(10 * MINUTE_MS - 10_000.0)
    assert item.stats_in_minute().sum == 0 and item.stats_in_hour() == item.stats_in_day() == StatsSnapshot()
    run_to(10 * MINUTE_MS)  # the hour's first snapshot, from zero 10 minutes back
    assert item.stats_in_hour() == StatsSnapshot(12, 12 / 600, 6.0) and item.stats_in_day().sum == 0
    run_to(HOUR_MS)
    assert item.stats_in_day() == StatsSnapshot(12, 12 / 3600, 6.0) and item.stats_in_hour().sum == 12
    run_to(70 * MINUTE_MS - 10_000.0)
    assert item.stats_in_hour().sum == 12
    run_to(70 * MINUTE_MS)  # 7 snapshots kept: the one from zero has gone
    assert item.stats_in_hour() == StatsSnapshot() and item.stats_in_day().sum == 12
    m.inc_put("T", 1, 100)
    run_to(25 * HOUR_MS - 10_000.0)
    assert item.stats_in_day() == StatsSnapshot(13, 13 / 86_400, 13 / 3)
    run_to(25 * HOUR_MS)  # 25 kept
    assert item.stats_in_day() == StatsSnapshot(1, 1 / 86_400, 1.0)
    assert m.get_stats_item("TOPIC_PUT_NUMS", "U") is None and m.get_stats_item("GROUP_GET_LATENCY", "T") is None


def test_a_late_timer_takes_one_snapshot_and_keeps_to_the_schedule() -> None:
    m = BrokerStatsManager("DefaultCluster", sample_interval=10.0)
    m.sample(0.0)
    m.inc_put("T", 5, 500)
    m.sample(25 * MINUTE_MS)  # two of the hour's turns missed: one snapshot, the next at 30 minutes
    item = m.get_stats_item("TOPIC_PUT_NUMS", "T")
    assert item is not None and item.stats_in_hour().sum == 5
    m.inc_put("T", 1, 100)
    m.sample(29 * MINUTE_MS)
    assert item.stats_in_hour().sum == 5
    m.sample(30 * MINUTE_MS)
    assert item.stats_in_hour().sum == 6


async def stats_data(mq: MQ, name: str, key: str) -> BrokerStatsData:
    resp = await mq.invoke(RequestCode.VIEW_BROKER_STATS_DATA, ViewBrokerStatsDataRequestHeader(name, key))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return resp.decode_body(BrokerStatsData)


async def stats_until(mq: MQ, name: str, key: str, done: Callable[[BrokerStatsData], bool]) -> BrokerStatsData:
    """The item's figures once ``done`` holds (each asked over the connection; fails after a generous bound)."""
    for _ in range(2000):
        data = await stats_data(mq, name, key)
        if done(data):
            return data
        await asyncio.sleep(0.005)
    raise AssertionError((name, key, data))


def sums(data: BrokerStatsData) -> tuple[int, int, int]:
    return data.stats_minute.sum, data.stats_hour.sum, data.stats_day.sum


async def test_a_broker_answers_an_items_minute_hour_and_day(cluster, dispatched) -> None:
    # Snapshots every 5 ms: the hour's every 300 ms (7 kept: 1.8 s), the day's every 1.8 s (25 kept: 43.2 s);
    # the minute is a minute.
    broker = await cluster.broker(stats_sample_interval=0.005)
    mq = cluster.mq(broker)
    topic, group, cluster_name = "TopicStatsData", "GStatsData", broker.broker_config.broker_cluster_name
    await mq.create_topic(topic, queues=1)
    for i in range(3):
        assert (await mq.send(topic, b"x" * (10 + i), queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    pulled = decode_all((await mq.pull(group, topic, 0, 0, max_nums=32)).body)
    assert len(pulled) == 3
    size = sum(m.store_size for m in pulled)

    data = await stats_until(mq, "TOPIC_PUT_NUMS", topic, lambda d: sums(d)[:2] == (3, 3))
    for window in (data.stats_minute, data.stats_hour):
        assert window.tps > 0 and window.avgpt == 1.0  # three sends of one message
    data = await stats_until(mq, "TOPIC_PUT_NUMS", topic, lambda d: d.stats_day.sum == 3)
    assert data.stats_minute.sum == 3 and data.stats_day.tps > 0 and data.stats_day.avgpt == 1.0
    got = await stats_until(mq, "GROUP_GET_NUMS", f"{topic}@{group}", lambda d: d.stats_day.sum == 3)
    assert got.stats_minute.sum == 3 and got.stats_day.avgpt == 3.0  # one pull of three
    for name, key, total in (("TOPIC_PUT_SIZE", topic, size), ("GROUP_GET_SIZE", f"{topic}@{group}", size),
                             ("BROKER_PUT_NUMS", cluster_name, 3), ("BROKER_GET_NUMS", cluster_name, 3)):
        data = await stats_until(mq, name, key, lambda d: d.stats_day.sum != 0)
        assert (data.stats_minute.sum, data.stats_day.sum) == (total, total), name
    # The hour's window slides past the sends first; the day and the minute still hold them.
    data = await stats_until(mq, "TOPIC_PUT_NUMS", topic, lambda d: d.stats_hour.sum == 0)
    assert sums(data) == (3, 0, 3) and data.stats_hour == BrokerStatsItem()


async def test_an_item_not_counted_is_refused_as_rocketmq_refuses_it(cluster) -> None:
    broker = await cluster.broker(stats_sample_interval=3600.0)  # the timer samples at the start only
    mq = cluster.mq(broker)
    assert (await mq.send("TopicCounted", b"x")).code == ResponseCode.SUCCESS
    # A topic never sent to, and a statistic pocketmq does not keep (RocketMQ's pull latencies).
    for name, key in (("TOPIC_PUT_NUMS", "TopicNeverSent"), ("GROUP_GET_LATENCY", "TopicCounted")):
        resp = await mq.invoke(RequestCode.VIEW_BROKER_STATS_DATA, ViewBrokerStatsDataRequestHeader(name, key))
        assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
    # Counted, not sampled yet: all zeros.
    assert await stats_data(mq, "TOPIC_PUT_NUMS", "TopicCounted") == BrokerStatsData()
