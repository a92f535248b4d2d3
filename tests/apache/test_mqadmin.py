"""Apache RocketMQ's own mqadmin (MQAdminStartup of the 4.9.7 tools jar, and a few commands of 5.5.0's) against a
pocketmq cluster and against Apache RocketMQ 4.9.7, after the same setup on both: a topic of four queues, a
subscription group, eight messages sent to known queues by a producer that stays up, and a push consumer that
consumed them and stays up (5.5.0's commands that 4.9.7's broker lacks: against Apache RocketMQ 5.5.0, after the same
setup there). Each command's output on pocketmq must have the columns and rows it has on Apache,
once what legitimately differs is masked (addresses, times, ids, client ids, rates, commit-log positions).

Then pocketmq's own commands (`pocketmq <command>`, in-process) must print what mqadmin prints for the same
pocketmq cluster, under the same masking.

mqadmin runs in JVMs kept from one command to the next (tests/apache/mqadmin_runner.py, one per command running at
the same time); each test runs a command once per server, both at a time.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pocketmq.cli import main as pocketmq_main
from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MessageExt,
    SyncProducer,
    SyncPullConsumer,
    SyncPushConsumer,
)
from pocketmq.common.java_hash import hash_map_order
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ
from tests.apache.differential import call, request

SUFFIX = uuid.uuid4().hex[:6]
TOPIC = f"MqaTopic{SUFFIX}"
GROUP = f"MqaGroup{SUFFIX}"
PRODUCER_GROUP = f"MqaProducer{SUFFIX}"
QUEUES = 4
MESSAGES = 8
CLUSTER = "DefaultCluster"
# Where mqadmin's queryMsgBy* write a message body (MessageBodyPath); the tests remove their own files.
MSG_BODY_DIR = Path("/tmp/rocketmq/msgbodys")


@dataclass
class Side:
    """One server as the tests see it: its name server and broker, and what the setup left there."""

    name: str
    namesrv_addr: str
    broker_addr: str
    msg_ids: list[str] = field(default_factory=list)
    offset_msg_ids: list[str] = field(default_factory=list)
    setup_output: dict[str, str] = field(default_factory=dict)
    clients: list[SyncProducer | SyncPushConsumer] = field(default_factory=list)
    consumed: list[MessageExt] = field(default_factory=list)
    # The group's retry queue, empty, listed by consumerProgress at 0 once the consumer has committed that 0: on
    # 5.x after its first long poll of it; never on 4.9.7 and pocketmq, whose QUERY_CONSUMER_OFFSET answers 0
    # for it, an offset the consumer never changes, so never commits (docs/compatibility.md).
    lists_empty_retry_queue: bool = False


class Mqadmin:
    """Apache's mqadmin of one version, run against any name server."""

    def __init__(self, tools: ApacheRocketMQ) -> None:
        self.tools = tools
        self.seen: dict[tuple[str, ...], str] = {}  # pocketmq's output of each command run (args without -n)

    def run(self, namesrv_addr: str, *args: str) -> str:
        """The command's output. mqadmin exits 0 after a failure and prints the exception on stderr; one that
        timed out (a request slower than mqadmin's fixed 5 s on a loaded machine) is run again, except
        sendMessage, which would store a second message."""
        for attempt in range(ATTEMPTS):
            done = self.tools.mqadmin(*args, "-n", namesrv_addr)
            failed = done.returncode != 0 or "Exception" in done.stdout + done.stderr
            if not failed:
                return done.stdout
            if attempt == ATTEMPTS - 1 or args[0] == "sendMessage" or not _TIMEOUT.search(done.stderr):
                break
            time.sleep(1.0)
        raise AssertionError((args, done.returncode, done.stdout, done.stderr[-3000:]))

    def both(self, sides: tuple[Side, Side], *args: str | Callable[[Side], str]) -> tuple[str, str]:
        """The command on both servers at once; an argument may depend on the side (its broker address...)."""

        def one(side: Side) -> str:
            resolved = tuple(a(side) if callable(a) else a for a in args)
            out = self.run(side.namesrv_addr, *resolved)
            if side.name == "pocketmq":
                self.seen[resolved] = out
            return out

        with ThreadPoolExecutor(2) as pool:
            apache, pocket = pool.map(one, sides)
        return apache, pocket


ATTEMPTS = 5
# pocketmq's commands wait 3 s for each answer by default; a loaded machine may take longer.
SLOW_OK = ("--timeout", "30")
_TIMEOUT = re.compile(r"Remoting(Timeout|Connect|SendRequest)Exception|TimeoutException")


# --- masking what legitimately differs ------------------------------------------------------------------------

_MASKS = [
    (re.compile(r"/?\d+\.\d+\.\d+\.\d+:\d+"), "ADDR"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d{3})?"), "TIME"),
    (re.compile(r"\b[0-9A-F]{32,}\b"), "ID"),
    (re.compile(r"\S+@\S+#\d+"), "CLIENTID"),  # IP@pid#nanotime
    (re.compile(r"\bV\d+_\d+_\d+(_SNAPSHOT)?\b"), "VERSION"),
]


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


def rows(text: str) -> list[list[str]]:
    """A command's output as rows of whitespace-separated cells: column widths are not compared."""
    return [line.split() for line in mask(text).splitlines() if line.strip()]


def numbers_masked(cells: list[list[str]], columns: set[int]) -> list[list[str]]:
    return [[("N" if i in columns and row[0] != cells[0][0] else c) for i, c in enumerate(row)] for row in cells]


# What one broker adds and the other not: Apache 4.9.7 adds CLUSTER and drops WAIT; pocketmq keeps the producer's
# properties and stamps MSG_REGION and TRACE_ON as Apache 5.x does (docs/broker.md, "The region stamp").
BROKER_ADDED = ("CLUSTER", "WAIT", "MSG_REGION", "TRACE_ON")


def raw_properties(text: str) -> dict[str, str]:
    """The Properties: line of a message printout, as the broker stored them."""
    line = next(line for line in text.splitlines() if line.startswith("Properties:"))
    body = line.split(":", 1)[1].strip().strip("{}")
    return dict(item.split("=", 1) for item in body.split(", "))


def properties(text: str) -> dict[str, str]:
    """The Properties: line of a message printout, without what only one of the brokers adds or drops
    (BROKER_ADDED)."""
    props = raw_properties(text)
    return {k: ("ID" if k == "UNIQ_KEY" else v) for k, v in props.items() if k not in BROKER_ADDED}


# --- the two servers and the setup ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pocket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    # Apache's test broker.conf enables the trace topic; pocketmq's cluster does the same.
    with ThreadedCluster(tmp_path_factory.mktemp("mqadmin-pocketmq"), trace_topic_enable=True,
                         stats_sample_interval=0.05) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def mqadmin(apache_rocketmq: ApacheRocketMQ) -> Mqadmin:
    return Mqadmin(apache_rocketmq)


@pytest.fixture(scope="module")
def mqadmin5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mqadmin]:
    tools = ApacheRocketMQ(tmp_path_factory.mktemp("mqadmin-5"), version=V5).prepare_tools()
    yield Mqadmin(tools)
    tools.close_tools()


def _set_up(side: Side, mq: Mqadmin) -> None:
    side.setup_output["updateTopic"] = mq.run(
        side.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", str(QUEUES), "-w", str(QUEUES))
    side.setup_output["updateSubGroup"] = mq.run(side.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", GROUP)
    producer = SyncProducer(PRODUCER_GROUP, side.namesrv_addr, protocol="rocketmq")
    side.clients.append(producer)
    for i in range(MESSAGES):
        msg = Message(TOPIC, f"body {i}".encode(), tags="TagA", keys=f"key{i}")
        sent = producer.send(msg, selector=lambda mqs, _m, n: mqs[n % len(mqs)], arg=i)
        side.msg_ids.append(sent.msg_id)
        side.offset_msg_ids.append(sent.offset_msg_id)
    consumed = side.consumed
    # (a reset's settle time shortened: the consumer takes the new offsets in 0.2 s, not 10, and an OFFSET_MOVED
    # answer's (5.x's to the pull after a reset of one queue) in 0.05 s, not 10; its long polls end after 1 s,
    # not 15, and with the first, of the empty retry queue, comes its commit of 0)
    consumer = SyncPushConsumer(GROUP, side.namesrv_addr, protocol="rocketmq",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", persist_consumer_offset_interval=0.2,
                                reset_offset_settle_time=0.2, offset_illegal_delay=0.05, broker_suspend_max_time=1.0)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(
        lambda msgs, _ctx: (consumed.extend(msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1])
    consumer.start()
    side.clients.append(consumer)
    _wait_no_lag(side, mq, lambda: len(consumed) >= MESSAGES)


def _wait_no_lag(side: Side, mq: Mqadmin, consumed: Callable[[], bool] = lambda: True) -> None:
    """Until the group's messages are consumed and its offsets committed: consumerProgress shows no lag (and the
    retry queue where the side lists it)."""
    deadline = time.monotonic() + 60
    while True:
        progress = ""
        if consumed():
            try:
                progress = mq.run(side.namesrv_addr, "consumerProgress", "-g", GROUP)
            except AssertionError as e:  # no offset committed yet: CODE 206 on Apache, an empty table on pocketmq
                progress = str(e)
        if "Diff Total: 0" in progress and ("%RETRY%" in progress or not side.lists_empty_retry_queue):
            return
        assert time.monotonic() < deadline, (side.name, progress)
        time.sleep(0.2)


@pytest.fixture(scope="module")
def sides(apache_rocketmq: ApacheRocketMQ, pocket: ThreadedCluster, mqadmin: Mqadmin) -> Iterator[tuple[Side, Side]]:
    apache = Side("apache", apache_rocketmq.namesrv_addr, apache_rocketmq.broker_addr)
    pocketmq = Side("pocketmq", pocket.namesrv_addr, pocket.broker_addr)
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda s: _set_up(s, mqadmin), (apache, pocketmq)))
        yield apache, pocketmq
    finally:
        for side in (apache, pocketmq):
            for client in reversed(side.clients):
                client.shutdown() if isinstance(client, SyncPushConsumer) else client.close()
            for msg_id in side.msg_ids:
                (MSG_BODY_DIR / msg_id).unlink(missing_ok=True)


# --- topics ---------------------------------------------------------------------------------------------------


def test_update_topic_and_update_sub_group(sides: tuple[Side, Side]) -> None:
    apache, pocket = sides
    for command in ("updateTopic", "updateSubGroup"):
        assert rows(pocket.setup_output[command]) == rows(apache.setup_output[command])
    assert f"TopicConfig [topicName={TOPIC}, readQueueNums=4, writeQueueNums=4, perm=RW-" in pocket.setup_output[
        "updateTopic"]


def test_topic_list(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "topicList")
    # The Apache server is shared by the session's tests: compare the built-in topics and this module's.
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


def config(text: str) -> dict[str, str]:
    """getBrokerConfig's and getNamesrvConfig's ``key  =  value`` lines."""
    return dict((k.strip(), v.strip()) for k, v in (line.split("=", 1) for line in text.splitlines()
                                                      if "=" in line and not line.startswith("=")))


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


# --- messages -------------------------------------------------------------------------------------------------


def _message_rows(text: str) -> list[list[str]]:
    """A message printout without its Properties (compared apart) and commit-log offset (the properties only one
    broker adds, BROKER_ADDED, make the records' lengths differ), nor mqadmin's MessageTrack lines, which say
    UNKNOWN when a request of their lookup failed (a timeout on a loaded machine); test_query_msg_by_id checks
    them."""
    return [r for r in rows(text) if r[0] not in ("Properties:", "CommitLog", "MessageTrack")]


def test_query_msg_by_id(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "queryMsgById", "-i", lambda s: s.offset_msg_ids[3])
    assert _message_rows(pocket) == _message_rows(apache)
    assert properties(pocket) == properties(apache) == {"KEYS": "key3", "UNIQ_KEY": "ID", "TAGS": "TagA"}
    # What properties() leaves out, as each broker stored it: 4.9.7 adds CLUSTER and drops the producer's WAIT
    # (its MSG_REGION and TRACE_ON go in the send's answer, not the message); pocketmq keeps WAIT as sent and
    # stamps the two as 5.x does.
    theirs, mine = (set(raw_properties(text)) & set(BROKER_ADDED) for text in (apache, pocket))
    assert theirs == {"CLUSTER"} and raw_properties(apache)["CLUSTER"] == CLUSTER
    assert mine == {"WAIT", "MSG_REGION", "TRACE_ON"} and raw_properties(pocket)["WAIT"] == "true"
    assert ["Queue", "ID:", "3"] in rows(pocket)
    track = rows(pocket)[-1]
    assert track[:2] == ["MessageTrack", "[consumerGroup=" + GROUP + ","]
    assert track[2] in ("trackType=CONSUMED,", "trackType=UNKNOWN,")  # UNKNOWN: a lookup that timed out


def test_query_msg_by_key_and_unique_key(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "queryMsgByKey", "-t", TOPIC, "-k", "key5")
    assert rows(pocket) == rows(apache) == [["#Message", "ID", "#QID", "#Offset"], ["ID", "1", "1"]]
    apache, pocket = mqadmin.both(sides, "queryMsgByUniqueKey", "-t", TOPIC, "-i", lambda s: s.msg_ids[5])
    assert _message_rows(pocket) == _message_rows(apache)
    assert properties(pocket) == properties(apache)


def test_query_msg_by_key_lists_the_messages_in_log_order(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    # Apache's store sorts what the index finds (newest first) by commit-log offset, and mqadmin prints that order.
    topic = f"MqaKeys{SUFFIX}"
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "3")
    for side in sides:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        for i in range(3):
            producer.send(Message(topic, f"shared {i}".encode(), keys="shared"),
                          selector=lambda mqs, _m, n: mqs[n], arg=i)
    for _ in range(ATTEMPTS):  # (each broker indexes a message after answering its send)
        apache, pocket = mqadmin.both(sides, "queryMsgByKey", "-t", topic, "-k", "shared")
        if len(rows(pocket)) == len(rows(apache)) == 4:
            break
    assert rows(pocket) == rows(apache) == [["#Message", "ID", "#QID", "#Offset"]] + [["ID", str(q), "0"]
                                                                                     for q in range(3)]


def test_send_message_and_consume_message(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    topic = f"MqaSend{SUFFIX}"
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "2", "-w", "2")
    apache, pocket = mqadmin.both(sides, "sendMessage", "-t", topic, "-p", "hello", "-k", "k1", "-c", "TagB",
                                  "-b", "broker-a", "-i", "1")
    assert rows(pocket) == rows(apache)
    assert rows(pocket)[1][:3] == ["broker-a", "1", "SEND_OK"]
    apache, pocket = mqadmin.both(sides, "consumeMessage", "-t", topic, "-g", f"MqaTools{SUFFIX}")

    assert consumed(pocket) == consumed(apache)
    assert "BODY: hello" in pocket and "queueId=1" in pocket


def consumed(text: str) -> tuple[list[str], int, str]:
    """consumeMessage's output: its queue lines (in a HashSet's order: sorted here), its "Consume ok" lines, and
    its message line without what differs (record sizes and offsets, times; the properties only one broker adds,
    BROKER_ADDED; the properties' order, a HashMap's in mqadmin)."""
    lines = mask(text).splitlines()
    queue_lines = sorted(line for line in lines if line.startswith("MessageQueue"))
    message = next(line for line in lines if line.startswith("MSGID"))
    message = re.sub(r"(storeSize|commitLogOffset|bornTimestamp|storeTimestamp)=\d+", r"\1=N", message)
    props = re.search(r"properties=\{([^}]*)\}", message)
    assert props is not None, message
    kept = sorted(p for p in props.group(1).split(", ") if p.partition("=")[0] not in BROKER_ADDED)
    message = message.replace(props.group(0), "properties={" + ", ".join(kept) + "}")
    return queue_lines, lines.count("Consume ok"), message


# --- offsets --------------------------------------------------------------------------------------------------


def test_reset_offset_by_time(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    # The consumer is online: each broker computes the offsets and pushes them to it.
    apache, pocket = mqadmin.both(sides, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0")
    assert sorted(rows(pocket)) == sorted(rows(apache))
    assert ["broker-a", "2", "0"] in rows(pocket)
    # Each consumer takes the new offsets after its settle time and consumes everything again; until then its
    # group shows no lag with the old offsets, and the module's later tests would read either.
    for side in sides:
        _wait_no_lag(side, mqadmin, lambda side=side: len(side.consumed) >= 2 * MESSAGES)


def _offsets(side: Side, group: str) -> list[str]:
    """The group's offset of each queue of the topic (QUERY_CONSUMER_OFFSET at the side's broker)."""
    return [call(side.broker_addr, request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": TOPIC,
                                                                     "queueId": q})).ext.get("offset", "none")
            for q in range(QUEUES)]


def test_clone_group_offset(sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]) -> None:
    """mqadmin's cloneGroupOffset (each queue of the source group's consume stats committed for the destination,
    UPDATE_CONSUMER_OFFSET): the same line and the same offsets on both servers. Then pocketmq's own command,
    which asks the topic's brokers to clone the topic (CLONE_GROUP_OFFSET), prints mqadmin's line and leaves the
    same offsets."""
    dest, own = f"MqaClone{SUFFIX}", f"MqaCloneOwn{SUFFIX}"
    try:
        for side in sides:
            _wait_no_lag(side, mqadmin)  # (the source's offsets settled)
            # (pocketmq refuses a commit for a group it does not have, as 5.x: docs/compatibility.md)
            mqadmin.run(side.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", dest)
        apache, pocket = mqadmin.both(sides, "cloneGroupOffset", "-s", GROUP, "-d", dest, "-t", TOPIC)
        line = f"clone group offset success. srcGroup[{GROUP}], destGroup=[{dest}], topic[{TOPIC}]"
        assert pocket == apache == line  # (mqadmin ends it without a line break)
        cloned = [_offsets(side, dest) for side in sides]
        assert cloned[0] == cloned[1] and all(int(o) > 0 for o in cloned[0]), cloned  # (0: the answer for none)
        assert [_offsets(side, GROUP) for side in sides] == cloned
        capsys.readouterr()
        argv = ["cloneGroupOffset", "-n", sides[1].namesrv_addr, *SLOW_OK, "-s", GROUP, "-d", own, "-t", TOPIC]
        assert pocketmq_main(argv) == 0
        assert capsys.readouterr().out.replace(own, dest) == line + "\n"
        assert _offsets(sides[1], own) == cloned[1]
    finally:
        # The groups consume the topic now (QUERY_TOPIC_CONSUME_BY_WHO): mqadmin's queryMsgById would track the
        # message for them, and print the exception it gets for a group without a retry topic.
        for side, groups in zip(sides, ((dest,), (dest, own)), strict=True):
            for group in groups:
                mqadmin.run(side.namesrv_addr, "deleteSubGroup", "-b", side.broker_addr, "-g", group, "-r", "true")


# --- 5.5.0's mqadmin ------------------------------------------------------------------------------------------


def test_mqadmin_5(sides: tuple[Side, Side], mqadmin: Mqadmin, mqadmin5: Mqadmin) -> None:
    # 5.x's topicStatus first asks each broker for the topic's config (GET_TOPIC_CONFIG, 351), which 4.9.7's
    # broker does not answer: pocketmq's answer to 5.5.0's tools is compared with 4.9.7's tools on Apache.
    apache = mqadmin.run(sides[0].namesrv_addr, "topicStatus", "-t", TOPIC)
    pocket = mqadmin5.run(sides[1].namesrv_addr, "topicStatus", "-t", TOPIC)
    *queues, tps = rows(pocket)  # 5.x adds the topic's put rate
    assert queues == rows(apache) and len(queues) == 1 + QUEUES
    assert tps[:3] == ["Topic", "Put", "TPS:"]
    apache, pocket = mqadmin5.both(sides, "consumerConnection", "-g", GROUP)
    assert rows(pocket) == rows(apache)
    apache, pocket = mqadmin5.both(sides, "queryMsgById", "-t", TOPIC, "-i", lambda s: s.offset_msg_ids[2])
    assert _message_rows(pocket) == _message_rows(apache)



def test_set_consume_mode_5(sides: tuple[Side, Side], pocket: ThreadedCluster, mqadmin5: Mqadmin) -> None:
    # 5.x's setConsumeMode (SET_MESSAGE_REQUEST_MODE, 401), which 4.9.7's broker does not have: the group's
    # mode on pocketmq's broker afterwards is what the command asked (its answers to Apache 5.5.0's broker are
    # compared in test_apache_assignment.py).
    group = f"{GROUP}-pop"  # not the group the module's other tests consume with
    out = mqadmin5.run(sides[1].namesrv_addr, "setConsumeMode", "-c", CLUSTER, "-t", TOPIC, "-g", group,
                       "-m", "POP", "-q", "2")
    assert f"set consume mode to {sides[1].broker_addr} success." in out
    assert f"topic[{TOPIC}] group[{group}] consume mode[POP] popShareQueueNum[2]" in out
    mode = pocket.cluster.broker.query_assignment_processor.mode_of(TOPIC, group)
    assert (mode.mode, mode.pop_share_queue_num) == ("POP", 2)


# --- 5.5.0's mqadmin against Apache 5.5.0 ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sides5(sides: tuple[Side, Side], apache_rocketmq5: ApacheRocketMQ,
           mqadmin5: Mqadmin) -> Iterator[tuple[Side, Side]]:
    """Apache 5.5.0 after the module's setup (by 5.5.0's mqadmin), and the module's pocketmq side."""
    apache = Side("apache", apache_rocketmq5.namesrv_addr, apache_rocketmq5.broker_addr,
                  lists_empty_retry_queue=True)
    try:
        _set_up(apache, mqadmin5)
        yield apache, sides[1]
    finally:
        for client in reversed(apache.clients):
            client.shutdown() if isinstance(client, SyncPushConsumer) else client.close()


# Rates, hours, disk share and clusterList's timer backlog (5.x's #Timer(Progress), behind-offset): a moment's
_MEASURED = re.compile(r"\d+\.\d+|\b\d+-\d+(?=\()")


def _rows_measured_masked(text: str) -> list[list[str]]:
    return rows(_MEASURED.sub("N", mask(text)))


def test_cluster_list_and_broker_status_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's clusterList reads brokerActive (#ACTIVATED), getTransferredTps (#OutTPS, 4.x's getTransferedTps
    renamed) and the ack pool's figures from GET_BROKER_RUNTIME_INFO; the rates, hours and disk share differ."""
    apache, pocket = mqadmin5.both(sides5, "clusterList")
    assert _rows_measured_masked(pocket) == _rows_measured_masked(apache)
    assert rows(pocket)[1][-1] == "true"
    apache, pocket = mqadmin5.both(sides5, "brokerStatus", "-b", lambda s: s.broker_addr)
    status = [properties_of(text) for text in (apache, pocket)]
    read = {"brokerActive", "getTransferredTps", "ackThreadPoolQueueSize", "ackThreadPoolQueueHeadWaitTimeMills"}
    assert read <= set(status[0]) & set(status[1])
    assert status[1]["getTransferredTps"] == status[1]["getTransferedTps"]  # (one figure, both names)


def test_consumer_progress_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's consumerProgress prints #Inflight, each queue's pullOffset (the group's last pull) less its consumer
    offset; pocketmq sent no pullOffset, read as 0: minus the consumed messages."""
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", GROUP)
    # The empty retry queue at 0: listed by 5.5.0 only (Side.lists_empty_retry_queue).
    theirs = _rows_measured_masked(apache)
    theirs.remove([f"%RETRY%{GROUP}", "broker-a", "0", "0", "0", "0", "0", "N/A"])
    assert _rows_measured_masked(pocket) == theirs
    assert ["Consume", "Inflight", "Total:", "0"] in rows(pocket)


def test_consumer_progress_with_messages_in_flight_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """#Inflight where the group pulled past its commit: queue 0's five messages pulled and two committed (3 in
    flight), two of queue 1's three pulled and one committed (1 in flight); the broker keeps each queue's last pull
    (the pull offset, never behind the commit), the Diff counts from the commit."""
    topic, group = f"MqaInflight{SUFFIX}", f"MqaInflightGroup{SUFFIX}"
    mqadmin5.both(sides5, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "2", "-w", "2")
    mqadmin5.both(sides5, "updateSubGroup", "-c", CLUSTER, "-g", group)

    def pull_past_the_commit(side: Side) -> None:
        with SyncProducer(f"{group}P", side.namesrv_addr, protocol="rocketmq") as producer:
            for queue_id, count in ((0, 5), (1, 3)):
                for i in range(count):
                    producer.send(Message(topic, b"inflight %d" % i), selector=lambda mqs, _m, q: mqs[q],
                                  arg=queue_id)
        with SyncPullConsumer(group, side.namesrv_addr, protocol="rocketmq") as consumer:
            queues = sorted(consumer.fetch_subscribe_message_queues(topic), key=lambda q: q.queue_id)
            for mq, pulled, committed in ((queues[0], 5, 2), (queues[1], 2, 1)):
                assert len(consumer.pull(mq, "*", 0, pulled).msg_found_list) == pulled
                consumer.update_consume_offset(mq, committed)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(pull_past_the_commit, sides5))
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", group)
    assert _rows_measured_masked(pocket) == _rows_measured_masked(apache)
    # (#QID, #Broker Offset, #Consumer Offset, #Diff, #Inflight)
    assert [r[2:7] for r in rows(pocket) if r[0] == topic] == [["0", "5", "2", "3", "3"], ["1", "3", "1", "2", "1"]]
    assert ["Consume", "Inflight", "Total:", "4"] in rows(pocket)
    mqadmin5.both(sides5, "deleteTopic", "-c", CLUSTER, "-t", topic)
    mqadmin5.both(sides5, "deleteSubGroup", "-c", CLUSTER, "-g", group)


def test_update_topic_list_and_update_sub_group_list_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin,
                                                        tmp_path: Path) -> None:
    """5.x's batch creations (UPDATE_AND_CREATE_TOPIC_LIST, 18; UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, 225), as
    mqadmin sends them from a file of configs: each topic routed with its queues, each group's config kept (but
    5.x's subscriptionDataSet, which pocketmq does not keep: the file has none)."""
    topics = [f"MqaList{n}{SUFFIX}" for n in "AB"]
    groups = [f"MqaListGroup{n}{SUFFIX}" for n in "AB"]
    topic_file, group_file = tmp_path / "topics.json", tmp_path / "groups.json"
    topic_file.write_text(json.dumps([{"topicName": t, "readQueueNums": 2, "writeQueueNums": 3, "perm": 6,
                                       "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
                                       "attributes": {}} for t in topics]))
    group_file.write_text(json.dumps([{"groupName": g, "consumeEnable": True, "consumeFromMinEnable": True,
                                       "consumeBroadcastEnable": False, "retryQueueNums": 1, "retryMaxTimes": 5,
                                       "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
                                       "notifyConsumerIdsChangedEnable": True, "groupSysFlag": 0,
                                       "consumeTimeoutMinute": 15, "attributes": {}}
                                      for g in groups]))
    for command, file in (("updateTopicList", topic_file), ("updateSubGroupList", group_file)):
        apache, pocket = mqadmin5.both(sides5, command, "-b", lambda s: s.broker_addr, "-f", str(file))
        assert rows(pocket) == rows(apache)
        assert "success, please check the result later." in pocket
    for topic in topics:
        apache, pocket = mqadmin5.both(sides5, "topicRoute", "-t", topic)
        assert mask(pocket) == mask(apache)
        assert '"readQueueNums":2' in pocket and '"writeQueueNums":3' in pocket
    for group in groups:
        apache, pocket = mqadmin5.both(sides5, "getConsumerConfig", "-g", group)
        assert config(pocket) == config(apache)
        assert config(pocket)["retryMaxTimes"] == "5"


def test_ha_status_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """haStatus (GET_BROKER_HA_STATUS, 907) of a master without slaves: its commit log's max offset (each store's
    own), no slave."""
    apache, pocket = mqadmin5.both(sides5, "haStatus", "-b", lambda s: s.broker_addr)
    cells = [rows(text) for text in (apache, pocket)]
    for c in cells:
        assert c[1][0] == "#MasterCommitLogMaxOffset" and int(c[1][1]) > 0
        c[1][1] = "N"
    assert cells[1] == cells[0]
    assert ["#SlaveNum", "0"] in cells[1]


def test_reset_offset_of_one_queue_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's resetOffsetByTime -b -q -o (resetOffsetByQueueId: UPDATE_CONSUMER_OFFSET, then
    INVOKE_BROKER_TO_RESET_OFFSET with queueId and offset): the group's running consumer consumes that queue again
    from the offset, and nothing else; an offset outside the queue is refused. pocketmq reset every queue to its
    first message (its running consumer consumed everything again), and stored 999."""
    before = [len(side.consumed) for side in sides5]
    args = ("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0", "-b", lambda s: s.broker_addr, "-q", "0")
    apache, pocket = mqadmin5.both(sides5, *args, "-o", "1")
    assert rows(pocket) == rows(apache)
    assert rows(pocket)[-1] == ["reset", "consumer", "offset", "to", "1"]
    again = []
    for side, n in zip(sides5, before, strict=True):
        # (Apache's consumer learns of it at its next pull of the queue, and waits its offset_illegal_delay)
        _wait_no_lag(side, mqadmin5, lambda side=side, n=n: len(side.consumed) > n)
        again.append(sorted((m.queue_id, m.queue_offset) for m in side.consumed[n:]))
    assert again[1] == again[0] == [(0, 1)]
    refusals = []
    for side in sides5:
        with pytest.raises(AssertionError) as refused:
            mqadmin5.run(side.namesrv_addr, *(a(side) if callable(a) else a for a in args), "-o", "999")
        refusals.append(set(re.findall(r"CODE: 1\s+DESC: (Target offset [^\n]*?\])", str(refused.value))))
    assert refusals[1] == refusals[0] == {"Target offset 999 not in consume queue range [0-2]"}
    for side in sides5:
        _wait_no_lag(side, mqadmin5)
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", GROUP)
    theirs = _rows_measured_masked(apache)
    theirs.remove([f"%RETRY%{GROUP}", "broker-a", "0", "0", "0", "0", "0", "N/A"])
    assert _rows_measured_masked(pocket) == theirs


def properties_of(text: str) -> dict[str, str]:
    """brokerStatus's ``key : value`` lines."""
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def _key_paths(obj: object, prefix: str = "") -> set[str]:
    if not isinstance(obj, dict):
        return {prefix}
    return {p for k, v in obj.items() for p in _key_paths(v, f"{prefix}/{k}")}


def test_export_metrics_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin, tmp_path: Path) -> None:
    """5.x's exportMetrics splits getTransferredTps: without it (pocketmq sent 4.x's name only) it failed with a
    NullPointerException and wrote nothing."""
    outputs, exported = [], []
    for side in sides5:
        where = tmp_path / side.name
        out = mqadmin5.run(side.namesrv_addr, "exportMetrics", "-c", CLUSTER, "-f", str(where))
        outputs.append(rows(out.replace(str(where), "DIR")))
        exported.append(_key_paths(json.loads((where / "metrics.json").read_text())))
    assert outputs[1] == outputs[0] == [["export", "DIR/metrics.json", "success"]]
    assert exported[1] == exported[0]


# --- pocketmq's own commands print what mqadmin prints --------------------------------------------------------


def _same_rows(mine: str, theirs: str) -> None:
    assert rows(mine) == rows(theirs)


def _same_sorted_rows(mine: str, theirs: str) -> None:
    assert sorted(rows(mine)) == sorted(rows(theirs))


def _same_set(mine: str, theirs: str) -> None:
    assert set(mine.split()) == set(theirs.split())


def _same_text(mine: str, theirs: str) -> None:
    assert mask(mine).rstrip() == mask(theirs).rstrip()


def _same_keys(mine: str, theirs: str) -> None:
    def keys(text: str) -> list[str]:
        return [line.split(":", 1)[0].strip() for line in text.splitlines() if line.strip()]

    assert keys(mine) == keys(theirs)


def _same_config(mine: str, theirs: str) -> None:
    def config(text: str) -> dict[str, str]:
        return {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in text.splitlines()
                                                   if "=" in line and not line.startswith("="))}

    assert mask(mine.splitlines()[0]) == mask(theirs.splitlines()[0])
    assert config(mine) == config(theirs)


def _same_progress(mine: str, theirs: str) -> None:
    cells = [rows(text) for text in (mine, theirs)]
    for c in cells:
        c[-2][-1] = "N"  # Consume TPS: x.xx
    assert cells[0] == cells[1]


def _same_cluster(mine: str, theirs: str) -> None:
    columns = {5, 6, 8, 9}  # rates, hours, disk share: read at different moments
    assert numbers_masked(rows(mine), columns) == numbers_masked(rows(theirs), columns)


def _same_message(mine: str, theirs: str) -> None:
    # pocketmq prints the body (mqadmin writes it to a file), and does not compute mqadmin's MessageTrack lines
    # (which groups consumed the message); the properties come in another order (mqadmin's is a HashMap's).
    def fields(text: str) -> list[list[str]]:
        return [r for r in rows(text) if r[0] not in ("Message", "MessageTrack", "Properties:")]

    assert fields(mine) == fields(theirs)
    assert properties(mine) == properties(theirs)
    assert ["Message", "Body:", "body", "5"] in rows(mine)  # (the setup's message 5)
    assert not [r for r in rows(mine) if r[0] == "MessageTrack"]
    assert [r for r in rows(theirs) if r[0] == "MessageTrack"]
    assert [r for r in rows(theirs) if r[:3] == ["Message", "Body", "Path:"]]


_OWN = {
    "topicList": (("topicList",), _same_set),
    "topicRoute": (("topicRoute", "-t", TOPIC), _same_text),
    "topicStatus": (("topicStatus", "-t", TOPIC), _same_rows),
    "clusterList": (("clusterList",), _same_cluster),
    "brokerStatus": (("brokerStatus", "-b", "{broker}"), _same_keys),
    "getBrokerConfig": (("getBrokerConfig", "-b", "{broker}"), _same_config),
    "updateBrokerConfig": (("updateBrokerConfig", "-b", "{broker}", "-k", "autoCreateTopicEnable", "-v", "true"),
                           _same_rows),
    "getNamesrvConfig": (("getNamesrvConfig",), _same_sorted_rows),
    "updateNamesrvConfig": (("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false"), _same_rows),
    "consumerProgress": (("consumerProgress", "-g", GROUP), _same_progress),
    "consumerConnection": (("consumerConnection", "-g", GROUP), _same_sorted_rows),
    "producerConnection": (("producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC), _same_rows),
    "queryMsgById": (("queryMsgById", "-i", "{offset_msg_id}"), _same_message),
    "queryMsgByKey": (("queryMsgByKey", "-t", TOPIC, "-k", "key5"), _same_rows),
    "queryMsgByUniqueKey": (("queryMsgByUniqueKey", "-t", TOPIC, "-i", "{msg_id}"), _same_message),
    "resetOffsetByTime": (("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0"), _same_sorted_rows),
    "updateTopic": (("updateTopic", "-c", CLUSTER, "-t", f"MqaOwn{SUFFIX}", "-r", "2", "-w", "2"), _same_rows),
    "updateSubGroup": (("updateSubGroup", "-c", CLUSTER, "-g", f"MqaOwnGroup{SUFFIX}"), _same_rows),
}


@pytest.mark.parametrize("command", sorted(_OWN))
def test_pocketmq_command_prints_what_mqadmin_prints(
    command: str, sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    template, same = _OWN[command]
    values = {"broker": pocket.broker_addr, "offset_msg_id": pocket.offset_msg_ids[5], "msg_id": pocket.msg_ids[5]}
    args = tuple(a.format(**values) for a in template)
    # What an earlier test printed, unless the command's answer moves as the module's tests go on.
    cached = None if command in ("topicList", "consumerProgress", "resetOffsetByTime") else mqadmin.seen.get(args)
    if command == "consumerProgress":  # (resetOffsetByTime's test sent the group back to 0: it consumes again)
        _wait_no_lag(pocket, mqadmin)
    theirs = cached or mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    code = pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]])
    mine, err = capsys.readouterr()
    assert code == 0, err
    same(mine, theirs)


def test_pocketmq_delete_commands_print_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    for name in ("A", "B"):  # mqadmin deletes A, pocketmq B
        mqadmin.run(pocket.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", f"MqaDel{name}{SUFFIX}")
        mqadmin.run(pocket.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", f"MqaDelGroup{name}{SUFFIX}")
    for command, option, value in (("deleteTopic", "-t", "MqaDel{}" + SUFFIX),
                                   ("deleteSubGroup", "-g", "MqaDelGroup{}" + SUFFIX)):
        theirs = mqadmin.run(pocket.namesrv_addr, command, "-c", CLUSTER, option, value.format("A"))
        capsys.readouterr()
        argv = [command, "-n", pocket.namesrv_addr, *SLOW_OK, "-c", CLUSTER, option, value.format("B")]
        assert pocketmq_main(argv) == 0
        mine = capsys.readouterr().out
        assert rows(mine.replace(value.format("B"), value.format("A"))) == rows(theirs)



def test_order_conf_commands(sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]) -> None:
    """updateOrderConf (put, get, delete) and `updateTopic -o true` (-b: the broker's part merged into the entry;
    -c: the cluster's brokers): mqadmin prints the same against Apache and pocketmq, and pocketmq's own commands
    (on topics B, mqadmin's on topics A) print what mqadmin prints against pocketmq. (A -b entry is merged into one
    already there: mqadmin prints the stack trace of the QUERY_NOT_FOUND its read of a missing entry meets, and
    carries on.)"""
    _, pocket = sides
    steps = (
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "put", "-v", "broker-x:1"),
        ("updateTopic", "-b", "{broker}", "-t", "MqaOrd{}" + SUFFIX, "-r", "2", "-w", "2", "-o", "true"),
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "get"),
        ("updateTopic", "-c", CLUSTER, "-t", "MqaOrdC{}" + SUFFIX, "-r", "3", "-w", "3", "-o", "true"),
        ("updateOrderConf", "-t", "MqaOrdC{}" + SUFFIX, "-m", "get"),
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "delete"),
        ("updateOrderConf", "-t", "MqaOrdC{}" + SUFFIX, "-m", "delete"),
    )
    outputs: list[str] = []
    for step in steps:
        apache, theirs = mqadmin.both(sides, *(lambda s, a=a: a.format("A", broker=s.broker_addr) for a in step))
        assert rows(theirs) == rows(apache), step
        capsys.readouterr()
        argv = [step[0], "-n", pocket.namesrv_addr, *SLOW_OK,
                *(a.format("B", broker=pocket.broker_addr) for a in step[1:])]
        assert pocketmq_main(argv) == 0
        mine = capsys.readouterr().out
        assert rows(mine.replace("MqaOrdB", "MqaOrdA").replace("MqaOrdCB", "MqaOrdCA")) == rows(theirs), step
        outputs.append(theirs)
    merged = ";".join({"broker-a": "broker-a:2", "broker-x": "broker-x:1"}[n]
                      for n in hash_map_order(["broker-x", "broker-a"]))
    assert f"orderConf=[{merged}]" in outputs[2]
    assert "set cluster orderConf. isOrder=true, orderConf=[broker-a:3]TopicConfig" in outputs[3]

def test_pocketmq_consume_message_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    topic = f"MqaOwnConsume{SUFFIX}"
    mqadmin.run(pocket.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "3")
    mqadmin.run(pocket.namesrv_addr, "sendMessage", "-t", topic, "-p", "døgn", "-k", "k", "-b", "broker-a", "-i", "2")
    args = ("consumeMessage", "-t", topic, "-g", f"MqaOwnTools{SUFFIX}")
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
    mine = capsys.readouterr().out
    assert consumed(mine) == consumed(theirs)
    assert "body=[100, -61, -72, 103, 110]" in mine  # Java's signed bytes of "døgn"


def test_pocketmq_send_message_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    args = ("sendMessage", "-t", TOPIC, "-p", "own", "-c", "TagC", "-b", "broker-a", "-i", "2")
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
    assert rows(capsys.readouterr().out) == rows(theirs)


def test_pocketmq_query_msg_trace_by_id_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    """#ClientHost is the trace message's born host without its port (MessageExt.getBornHostString); pocketmq
    printed host:port. The consumer groups come in mqadmin's HashMap order, not the order they consumed in."""
    _, pocket = sides
    topic = f"MqaTrace{SUFFIX}"
    with SyncProducer(f"MqaTracePG{SUFFIX}", pocket.namesrv_addr, enable_msg_trace=True) as producer:
        sent = producer.send(Message(topic, b"traced", tags="TagT", keys="trace-key"))
    groups = ["MqaTraceSecond", "MqaTraceFirst"]  # consumed in this order; a HashMap holds them the other way
    assert hash_map_order(groups) == groups[::-1]
    for group in groups:
        got: list[MessageExt] = []

        def listener(msgs: list[MessageExt], _ctx: Any, got: list[MessageExt] = got) -> ConsumeConcurrentlyStatus:
            got.extend(msgs)
            # Still in the listener when the main thread shuts the consumer down: the SubAfter record is written
            # once the listener returns, so the shutdown must wait for the batch (await_termination_when_shutdown;
            # with the default 0 the batch was abandoned and the group's Sub row never came).
            threading.Event().wait(0.2)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = SyncPushConsumer(group, pocket.namesrv_addr, enable_msg_trace=True,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET", await_termination_when_shutdown=5.0)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        consumer.start()
        try:
            deadline = time.monotonic() + 30
            while not got:
                assert time.monotonic() < deadline, group
                time.sleep(0.05)
        finally:
            consumer.shutdown()  # (sends the trace records still queued)
    args = ("queryMsgTraceById", "-i", sent.msg_id)
    deadline = time.monotonic() + 30
    while True:  # (each client's shutdown sent its records; the broker indexes them a moment later)
        capsys.readouterr()
        assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
        mine = capsys.readouterr().out
        if [row[0] for row in rows(mine)].count("Sub") == 2 and any(row[0] == "Pub" for row in rows(mine)):
            break
        assert time.monotonic() < deadline, mine
        time.sleep(0.2)
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    assert rows(mine) == rows(theirs)
    assert "127.0.0.1" in [cell for row in rows(mine) if row[0] == "Pub" for cell in row]
    assert [row[1] for row in rows(mine) if row[0] == "Sub"] == groups[::-1]


def test_export_configs(sides: tuple[Side, Side], mqadmin: Mqadmin, tmp_path: Path) -> None:
    """exportConfigs copies sixteen broker settings with Properties.setProperty, which refuses a null: three that
    pocketmq's GET_BROKER_CONFIG lacked (filterServerNums, slaveReadEnable, useTLS) failed it with a
    NullPointerException."""
    outputs = []
    for side in sides:
        where = tmp_path / side.name
        out = mqadmin.run(side.namesrv_addr, "exportConfigs", "-c", CLUSTER, "-f", str(where))
        outputs.append(rows(out.replace(str(where), "DIR")))
        exported = json.loads((where / "configs.json").read_text())
        assert exported["brokerConfigs"]["broker-a"]["useTLS"] == "false"
    assert outputs[1] == outputs[0]
