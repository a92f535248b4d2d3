"""BrokerStatsManager: counters added on the hot path, rates computed from the timer's snapshots."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from broker_harness import MQ
from pop_wire import PopClient

from pocketmq.broker.stats import BrokerStatsManager, StatsItemSet, StatsSnapshot
from pocketmq.broker.stats.broker_metrics import MAX_DLQ_ROWS, BrokerMetrics
from pocketmq.common import MessageExtBrokerInner
from pocketmq.common.codec import decode_all
from pocketmq.remoting.admin_body import KVTable
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader, DeleteTopicRequestHeader
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig


def test_minute_figures_are_the_difference_between_the_oldest_and_newest_snapshot() -> None:
    s = StatsItemSet("TOPIC_PUT_NUMS", window=7, interval_ms=10_000.0)
    assert s.stats_in_minute("T").sum == 0
    s.add("T", 10)
    s.sample_all(0.0)  # the first snapshot starts the item from zero one interval back
    assert s.stats_in_minute("T") == StatsSnapshot(10, 1.0, 10.0)
    s.add("T", 30, times=3)
    s.sample_all(10_000.0)
    snap = s.stats_in_minute("T")
    assert (snap.sum, snap.tps, snap.avgpt) == (40, 2.0, 10.0)
    # Snapshots older than the window (7 of them) fall out: a minute without additions shows none.
    for i in range(2, 8):
        s.sample_all(i * 10_000.0)
    assert s.stats_in_minute("T").sum == 0 and s.total("T") == 40


def store_config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=64 * 1024,
                              mapped_file_size_consume_queue=1000, max_hash_slot_num=64, max_index_num=256)


def put_to(store: DefaultMessageStore, topic: str, n: int) -> None:
    for _ in range(n):
        assert store.put_message(MessageExtBrokerInner(topic=topic, body=b"x")).is_ok


def test_put_get_and_send_back_counters_and_the_day_rollover(tmp_path: Path) -> None:
    store = DefaultMessageStore(store_config(tmp_path))
    with store:
        m = BrokerStatsManager("DefaultCluster", sample_interval=10.0, store=store.commit_log)
        day = dt.date(2024, 5, 1)
        m.sample(0.0, day)
        m.inc_put("T", 3, 300)
        m.inc_put("T", 1, 100)
        m.inc_get("G", "T", 2, 200)
        m.inc_send_back("G", "T")
        put_to(store, "T", 5)  # the store's puts, the broker's own among them: msgPutTotalTodayNow and putTps
        m.sample(60_000.0, day)
        put = m.topic_put_in_minute("T")
        assert (put.sum, put.tps) == (4, 0.4)  # the item's first snapshot: from zero one interval (10 s) back
        assert (m.put_message_times_total, m.put_in_minute().sum, m.put_in_minute().tps) == (5, 5, 5 / 70)
        assert m.group_get_in_minute("T", "G").sum == 2 and m.group_get_in_minute("T", "H").sum == 0
        assert m.sets["TOPIC_PUT_SIZE"].total("T") == 400 and m.sets["SNDBCK_PUT_NUMS"].total("T@G") == 1
        assert (m.broker_put_total, m.broker_get_total) == (4, 2)
        m.sample(70_000.0, day + dt.timedelta(days=1))
        assert (m.msg_put_total_today_morning, m.msg_get_total_today_morning) == (5, 2)
        put_to(store, "U", 4)
        m.sample(80_000.0, day + dt.timedelta(days=2))
        assert (m.msg_put_total_yesterday_morning, m.msg_put_total_today_morning) == (5, 9)
        m.on_topic_deleted("T")
        assert m.sets["TOPIC_PUT_NUMS"].get("T") is None and m.sets["GROUP_GET_NUMS"].get("T@G") is None


async def test_a_broker_counts_what_it_stores_and_serves(cluster, poll, dispatched) -> None:
    broker = await cluster.broker(stats_sample_interval=0.02)
    mq = cluster.mq(broker)
    for _ in range(3):
        assert (await mq.send("TopicStats", b"x" * 10)).code == 0
    await dispatched(broker)
    [m0, m1, m2] = decode_all((await mq.pull("GStats", "TopicStats", 0, 0)).body)
    stats = broker.broker_stats_manager
    await poll(lambda: stats.topic_put_in_minute("TopicStats").sum == 3)
    await poll(lambda: stats.group_get_in_minute("TopicStats", "GStats").sum == 3)
    assert stats.topic_put_in_minute("TopicStats").tps > 0
    assert stats.sets["TOPIC_PUT_SIZE"].total("TopicStats") == m0.store_size + m1.store_size + m2.store_size
    assert stats.broker_put_total == 3 and stats.broker_get_total == 3


async def test_a_deleted_topic_leaves_no_statistics(cluster, dispatched) -> None:
    # Topics created, used and deleted one after another each left their items behind for good.
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    assert (await mq.send("Gone", b"x")).code == 0
    await dispatched(broker)
    await mq.pull("GGone", "Gone", 0, 0)
    stats = broker.broker_stats_manager
    assert stats.sets["TOPIC_PUT_NUMS"].get("Gone") is not None
    metrics = stats.metrics
    assert "Gone" in metrics.messages_in["normal"] and "Gone" in metrics.messages_out["GGone"]
    assert (await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("Gone"))).code == 0
    assert stats.sets["TOPIC_PUT_NUMS"].get("Gone") is None and stats.sets["TOPIC_PUT_SIZE"].get("Gone") is None
    assert stats.sets["GROUP_GET_NUMS"].get("Gone@GGone") is None
    # /metrics' rows too (RocketMQ's exporter keeps a deleted topic's series; a broker that churns topics would not)
    assert "Gone" not in metrics.messages_in["normal"] and "Gone" not in metrics.messages_out["GGone"]
    metrics.to_dlq("GGone", "Other")
    stats.on_group_deleted("GGone")
    assert "GGone" not in metrics.messages_out and metrics.send_to_dlq == {}


def test_dead_letter_rows_stop_growing_at_their_cap() -> None:
    # (the original topic of a send-back is the client's word: one made up per request must not add rows for good)
    metrics = BrokerMetrics()
    for i in range(MAX_DLQ_ROWS + 5):
        metrics.to_dlq("G", f"T{i}")
    metrics.to_dlq("G", "T0")
    assert len(metrics.send_to_dlq) == MAX_DLQ_ROWS and metrics.send_to_dlq[("G", "T0")] == 2


async def runtime_info(mq: MQ) -> dict[str, str]:
    resp = await mq.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert resp.code == ResponseCode.SUCCESS
    return resp.decode_body(KVTable).table


def minute_rate(info: dict[str, str], key: str) -> float:
    return float(info[key].split()[1])


async def test_runtime_info_rates_of_reads_that_found_messages_and_of_those_that_found_none(
        cluster, poll, dispatched) -> None:
    # As StoreStatsService's: getFoundTps and getMissTps count store reads, one a pull (or a pop's read of a
    # queue), by whether it found messages; getTotalTps both; getTransferedTps the messages read.
    broker = await cluster.broker(stats_sample_interval=0.02)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicReads", queues=1)
    for i in range(40):
        assert (await mq.send("TopicReads", b"m%d" % i)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    for offset in (0, 20):
        assert (await mq.pull("GReads", "TopicReads", 0, offset, max_nums=20)).code == ResponseCode.SUCCESS
    for _ in range(6):
        assert (await mq.pull("GReads", "TopicReads", 0, 40)).code == ResponseCode.PULL_NOT_FOUND
    # The POP revive service's reads of its queues (every second, nothing found) are not clients' reads.
    await broker.pop_revive_service.revive_all()
    # The timer snapshots every counter at once: one that shows this last read shows all of them.
    assert (await mq.pull("GLast", "TopicReads", 0, 0, max_nums=1)).code == ResponseCode.SUCCESS
    stats = broker.broker_stats_manager
    await poll(lambda: stats.group_get_in_minute("TopicReads", "GLast").sum == 1)
    info = await runtime_info(mq)
    found, miss, total = (minute_rate(info, k) for k in ("getFoundTps", "getMissTps", "getTotalTps"))
    # 3 and 6 reads over the same minute (give or take a snapshot, should the timer run between the two reads).
    assert 0 < found < miss and abs(total - (found + miss)) <= 0.011
    assert minute_rate(info, "getTransferedTps") > total  # 41 messages in those 9 reads
    assert (stats.get_found_in_minute().sum, stats.get_miss_in_minute().sum) == (3, 6)
    # A pop's read of a queue counts the same way.
    popped = await PopClient(mq).pop("GPopReads", "TopicReads", 0, max_nums=8)
    assert len(popped.messages) == 8
    await poll(lambda: stats.get_found_in_minute().sum == 4)


async def test_runtime_info_put_totals_count_the_brokers_own_writes(cluster, poll, dispatched) -> None:
    # As StoreStatsService's: every record the commit log takes, a client's or the broker's own (a delayed
    # message to SCHEDULE_TOPIC_XXXX and its delivery, a message sent back and its retry).
    broker = await cluster.broker(stats_sample_interval=0.02, message_delay_level="200ms 300ms 400ms")
    mq = cluster.mq(broker)
    await mq.create_topic("TopicOwn", queues=2)
    for i in range(10):
        assert (await mq.send("TopicOwn", b"m%d" % i)).code == ResponseCode.SUCCESS
    delayed = await mq.send("TopicOwn", b"later", queue_id=1, properties=mq.props(DELAY="1"))
    assert delayed.code == ResponseCode.SUCCESS
    await dispatched(broker)
    [first, *_] = decode_all((await mq.pull("GOwn", "TopicOwn", 0, 0)).body)
    back = ConsumerSendMsgBackRequestHeader(offset=first.commit_log_offset, group="GOwn", delay_level=0,
                                            origin_msg_id=first.msg_id, origin_topic="TopicOwn")
    assert (await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, back)).code == ResponseCode.SUCCESS
    store = broker.store
    await poll(lambda: store.get_max_offset_in_queue("TopicOwn", 1) == 1
               and store.get_max_offset_in_queue("%RETRY%GOwn", 0) == 1)
    info = await runtime_info(mq)
    # 11 sent (1 of them to the schedule topic), 1 sent back (to the schedule topic), 2 delivered from it.
    assert (info["msgPutTotalTodayNow"], info["putMessageTimesTotal"]) == ("14", "14")
    assert info["putMessageSizeTotal"] == info["commitLogMaxOffset"]  # (one commit-log file: no blank end)
    assert broker.broker_stats_manager.broker_put_total == 11  # BROKER_PUT_NUMS: what clients sent
    await poll(lambda: broker.broker_stats_manager.put_in_minute().sum == 14)
    assert minute_rate(await runtime_info(mq), "putTps") > 0


def test_sampling_goes_a_chunk_of_items_at_a_time() -> None:
    m = BrokerStatsManager("DefaultCluster", sample_interval=10.0)
    for i in range(250):
        m.inc_get(f"G{i}", "T", 1, 10)  # 250 GROUP_GET_NUMS items, 250 GROUP_GET_SIZE ones, 1 BROKER_GET_NUMS one
    assert len(list(m.sample_in_steps(0.0, dt.date(2024, 5, 1), chunk=100))) == 5
    assert all(m.group_get_in_minute("T", f"G{i}").sum == 1 for i in range(250))
    assert m.broker_get_in_minute().sum == 250


async def test_the_brokers_sampling_lets_the_loop_run_between_chunks(cluster) -> None:
    # Clients can make hundreds of thousands of topic@group keys: snapshotting them all in one go held the loop.
    broker = await cluster.broker(stats_sample_interval=3600.0)  # the timer samples at the start only
    stats = broker.broker_stats_manager
    keys = 20_000  # a few chunks' worth
    for i in range(keys):
        stats.inc_get(f"G{i}", "T", 1, 10)
    sampling = asyncio.create_task(broker._sample_stats())
    await asyncio.sleep(0)  # the sampling's first step, then the loop's turn
    assert not sampling.done()
    stats.inc_get("GMeanwhile", "T", 1, 10)  # a pull answered meanwhile
    await sampling
    assert all(stats.group_get_in_minute("T", f"G{i}").sum == 1 for i in range(keys))
