"""mqadmin's topic, cluster, broker, config and group commands on pocketmq and on Apache RocketMQ 4.9.7 (the setup:
conftest.py), and the store's clean-ups and deletions."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

from pocketmq.client import (
    Message,
    SyncProducer,
    SyncPullConsumer,
)

from .sides import (
    CLUSTER,
    GROUP,
    MESSAGES,
    PRODUCER_GROUP,
    QUEUES,
    SUFFIX,
    TOPIC,
    Mqadmin,
    Side,
    config,
    mask,
    numbers_masked,
    properties_of,
    rows,
)

# --- topics ---------------------------------------------------------------------------------------------------


def test_update_topic_and_update_sub_group(sides: tuple[Side, Side]) -> None:
    apache, pocket = sides
    for command in ("updateTopic", "updateSubGroup"):
        assert rows(pocket.setup_output[command]) == rows(apache.setup_output[command])
    assert f"TopicConfig [topicName={TOPIC}, readQueueNums=4, writeQueueNums=4, perm=RW-" in pocket.setup_output[
        "updateTopic"]


def test_topic_list(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "topicList")
    # The Apache server is shared by the session's tests: compare the built-in topics and this package's.
    # RMQ_SYS_TRANS_HALF_TOPIC appears on Apache once its transaction check first ran (after a minute).
    ours = {TOPIC, f"%RETRY%{GROUP}"}
    builtin = {"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC", f"{CLUSTER}_REPLY_TOPIC", "BenchmarkTest",
               "OFFSET_MOVED_EVENT", "TBW102", "broker-a", "SELF_TEST_TOPIC", CLUSTER}
    assert ours | builtin <= set(apache.split())
    # pocketmq has RocketMQ 5's POP and timer messages, and with them 5.x's system topics, which 4.9.7 lacks.
    five = {f"rmq_sys_REVIVE_LOG_{CLUSTER}", "rmq_sys_wheel_timer"}
    assert five <= set(pocket.split())
    assert set(pocket.split()) - {"RMQ_SYS_TRANS_HALF_TOPIC"} - five == ours | builtin


def test_topic_route(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "topicRoute", "-t", TOPIC)
    assert mask(pocket) == mask(apache)
    assert '"readQueueNums":4' in pocket


def test_topic_status(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "topicStatus", "-t", TOPIC)
    assert rows(pocket) == rows(apache)
    assert [r[:4] for r in rows(pocket)[1:]] == [["broker-a", str(q), "0", "2"] for q in range(QUEUES)]


# --- clusters and brokers -------------------------------------------------------------------------------------


def test_cluster_list(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "clusterList")
    # Rates, the hours since the oldest message and the disk share differ; Apache 4.9.7 reports the oldest
    # message's time as -1 until 8 MB are stored, which makes #Hour the hours since 1970.
    columns = {5, 6, 8, 9}
    assert numbers_masked(rows(pocket), columns) == numbers_masked(rows(apache), columns)


# GET_BROKER_RUNTIME_INFO's keys of 5.x that 4.9.7's broker lacks, and pocketmq sends.
RUNTIME_KEYS_5 = {"brokerActive", "getTransferredTps", "litePullThreadPoolQueueSize", "litePullThreadPoolQueueCapacity",
                  "litePullThreadPoolQueueHeadWaitTimeMills", "ackThreadPoolQueueSize", "ackThreadPoolQueueCapacity",
                  "ackThreadPoolQueueHeadWaitTimeMills"}


def test_broker_status(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "brokerStatus", "-b", lambda s: s.broker_addr)

    def keys(text: str) -> list[str]:
        # commitLogDiskRatio_<path> names the store's own folder
        return [line.split(":", 1)[0].strip().split("_/")[0] for line in text.splitlines() if line.strip()]

    # pocketmq sends 4.9.7's keys and those of 5.x's that 5.x's mqadmin reads (test_cluster_list_and_broker_status_5)
    assert [k for k in keys(pocket) if k not in RUNTIME_KEYS_5] == keys(apache)
    assert set(keys(pocket)) >= RUNTIME_KEYS_5
    status = properties_of(pocket)
    assert status["msgPutTotalTodayNow"] == str(MESSAGES)
    assert re.fullmatch(r"Total : [\d.]+ [KMGTP]?i?B, Free : [\d.]+ [KMGTP]?i?B\.", status["commitLogDirCapacity"])


def test_get_and_update_broker_config(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "getBrokerConfig", "-b", lambda s: s.broker_addr)
    assert mask(pocket.splitlines()[0]) == mask(apache.splitlines()[0])  # ============ADDR============
    # Apache has 200-odd settings, pocketmq the ones it implements under Apache's names (and a few of its own:
    # busy polling, frame timeouts, stats sampling); the settings a test cluster sets alike have equal values.
    pc, ac = config(pocket), config(apache)
    assert len(set(pc) & set(ac)) >= 40, set(pc) - set(ac)
    for key in ("brokerClusterName", "brokerName", "brokerId", "autoCreateTopicEnable", "traceTopicEnable",
                "defaultTopicQueueNums", "brokerPermission", "flushDiskType", "brokerRole", "deleteWhen"):
        assert pc[key] == ac[key], key
    for side, conf in zip(sides, (ac, pc), strict=True):
        assert conf["listenPort"] == side.broker_addr.rsplit(":", 1)[1]  # (pocketmq's broker listens on port 0)
    apache, pocket = mqadmin.both(sides, "updateBrokerConfig", "-b", lambda s: s.broker_addr,
                                  "-k", "autoCreateTopicEnable", "-v", "true")
    assert rows(pocket) == rows(apache) == [["update", "broker", "config", "success,", "ADDR"]]
    # maxMessageSize changes at run time on both (the commit log's limit from the next put); raised, then set back.
    for size in ("8388608", ac["maxMessageSize"]):
        apache, pocket = mqadmin.both(sides, "updateBrokerConfig", "-b", lambda s: s.broker_addr,
                                      "-k", "maxMessageSize", "-v", size)
        assert rows(pocket) == rows(apache) == [["update", "broker", "config", "success,", "ADDR"]]
        apache, pocket = mqadmin.both(sides, "getBrokerConfig", "-b", lambda s: s.broker_addr)
        assert config(pocket)["maxMessageSize"] == config(apache)["maxMessageSize"] == size


def test_get_and_update_namesrv_config(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "getNamesrvConfig")
    assert mask(pocket.splitlines()[0]) == mask(apache.splitlines()[0])  # ============ADDR============
    pc, ac = config(pocket), config(apache)
    assert {"listenPort", "bindAddress", "kvConfigPath", "orderMessageEnable", "serverChannelMaxIdleTimeSeconds",
            "writeBufferHighWaterMark", "writeBufferLowWaterMark"} <= set(pc) & set(ac)
    for key in ("bindAddress", "orderMessageEnable", "serverChannelMaxIdleTimeSeconds"):
        assert pc[key] == ac[key], key
    for side, conf in zip(sides, (ac, pc), strict=True):
        assert conf["listenPort"] == side.namesrv_addr.rsplit(":", 1)[1]
    apache, pocket = mqadmin.both(sides, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false")
    assert rows(pocket) == rows(apache) == [["update", "name", "server", "config", "success![ADDR]"],
                                            ["orderMessageEnable", ":", "false"]]


# --- groups ---------------------------------------------------------------------------------------------------


def test_consumer_progress(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "consumerProgress", "-g", GROUP)
    masked = [rows(text) for text in (apache, pocket)]
    for cells in masked:
        cells[-2][-1] = "N"  # Consume TPS: x.xx
    assert masked[1] == masked[0]
    assert rows(pocket)[-1] == ["Diff", "Total:", "0"]
    apache, pocket = mqadmin.both(sides, "consumerProgress")
    mine = [[r for r in rows(text) if r[0] in ("#Group", GROUP)] for text in (apache, pocket)]
    # #TPS is the group's rate over the last minute as each broker last sampled it (Apache every 10 s, this
    # pocketmq cluster every 50 ms): read seconds after the setup's consumption, it may be 0 on one and not yet on
    # the other. It is a whole number on both; the rest of the row is compared as it is.
    for cells in mine:
        assert cells[1][5].isdigit(), cells
        cells[1][5] = "N"
    assert mine[1] == mine[0] == [["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff", "Total"],
                                  [GROUP, "1", "VERSION", "PUSH", "CLUSTERING", "N", "0"]]


def test_consumer_connection(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "consumerConnection", "-g", GROUP)
    assert rows(pocket) == rows(apache)
    assert [TOPIC, "*"] in rows(pocket)


def test_producer_connection(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC)
    # One numbered line per producer, no header; the client id is this process's on both (IP@pid).
    assert rows(pocket) == rows(apache)
    [line] = rows(pocket)
    assert line[0] == "0001" and line[2:] == ["ADDR", "PYTHON", "VERSION"]


_CQ_VARIES = re.compile(r"(physicOffset|physicSize|lastUpdateTimestamp|\"subVersion\"):\d+")


def test_query_cq(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """queryCq: the queue's bounds and its entries from an index; commit-log positions and sizes differ by store
    (each broker adds its own properties), the tags codes and the rest do not. With a group, its subscription."""
    for group in ((), ("-g", GROUP)):
        apache, pocket = mqadmin.both(sides, "queryCq", "-t", TOPIC, "-q", "1", "-i", "0", "-c", "5", *group)
        assert rows(_CQ_VARIES.sub(r"\1=N", pocket.replace("=", ":"))) == \
            rows(_CQ_VARIES.sub(r"\1=N", apache.replace("=", ":")))
        assert pocket.count("idx: ") == MESSAGES // QUEUES and "max: 2, min: 0" in pocket


def test_query_cq_past_pocketmqs_cap(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """A queue of 10,050 entries (one-byte messages sent as batches): asked for all of them, Apache answers all
    (its bound is the end of the consume-queue file, 300,000 entries) and pocketmq its first 10,000
    (MAX_CQ_ENTRIES); the 50 past the cap, asked for from index 10,000, are the same on both."""
    topic, total, cap = f"MqaCqCap{SUFFIX}", 10_050, 10_000
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "1", "-w", "1")

    def fill(side: Side) -> None:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        for start in range(0, total, 1_000):
            producer.send_batch([Message(topic, b"c") for _ in range(start, min(start + 1_000, total))])

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(fill, sides))
    apache, pocket = mqadmin.both(sides, "queryCq", "-t", topic, "-q", "0", "-i", "0", "-c", str(total))
    assert f"max: {total}, min: 0" in apache and f"max: {total}, min: 0" in pocket
    assert (apache.count("idx: "), pocket.count("idx: ")) == (total, cap)
    apache, pocket = mqadmin.both(sides, "queryCq", "-t", topic, "-q", "0", "-i", str(cap), "-c", str(total))
    assert rows(_CQ_VARIES.sub(r"\1=N", pocket.replace("=", ":"))) == \
        rows(_CQ_VARIES.sub(r"\1=N", apache.replace("=", ":")))
    assert pocket.count("idx: ") == total - cap
    mqadmin.both(sides, "deleteTopic", "-c", CLUSTER, "-t", topic)


def test_producer(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "producer", "-b", lambda side: side.broker_addr)
    cells = [sorted(rows(_CQ_VARIES.sub(r"\1=N", out.replace("=", ":")))) for out in (apache, pocket)]
    assert cells[1] == cells[0]
    assert any(PRODUCER_GROUP in line for line in pocket.splitlines())


def test_broker_consume_stats(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """brokerConsumeStats: the setup's group, queue by queue (each broker has groups of its own besides, so the
    other rows and the total differ); its topic is not an order topic, so ``-o true`` leaves it out on both, and
    keeps a group's order topic (updateTopic -o true) on both: its queue 0, the one the group consumed a message
    of (mqadmin prints a queue only when its last consumed message has a store time)."""
    order_topic, order_group = f"MqaOrder{SUFFIX}", f"MqaOrderGroup{SUFFIX}"
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", order_topic, "-r", "2", "-w", "2", "-o", "true")
    mqadmin.both(sides, "updateSubGroup", "-c", CLUSTER, "-g", order_group)

    def commit_an_offset(side: Side) -> None:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        producer.send(Message(order_topic, b"ordered"), selector=lambda mqs, _m, _a: mqs[0], arg=None)
        with SyncPullConsumer(order_group, side.namesrv_addr, protocol="rocketmq") as consumer:
            mq = next(q for q in consumer.fetch_subscribe_message_queues(order_topic) if q.queue_id == 0)
            consumer.update_consume_offset(mq, 1)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(commit_an_offset, sides))
    for order, queues in (("false", QUEUES), ("true", 0)):
        deadline = time.monotonic() + 30
        # Apache's broker puts a message in its consume queue a moment after answering the send, and until then
        # the consumed message has no store time for mqadmin to print the queue with.
        while True:
            apache, pocket = mqadmin.both(sides, "brokerConsumeStats", "-b", lambda side: side.broker_addr,
                                          "-o", order)
            if all(order_group in text for text in (apache, pocket)) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # (sorted: each broker lists its groups in its own table's order)
        mine = [sorted(r for r in rows(text) if r[0] == "#Topic" or r[1:2] in ([GROUP], [order_group]))
                for text in (apache, pocket)]
        assert mine[1] == mine[0]
        listed = [r[:2] for r in mine[1] if r[0] != "#Topic"]
        assert listed.count([TOPIC, GROUP]) == queues and listed.count([order_topic, order_group]) == 1
        assert rows(pocket)[-1][:2] == ["Diff", "Total:"]


def _stats_all_rows(text: str) -> list[list[str]]:
    """statsAll's rows, the rates (#InTPS, #OutTPS) masked: each broker's figure of the minute as it last sampled
    it. A topic without consumers has one row with an empty group and #OutTPS."""
    cells = rows(text)
    for row in cells[1:]:
        for i in ((2,) if row[-1] == "NO_CONSUMER" else (3, 4)):
            row[i] = "N"
    return cells


def test_stats_all(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """statsAll (VIEW_BROKER_STATS_DATA, 315): a topic's puts, and per group that has offsets of it the group's
    pulls and lag. #InMsg24Hour and #OutMsg24Hour are an item's day, else its hour, else its minute: the counts
    sent and pulled once a snapshot took them, for a minute at least, on both (Apache snapshots the minute every
    10 s; its hour and day, every 10 minutes and every hour, are empty or hold the same counts). One batch sent
    and one pull, so that no snapshot sees a part of them. mqadmin swallows a failed request and prints zeros."""
    topic, lone, group = f"MqaStats{SUFFIX}", f"MqaStatsLone{SUFFIX}", f"MqaStatsGroup{SUFFIX}"
    for name in (topic, lone):
        mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", name, "-r", "1", "-w", "1")
    mqadmin.both(sides, "updateSubGroup", "-c", CLUSTER, "-g", group)

    def traffic(side: Side) -> None:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        producer.send_batch([Message(lone, b"lone %d" % i) for i in range(3)])
        producer.send_batch([Message(topic, b"stats %d" % i) for i in range(6)])
        with SyncPullConsumer(group, side.namesrv_addr, protocol="rocketmq") as consumer:
            [mq] = consumer.fetch_subscribe_message_queues(topic)
            assert len(consumer.pull(mq, "*", 0, 32).msg_found_list) == 6
            consumer.update_consume_offset(mq, 4)  # two left: #Accumulation 2

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(traffic, sides))
    header = ["#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"]
    expected = [header, [topic, group, "2", "N", "N", "6", "6"]]
    deadline = time.monotonic() + 60
    while True:  # until Apache's first snapshot of the minute (pocketmq's, every 50 ms, comes first)
        apache, pocket = mqadmin.both(sides, "statsAll", "-t", topic)
        if _stats_all_rows(apache) == expected or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert _stats_all_rows(pocket) == _stats_all_rows(apache) == expected
    apache, pocket = mqadmin.both(sides, "statsAll", "-t", lone)
    assert _stats_all_rows(pocket) == _stats_all_rows(apache) == [header, [lone, "0", "N", "3", "NO_CONSUMER"]]
    for name in (topic, lone):
        mqadmin.both(sides, "deleteTopic", "-c", CLUSTER, "-t", name)
    mqadmin.both(sides, "deleteSubGroup", "-c", CLUSTER, "-g", group)


def test_store_clean_ups(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """cleanExpiredCQ, cleanUnusedTopic and deleteExpiredCommitLog, by broker and by cluster: nothing of the
    setup's is expired or unused, and its messages stay readable."""
    for command in ("cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog"):
        for where in (("-b", lambda side: side.broker_addr), ("-c", CLUSTER)):
            apache, pocket = mqadmin.both(sides, command, *where)
            assert pocket == apache == "success", (command, apache, pocket)
    apache, pocket = mqadmin.both(sides, "queryCq", "-t", TOPIC, "-q", "1", "-i", "0", "-c", "5")
    assert "max: 2, min: 0" in pocket and "max: 2, min: 0" in apache


def test_a_deleted_topics_queues_start_again_at_offset_0(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    """deleteTopic destroys the topic's consume queues and forgets their offsets (4.9.7's deleteTopic runs
    cleanUnusedTopic over the topics left; cleanUnusedTopic alone keeps a queue whose topic is in the table): the
    topic made again under the same name takes its next message at queue offset 0, its old messages are gone."""
    topic = f"MqaAgain{SUFFIX}"

    def send(side: Side, count: int) -> list[int]:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        return [producer.send(Message(topic, b"again %d" % i)).queue_offset for i in range(count)]

    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "1", "-w", "1")
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda side: send(side, 3), sides)) == [[0, 1, 2]] * 2
    apache, pocket = mqadmin.both(sides, "cleanUnusedTopic", "-c", CLUSTER)
    apache, pocket = mqadmin.both(sides, "queryCq", "-t", topic, "-q", "0", "-i", "0", "-c", "5")
    assert "max: 3, min: 0" in apache and "max: 3, min: 0" in pocket
    mqadmin.both(sides, "deleteTopic", "-c", CLUSTER, "-t", topic)
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "1", "-w", "1")
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda side: send(side, 1), sides)) == [[0]] * 2
    apache, pocket = mqadmin.both(sides, "queryCq", "-t", topic, "-q", "0", "-i", "0", "-c", "5")
    assert rows(_CQ_VARIES.sub(r"\1=N", pocket.replace("=", ":"))) == \
        rows(_CQ_VARIES.sub(r"\1=N", apache.replace("=", ":")))
    assert "max: 1, min: 0" in pocket and pocket.count("idx: ") == 1
    mqadmin.both(sides, "deleteTopic", "-c", CLUSTER, "-t", topic)


def test_delete_sub_group_and_delete_topic(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    topic, group = f"MqaGone{SUFFIX}", f"MqaGoneGroup{SUFFIX}"
    # The group's retry and DLQ topics, which deleteSubGroup -c deletes with it (the broker's group table alone
    # by -b), as a consumer's send-back and its last retry would have made them.
    group_topics = {f"%RETRY%{group}", f"%DLQ%{group}"}
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic)
    for name in group_topics:
        mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", name, "-r", "1", "-w", "1")
    mqadmin.both(sides, "updateSubGroup", "-c", CLUSTER, "-g", group)
    apache, pocket = mqadmin.both(sides, "topicList")
    assert group_topics <= set(pocket.split()) and group_topics <= set(apache.split())
    apache, pocket = mqadmin.both(sides, "deleteSubGroup", "-c", CLUSTER, "-g", group)
    assert rows(pocket) == rows(apache)
    apache, pocket = mqadmin.both(sides, "topicList")
    assert not group_topics & set(pocket.split()) and not group_topics & set(apache.split())
    apache, pocket = mqadmin.both(sides, "deleteTopic", "-c", CLUSTER, "-t", topic)
    assert rows(pocket) == rows(apache)
    apache, pocket = mqadmin.both(sides, "topicList")
    assert topic not in pocket.split() and topic not in apache.split()
