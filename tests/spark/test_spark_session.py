"""The rocketmq data source in a real local[2] Spark session against a real cluster on 127.0.0.1.

The only file here that starts a JVM: one session for every test (tests/spark/conftest.py). Each test uses
topics of its own on the shared cluster.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import pathlib
import re

import pytest
from spark_admin import create_topic, delete_topic, stored_messages

from pocketmq.client import Message, MessageQueue, SyncProducer, SyncPullConsumer
from pocketmq.remoting.wire_protocol import WireProtocol


def read(spark, cluster, **options):
    reader = spark.read.format("rocketmq").option("endpoints", cluster.namesrv_addr)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def send(cluster, topic: str, counts: dict[int, int], first: int = 0, protocol: str = "msgpack") -> list:
    """``counts[queue_id]`` messages into each queue, bodies "topic-queue-n" with n counted from ``first``."""
    with SyncProducer("spark-tests", cluster.namesrv_addr, protocol=protocol) as producer:
        results = [producer.send(Message(topic, f"{topic}-{q}-{i}".encode()), MessageQueue(topic, "broker-a", q))
                   for q, n in counts.items() for i in range(first, first + n)]
    assert cluster.wait_dispatched()
    return results


def test_batch_read_equals_what_was_sent(spark, spark_cluster):
    create_topic(spark_cluster, "Sales", 4)
    with SyncProducer("spark-tests", spark_cluster.namesrv_addr) as producer:
        sent = {}
        for i in range(40):
            msg = Message("Sales", f"sale {i}".encode(), tags=("eu", "us")[i % 2], keys=[f"s-{i}", "sales"],
                          properties={"shop": f"shop-{i % 3}"})
            result = producer.send(msg, MessageQueue("Sales", "broker-a", i % 4))
            sent[(result.message_queue.queue_id, result.queue_offset)] = (msg, result)
    assert spark_cluster.wait_dispatched()

    df = read(spark, spark_cluster, subscribe="Sales")
    assert df.rdd.getNumPartitions() == 4  # one per queue
    rows = df.collect()
    assert len(rows) == 40
    for r in rows:
        msg, result = sent[(r.queueId, r.queueOffset)]
        assert (r.topic, r.brokerName, r.body, r.tags, r.keys) == ("Sales", "broker-a", msg.body, msg.tags, msg.keys)
        assert r.msgId == result.msg_id
        assert r.properties["shop"] == msg.properties["shop"]
        assert r.storeHost == spark_cluster.broker_addr and r.storeTimestamp >= r.bornTimestamp

    # Tags filter on the broker; JSON offsets bound queues; a regex subscribes to topics by name.
    assert read(spark, spark_cluster, subscribe="Sales", subExpression="eu").count() == 20
    bounded = read(spark, spark_cluster, subscribe="Sales",
                   startingOffsets='{"Sales": {"broker-a": {"0": 2, "1": -2}}}',
                   endingOffsets='{"Sales": {"broker-a": {"0": 7, "2": 3}}}')
    assert sorted((r.queueId, r.queueOffset) for r in bounded.collect()) == (
        [(0, o) for o in range(2, 7)] + [(1, o) for o in range(10)] + [(2, o) for o in range(3)]
        + [(3, o) for o in range(10)])
    send(spark_cluster, "SalesReturns", {0: 3})
    assert read(spark, spark_cluster, subscribePattern="Sales.*").count() == 43
    assert read(spark, spark_cluster, assign='{"Sales": [1, 3]}').count() == 20

    # From a store time on: the first offset of each queue stored at or after it.
    cut = sorted(rows, key=lambda r: r.storeTimestamp)[25].storeTimestamp
    since = read(spark, spark_cluster, subscribe="Sales", startingTimestamp=str(int(cut.timestamp() * 1000)))
    assert sorted(r.queueOffset + 100 * r.queueId for r in since.collect()) == sorted(
        r.queueOffset + 100 * r.queueId for r in rows if r.storeTimestamp >= cut)

    # Long queues split into several tasks, and the rows stay the same.
    split = read(spark, spark_cluster, subscribe="Sales", maxRecordsPerPartition="3")
    assert split.rdd.getNumPartitions() == 16
    assert split.count() == 40


def run_stream(spark, cluster, checkpoint, seen: list, **options):
    """One availableNow run into foreachBatch, which records (batchId, sorted bodies)."""
    reader = spark.readStream.format("rocketmq").option("endpoints", cluster.namesrv_addr)
    for k, v in options.items():
        reader = reader.option(k, v)

    def collect(df, batch_id):
        seen.append((batch_id, sorted(r.body.decode() for r in df.select("body").collect())))

    query = (reader.load().writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return [(p["batchId"], p["numInputRows"], json.loads(p["sources"][0]["endOffset"]))
            for p in query.recentProgress if p["numInputRows"]]


def group_offsets(cluster, group: str, topic: str, queues: int) -> dict[int, int]:
    with SyncPullConsumer(group, cluster.namesrv_addr) as consumer:
        return {q: consumer.fetch_consume_offset(MessageQueue(topic, "broker-a", q), from_store=True)
                for q in range(queues)}


def test_stream_available_now_batches_by_the_limit_and_resumes_from_the_checkpoint(spark, spark_cluster, tmp_path):
    create_topic(spark_cluster, "Clicks", 2)
    send(spark_cluster, "Clicks", {0: 7, 1: 5})
    seen: list = []
    opts = dict(subscribe="Clicks", startingOffsets="earliest", maxOffsetsPerTrigger="5", consumerGroup="clicks-dash")

    # 12 messages, at most 5 a batch, shared in proportion to what each queue has pending.
    progress = run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, **opts)
    assert progress == [
        (0, 5, {"Clicks": {"broker-a": {"0": 3, "1": 2}}}),
        (1, 5, {"Clicks": {"broker-a": {"0": 6, "1": 4}}}),
        (2, 2, {"Clicks": {"broker-a": {"0": 7, "1": 5}}}),
    ]
    assert [b for b, _ in seen] == [0, 1, 2]
    # The group mirrors what Spark committed, which trails the checkpoint by a batch.
    assert group_offsets(spark_cluster, "clicks-dash", "Clicks", 2) == {0: 6, 1: 4}

    # A restart with nothing new reads nothing again.
    assert run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, **opts) == []
    assert len(seen) == 3

    # New messages and a new queue: the restart reads exactly those, the new queue from its beginning.
    create_topic(spark_cluster, "Clicks", 3)
    send(spark_cluster, "Clicks", {0: 1, 2: 2}, first=100)
    progress = run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, **opts)
    assert progress == [(3, 3, {"Clicks": {"broker-a": {"0": 8, "1": 5, "2": 2}}})]
    bodies = [b for _, batch in seen for b in batch]
    assert sorted(bodies) == sorted([f"Clicks-0-{i}" for i in range(7)] + [f"Clicks-1-{i}" for i in range(5)]
                                    + ["Clicks-0-100", "Clicks-2-100", "Clicks-2-101"])
    assert group_offsets(spark_cluster, "clicks-dash", "Clicks", 2) == {0: 7, 1: 5}


def stream_to_topic(spark, cluster, checkpoint, target: str, idempotent: bool):
    """Payments -> target, 6 rows a micro-batch; the row of queue 1, offset 4 goes to the target's queue 3."""
    source = (spark.readStream.format("rocketmq").option("endpoints", cluster.namesrv_addr)
              .option("subscribe", "Payments").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "6").load())
    rows = source.selectExpr("body", "keys",
                             "CASE WHEN queueId = 1 AND queueOffset = 4 THEN 3 ELSE queueId END AS queueId")
    return (rows.writeStream.format("rocketmq").option("endpoints", cluster.namesrv_addr)
            .option("topic", target).option("idempotent", str(idempotent).lower()).option("sendBatchSize", "2")
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "at-least-once"])
def test_a_sink_failure_mid_batch_replays_the_same_offsets(spark, spark_cluster, tmp_path, idempotent):
    """The sink fails for real in micro-batch 1: the target topic has no queue 3 yet, so one task stops after
    storing part of its rows. Once the topic has the queue, the restarted query replays batch 1 with the same
    offsets; idempotent writes store each row once, at-least-once writes store some twice."""
    target = f"PaymentsOut{'Once' if idempotent else 'Twice'}"
    if idempotent:
        create_topic(spark_cluster, "Payments", 2)
        send(spark_cluster, "Payments", {0: 6, 1: 6})
    create_topic(spark_cluster, target, 2)
    ckpt = tmp_path / "ckpt"

    failed = stream_to_topic(spark, spark_cluster, ckpt, target, idempotent)
    with pytest.raises(Exception, match="has no queue 3"):
        failed.awaitTermination(120)
    planned = (ckpt / "offsets" / "1").read_text().splitlines()[-1]
    assert json.loads(planned) == {"Payments": {"broker-a": {"0": 6, "1": 6}}}
    assert not (ckpt / "commits" / "1").exists()
    before = stored_messages(spark_cluster, target)
    assert 6 < len(before) < 12  # batch 0 and part of batch 1

    create_topic(spark_cluster, target, 4)
    replay = stream_to_topic(spark, spark_cluster, ckpt, target, idempotent)
    replay.awaitTermination(120)
    assert replay.exception() is None
    [batch] = [p for p in replay.recentProgress if p["numInputRows"]]
    assert (batch["batchId"], json.loads(batch["sources"][0]["startOffset"]), json.loads(planned)) == (
        1, {"Payments": {"broker-a": {"0": 3, "1": 3}}}, json.loads(batch["sources"][0]["endOffset"]))

    bodies = sorted(m.body.decode() for m in stored_messages(spark_cluster, target))
    expected = sorted(f"Payments-{q}-{i}" for q in (0, 1) for i in range(6))
    if idempotent:
        assert bodies == expected
        assert {m.queue_id for m in stored_messages(spark_cluster, target) if m.body == b"Payments-1-4"} == {3}
    else:
        # The row before the failing one was stored by the failed attempt and again by the replay.
        assert set(bodies) == set(expected) and bodies.count("Payments-1-3") == 2


def test_dataframe_write_then_read_round_trips(spark, spark_cluster):
    rows = [(b"\x00\xffraw", "created", ["o-1", "c-9"], {"shop": "s1", "currency": "EUR"}),
            (b"second", None, [], {}),
            (b"{}", "paid", ["o-2"], {"note": "a b c"})]
    df = spark.createDataFrame(rows, "body binary, tags string, keys array<string>, properties map<string,string>")
    df.write.format("rocketmq").option("endpoints", spark_cluster.namesrv_addr).option("topic", "RoundTrip") \
        .mode("append").save()
    # String bodies and keys, and the topic from a column.
    spark.createDataFrame([("RoundTrip", "text body", "k1 k2")], "topic string, body string, keys string") \
        .write.format("rocketmq").option("endpoints", spark_cluster.namesrv_addr).mode("append").save()
    assert spark_cluster.wait_dispatched()

    back = read(spark, spark_cluster, subscribe="RoundTrip").collect()
    user = ("shop", "currency", "note")  # the rest are RocketMQ's own (UNIQ_KEY, WAIT)
    got = sorted((bytes(r.body), r.tags, r.keys, {k: v for k, v in r.properties.items() if k in user}) for r in back)
    assert got == sorted([(b, t, k, p) for b, t, k, p in rows] + [(b"text body", None, ["k1", "k2"], {})])
    with pytest.raises(Exception, match="append-only"):
        df.write.format("rocketmq").option("endpoints", spark_cluster.namesrv_addr).option("topic", "RoundTrip") \
            .mode("overwrite").save()


def test_stream_over_deleted_data_fails_unless_told_otherwise(spark, spark_cluster, tmp_path):
    send(spark_cluster, "Doomed", {0: 3})
    seen: list = []
    opts = dict(subscribe="Doomed", startingOffsets="earliest")
    assert run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, **opts)[0][1] == 3
    delete_topic(spark_cluster, "Doomed")
    with pytest.raises(Exception, match="Doomed/broker-a/0 is gone.*failOnDataLoss"):
        run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, **opts)
    assert run_stream(spark, spark_cluster, tmp_path / "ckpt", seen, failOnDataLoss="false", **opts) == []


def test_example_pipeline_aggregates_orders_per_minute_into_a_topic(spark, spark_cluster, tmp_path):
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"
    spec = importlib.util.spec_from_file_location("spark_pipeline", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    ns, checkpoint = spark_cluster.namesrv_addr, str(tmp_path / "ckpt")
    topics = dict(source="PipelineOrders", target="PipelineStats")

    first = example.order_events(40)
    example.produce(ns, first, topics["source"])
    example.start_aggregation(spark, ns, checkpoint, **topics).awaitTermination(120)
    assert example.current_stats(spark, ns, topics["target"]) == example.expected_stats(first)

    # More orders, some in a minute already reported: the next trigger brings that minute up to date.
    more = example.order_events(20, first=40)
    example.produce(ns, more, topics["source"])
    example.start_aggregation(spark, ns, checkpoint, **topics).awaitTermination(120)
    stats = example.current_stats(spark, ns, topics["target"])
    assert stats == example.expected_stats(first + more)
    assert stats["2024-05-01 10:04"]["orders"] == 8  # events 35..42 straddle the two runs


def test_the_quick_start_in_docs_runs_as_written(spark, spark_cluster, tmp_path, capsys):
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "spark.md").read_text()
    produce, pipeline, write = re.findall(r"```python\n(.*?)```", doc, flags=re.S)[:3]

    def run(code: str) -> None:
        code = code.replace("127.0.0.1:9876", spark_cluster.namesrv_addr).replace("/tmp/orders-upper",
                                                                                 str(tmp_path / "ckpt"))
        exec(compile(code, "docs/spark.md", "exec"), {})

    run(produce.replace('"Orders"', '"DocOrders"'))
    assert spark_cluster.wait_dispatched()
    run(pipeline.replace('"Orders"', '"DocOrders"').replace('"OrdersUpper"', '"DocOrdersUpper"'))
    assert "|order 1|created|[o-1]|" in capsys.readouterr().out
    upper = sorted(m.body for m in stored_messages(spark_cluster, "DocOrdersUpper"))
    assert upper == [b"ORDER 0", b"ORDER 1", b"ORDER 2"]
    write = write.replace('"Orders"', '"DocOrders"')  # the Sink section's: without its mode("append") it fails
    with pytest.raises(Exception, match='cannot be written in the "ErrorIfExists" mode'):
        run(write.replace('.mode("append")', ""))
    run(write)
    [written] = [m for m in stored_messages(spark_cluster, "DocOrders") if m.body == b"order 3"]
    assert (written.tags, written.keys, written.properties["channel"]) == ("created", ["o-3"], "web")


def test_the_readme_example_runs_as_written(spark, spark_cluster, capsys):
    """README's Spark block (its other Python blocks: tests/pocketmq/test_pocketmq_readme.py): local_session() gets
    the session that is already running, as Spark's getOrCreate does."""
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    [example] = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "local_session" in b]
    with SyncProducer("readme-spark", spark_cluster.namesrv_addr) as producer:
        for i, tag in enumerate(("created", "paid", "created")):
            producer.send(Message("ReadmeOrders", f"order {i}".encode(), tags=tag))
    assert spark_cluster.wait_dispatched()
    code = example.replace("127.0.0.1:9876", spark_cluster.namesrv_addr).replace('"Orders"', '"ReadmeOrders"')
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.search(r"\|\s*created\|\s*2\|", out) and re.search(r"\|\s*paid\|\s*1\|", out), out


class Connections:
    """The connections the name server and the broker accept from now on (until ``protocols()``), with the wire
    protocol each one's first frame chose: the Spark workers' clients live in other processes, so their
    servers' end is where their protocol can be seen."""

    def __init__(self, cluster) -> None:
        self.servers = (cluster.cluster.namesrv.remoting_server, cluster.cluster.broker.remoting_server)
        self.closed: list = []
        self.recording = True
        self.before = self._open()
        for server in self.servers:
            server.on_channel_close(self._closed)

    def _closed(self, channel) -> None:  # on the cluster's thread
        if self.recording:
            self.closed.append(channel)

    def _open(self) -> set:
        while True:
            try:  # the cluster's thread may open or close one meanwhile
                return {ch for server in self.servers for ch in server.channels}
            except RuntimeError:
                continue

    def protocols(self) -> collections.Counter:
        self.recording = False
        new = (set(self.closed) | self._open()) - self.before
        return collections.Counter(ch.protocol for ch in new)


def test_protocol_rocketmq_reads_and_writes_batches_over_the_native_protocol(spark, spark_cluster):
    """With option("protocol", "rocketmq") the driver (planning) and the tasks (pulls, sends) speak RocketMQ's
    native protocol: every connection the cluster accepts meanwhile is a native one."""
    create_topic(spark_cluster, "NativeIn", 2)
    connections = Connections(spark_cluster)
    sent = send(spark_cluster, "NativeIn", {0: 5, 1: 4}, protocol="rocketmq")
    df = read(spark, spark_cluster, subscribe="NativeIn", protocol="rocketmq")
    rows = df.collect()
    assert sorted((r.queueId, r.queueOffset, r.body, r.msgId) for r in rows) == sorted(
        (s.message_queue.queue_id, s.queue_offset, f"NativeIn-{s.message_queue.queue_id}-{i}".encode(), s.msg_id)
        for s, i in zip(sent, [*range(5), *range(4)], strict=True))

    # Back out through the sink, with tags, keys and properties, and read again.
    df.selectExpr("body", "'copied' AS tags", "array(msgId) AS keys", "map('from', 'spark') AS properties") \
        .write.format("rocketmq").option("endpoints", spark_cluster.namesrv_addr).option("topic", "NativeOut") \
        .option("protocol", "rocketmq").mode("append").save()
    assert spark_cluster.wait_dispatched()
    back = read(spark, spark_cluster, subscribe="NativeOut", protocol="ROCKETMQ").collect()
    assert sorted((bytes(r.body), r.tags, r.keys[0], r.properties["from"]) for r in back) == sorted(
        (r.body, "copied", r.msgId, "spark") for r in rows)
    protocols = connections.protocols()
    # The producer above, the planners' clients and at least one task client per read and write.
    assert protocols[WireProtocol.NATIVE] >= 6 and protocols[WireProtocol.MSGPACK] == 0, protocols

    with pytest.raises(Exception, match="option 'protocol' must be 'msgpack'.* or 'rocketmq'.* got 'native'"):
        read(spark, spark_cluster, subscribe="NativeIn", protocol="native").collect()


def test_protocol_rocketmq_streams_micro_batches_over_the_native_protocol(spark, spark_cluster, tmp_path):
    create_topic(spark_cluster, "NativeStream", 2)
    send(spark_cluster, "NativeStream", {0: 4, 1: 3})  # msgpack in, native out: one stored form for both
    connections = Connections(spark_cluster)
    source = (spark.readStream.format("rocketmq").option("endpoints", spark_cluster.namesrv_addr)
              .option("subscribe", "NativeStream").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "4").option("consumerGroup", "native-dash")
              .option("protocol", "rocketmq").load())
    query = (source.selectExpr("body").writeStream.format("rocketmq")
             .option("endpoints", spark_cluster.namesrv_addr).option("topic", "NativeStreamOut")
             .option("protocol", "rocketmq").option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [4, 3]
    protocols = connections.protocols()
    assert protocols[WireProtocol.NATIVE] >= 4 and protocols[WireProtocol.MSGPACK] == 0, protocols

    bodies = sorted(m.body.decode() for m in stored_messages(spark_cluster, "NativeStreamOut"))
    assert bodies == sorted([f"NativeStream-0-{i}" for i in range(4)] + [f"NativeStream-1-{i}" for i in range(3)])
    # The group mirrors Spark's commits (a batch behind), sent natively too.
    assert sum(group_offsets(spark_cluster, "native-dash", "NativeStream", 2).values()) == 4


SPARK_ACL_YAML = """\
accounts:
  - accessKey: sparkAdmin1
    secretKey: sparkAdminSecret
    admin: true
  - accessKey: sparkUser01
    secretKey: sparkUserSecret9
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


def test_accesskey_and_secretkey_sign_every_client_on_an_acl_cluster(spark, tmp_path, capsys):
    """A second cluster, with access control on: the source and the sink sign with the account they are given, on
    the driver (planning) and in the workers (pulls, sends); without one the broker refuses; the secret stays out of
    the plan Spark prints."""
    from pocketmq.cli import main
    from pocketmq.embedded import ThreadedCluster

    (tmp_path / "plain_acl.yml").write_text(SPARK_ACL_YAML)
    with ThreadedCluster(tmp_path / "acl-cluster", acl_enable=True, acl_file=str(tmp_path / "plain_acl.yml"),
                         access_key="sparkAdmin1", secret_key="sparkAdminSecret") as cluster:
        assert main(["updateTopic", "-n", cluster.namesrv_addr, "-b", cluster.broker_addr, "-t", "AclSpark", "-r",
                     "2", "-w", "2", "--access-key", "sparkAdmin1", "--secret-key", "sparkAdminSecret"]) == 0
        assert cluster.cluster.namesrv is not None
        assert poll_sync(lambda: cluster.cluster.namesrv.route_info_manager.topic_queue_table.get("AclSpark"))
        account = {"accessKey": "sparkUser01", "secretKey": "sparkUserSecret9"}

        df = spark.createDataFrame([(f"signed {i}",) for i in range(10)], "body string")
        writer = df.write.format("rocketmq").option("endpoints", cluster.namesrv_addr).option("topic", "AclSpark")
        with pytest.raises(Exception, match="No accessKey is configured"):
            writer.mode("append").save()
        writer.options(**account).mode("append").save()
        assert cluster.wait_dispatched()

        with pytest.raises(Exception, match="No accessKey is configured"):
            read(spark, cluster, subscribe="AclSpark").count()
        signed = read(spark, cluster, subscribe="AclSpark", **account)
        assert sorted(bytes(r.body).decode() for r in signed.collect()) == [f"signed {i}" for i in range(10)]
        capsys.readouterr()
        signed.explain(True)
        plan = capsys.readouterr().out
        assert "BatchScan rocketmq" in plan and "sparkUserSecret9" not in plan, plan


def poll_sync(cond, timeout: float = 10.0):
    import time

    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            return value
        time.sleep(0.01)
    return value


def test_reads_from_and_writes_to_apache_rocketmq(spark, apache_rocketmq):
    """The source and the sink with option("protocol", "rocketmq") against Apache RocketMQ 4.9.7's own name server
    and broker (the session's, tests/apache/): a batch read of what a producer sent, written back through the sink
    to another topic, and read again."""
    import asyncio
    import uuid

    from pocketmq.client.admin.mq_admin_ext import MQAdminExt
    from pocketmq.remoting.body import TopicConfig

    source, sink = f"SparkIn{uuid.uuid4().hex[:8]}", f"SparkOut{uuid.uuid4().hex[:8]}"
    namesrv = apache_rocketmq.namesrv_addr

    async def create_topics() -> None:
        async with MQAdminExt(namesrv, protocol="rocketmq") as admin:
            for topic in (source, sink):
                await admin.create_topic(TopicConfig(topic, 2, 2), cluster=apache_rocketmq.cluster_name)

    asyncio.run(create_topics())
    with SyncProducer("spark-apache", namesrv, protocol="rocketmq") as producer:
        sent = [producer.send(Message(source, f"apache-{i}".encode(), tags="t", keys=[f"k{i}"]),
                              MessageQueue(source, apache_rocketmq.broker_name, i % 2)) for i in range(6)]

    def load(topic: str):
        return (spark.read.format("rocketmq").option("endpoints", namesrv).option("protocol", "rocketmq")
                .option("subscribe", topic).load())

    rows = load(source).collect()
    assert sorted((r.queueId, r.queueOffset, bytes(r.body), r.msgId, r.tags, list(r.keys)) for r in rows) == sorted(
        (s.message_queue.queue_id, s.queue_offset, f"apache-{i}".encode(), s.msg_id, "t", [f"k{i}"])
        for i, s in enumerate(sent))
    assert {r.storeHost for r in rows} == {apache_rocketmq.broker_addr} and {r.brokerName for r in rows} == {
        apache_rocketmq.broker_name}

    load(source).selectExpr("body", "'copied' AS tags", "array(msgId) AS keys", "map('from', 'spark') AS properties") \
        .write.format("rocketmq").option("endpoints", namesrv).option("topic", sink) \
        .option("protocol", "rocketmq").mode("append").save()
    back = load(sink).collect()
    assert sorted((bytes(r.body), r.tags, r.keys[0], r.properties["from"]) for r in back) == sorted(
        (bytes(r.body), "copied", r.msgId, "spark") for r in rows)


def test_timestamps_against_apache_rocketmq_start_at_the_first_message_stored_then(spark, apache_rocketmq):
    """startingTimestamp / endingTimestamp against Apache RocketMQ 4.9.7, whose SEARCH_OFFSET answers one of a
    batch's messages sharing the time (not the first) and, between two messages, the nearer (here the one before):
    the read still starts at the first message stored at or after the start and ends before the first at or after
    the end, as against pocketmq."""
    import asyncio
    import time
    import uuid

    from pocketmq.client.admin.mq_admin_ext import MQAdminExt
    from pocketmq.remoting.body import TopicConfig

    topic, namesrv = f"SparkTime{uuid.uuid4().hex[:8]}", apache_rocketmq.namesrv_addr

    async def create_topic() -> None:
        async with MQAdminExt(namesrv, protocol="rocketmq") as admin:
            await admin.create_topic(TopicConfig(topic, 1, 1), cluster=apache_rocketmq.cluster_name)

    asyncio.run(create_topic())
    queue = MessageQueue(topic, apache_rocketmq.broker_name, 0)
    with SyncProducer("spark-apache-time", namesrv, protocol="rocketmq") as producer:
        producer.send_batch([Message(topic, f"batch-{i}".encode()) for i in range(6)], queue)
        time.sleep(0.05)
        producer.send(Message(topic, b"after"), queue)
        time.sleep(0.2)
        producer.send(Message(topic, b"later"), queue)
    with SyncPullConsumer("spark-apache-time", namesrv, protocol="rocketmq") as consumer:
        stored = consumer.pull(queue, "*", 0, 32).msg_found_list
        assert [m.body for m in stored] == [*(f"batch-{i}".encode() for i in range(6)), b"after", b"later"]
        batch_time, after_time = stored[0].store_timestamp, stored[6].store_timestamp
        assert {m.store_timestamp for m in stored[:6]} == {batch_time}
        # What Apache answers: a batch message in the middle, and the message before a time nearer to it.
        assert consumer.seek_by_timestamp(queue, batch_time) > 0
        assert consumer.seek_by_timestamp(queue, after_time + 10) == 6

    rows = (spark.read.format("rocketmq").option("endpoints", namesrv).option("protocol", "rocketmq")
            .option("subscribe", topic).option("startingTimestamp", batch_time)
            .option("endingTimestamp", after_time + 10).load().collect())
    assert sorted((r.queueOffset, bytes(r.body)) for r in rows) == [(m.queue_offset, m.body) for m in stored[:7]]
