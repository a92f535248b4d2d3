"""What Spark tasks run, run here without a JVM against a real cluster: reading a queue range (and data loss),
writing rows (and the idempotent replay check), and PySpark's own discovery of the data source."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from pyspark.serializers import read_int
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, MapType, StringType, StructField, StructType
from spark_admin import create_topic, delete_topic, stored_messages

from pocketmq.client import Message, MessageQueue, MQClientException, SyncProducer
from pyspark_pocketmq import RocketMQDataSource
from pyspark_pocketmq.options import parse_sink_options, parse_source_options
from pyspark_pocketmq.planning import DataLossError
from pyspark_pocketmq.reader import ROWS_PER_BATCH, QueueRange, read_range
from pyspark_pocketmq.schema import SCHEMA
from pyspark_pocketmq.writer import SinkColumns, write_rows

SINK_SCHEMA = StructType([
    StructField("body", BinaryType()), StructField("topic", StringType()), StructField("tags", StringType()),
    StructField("keys", ArrayType(StringType())), StructField("properties", MapType(StringType(), StringType())),
    StructField("queueId", IntegerType()),
])


def source(cluster, **kw: str):
    return parse_source_options({"endpoints": cluster.namesrv_addr, "subscribe": "T", **kw}, streaming=False)


def read_rows(opts, part: QueueRange) -> list[dict[str, Any]]:
    return [row for batch in read_range(opts, SCHEMA, part) for row in batch.to_pylist()]


def test_read_range_gives_the_range_with_every_field(pocketmq_cluster):
    mq = MessageQueue("T", "broker-a", 1)
    with SyncProducer("p", pocketmq_cluster.namesrv_addr) as producer:
        sent = [producer.send(Message("T", f"m{i}".encode(), tags="even" if i % 2 == 0 else "odd",
                                      keys=[f"k{i}", "all"], properties={"n": str(i)}), mq) for i in range(70)]
    assert pocketmq_cluster.wait_dispatched()

    rows = read_rows(source(pocketmq_cluster), QueueRange("T", "broker-a", 1, 5, 65))
    assert [r["queueOffset"] for r in rows] == list(range(5, 65))  # more than one pull (32 a pull)
    first = rows[0]
    assert (first["topic"], first["brokerName"], first["queueId"], first["body"]) == ("T", "broker-a", 1, b"m5")
    assert (first["tags"], first["keys"], first["msgId"]) == ("odd", ["k5", "all"], sent[5].msg_id)
    props = dict(first["properties"])
    assert props["n"] == "5" and "TAGS" not in props and "KEYS" not in props and "MIN_OFFSET" not in props
    assert first["storeTimestamp"] >= first["bornTimestamp"]
    assert first["storeHost"] == pocketmq_cluster.broker_addr

    evens = read_rows(source(pocketmq_cluster, subExpression="even"), QueueRange("T", "broker-a", 1, 5, 65))
    assert [r["queueOffset"] for r in evens] == list(range(6, 65, 2))


def test_read_range_of_deleted_data_is_data_loss(pocketmq_cluster):
    with SyncProducer("p", pocketmq_cluster.namesrv_addr) as producer:
        for _ in range(10):
            producer.send(Message("T", b"x"), MessageQueue("T", "broker-a", 0))
    assert pocketmq_cluster.wait_dispatched()
    delete_topic(pocketmq_cluster, "T")
    create_topic(pocketmq_cluster, "T", 4)  # back, empty: offsets 0..9 are gone for good
    part = QueueRange("T", "broker-a", 0, 2, 10)

    with pytest.raises(DataLossError, match=r"T/broker-a/0: offsets 2\.\.9 are gone.*failOnDataLoss"):
        read_rows(source(pocketmq_cluster), part)
    assert read_rows(source(pocketmq_cluster, failOnDataLoss="false"), part) == []


def test_a_read_stopped_early_closes_its_connection(pocketmq_cluster):
    """Spark stops taking a task's batches early (a limit, a cancelled job): the generator is closed, and the
    task's client, with the pull it already sent ahead, must go with it."""
    server = pocketmq_cluster.cluster.broker.remoting_server
    mq = MessageQueue("T", "broker-a", 0)
    with SyncProducer("p", pocketmq_cluster.namesrv_addr) as producer:
        for i in range(0, ROWS_PER_BATCH + 500, 250):
            producer.send_batch([Message("T", f"m{j}".encode()) for j in range(i, i + 250)], mq)
    assert pocketmq_cluster.wait_dispatched()
    # The broker's loop notices the producer's connection closing a moment after the producer is gone: counted
    # before that, it would leave the count between the two checks below.
    deadline = time.monotonic() + 5
    while server.channels and time.monotonic() < deadline:
        time.sleep(0.01)
    before = len(server.channels)
    assert before == 0

    batches = read_range(source(pocketmq_cluster), SCHEMA, QueueRange("T", "broker-a", 0, 0, ROWS_PER_BATCH + 500))
    first = next(batches)
    assert first.num_rows == ROWS_PER_BATCH and first.column("body")[0].as_py() == b"m0"
    assert len(server.channels) == before + 1
    batches.close()
    deadline = time.monotonic() + 5
    while len(server.channels) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.channels) == before


def sink_rows(n: int, topic: str | None = "Out", start: int = 0) -> list[tuple]:
    return [(f"r{i}".encode(), topic, "t", [f"k{i}"], {"i": str(i)}, None) for i in range(start, start + n)]


def test_idempotent_write_skips_what_an_earlier_attempt_stored(pocketmq_cluster):
    ns = pocketmq_cluster.namesrv_addr
    cols = SinkColumns.of(SINK_SCHEMA, parse_sink_options({"endpoints": ns}))
    rows = sink_rows(50)

    # An earlier attempt stored 23 rows, in batches of 4, then failed.
    early = parse_sink_options({"endpoints": ns, "idempotent": "true", "sendBatchSize": "4"})
    assert write_rows(early, cols, rows[:23], 0, "q:7:0").sent == 23
    assert pocketmq_cluster.wait_dispatched()
    # The retry cuts its batches elsewhere (10 a batch); the boundary falls inside its third batch.
    retry = parse_sink_options({"endpoints": ns, "idempotent": "true", "sendBatchSize": "10"})
    summary = write_rows(retry, cols, rows, 0, "q:7:0")
    assert (summary.sent, summary.skipped) == (27, 23)
    assert pocketmq_cluster.wait_dispatched()
    # A replay of the whole, completed task sends nothing.
    assert write_rows(retry, cols, rows, 0, "q:7:0").sent == 0

    stored = stored_messages(pocketmq_cluster, "Out")
    assert sorted(m.body for m in stored) == sorted(r[0] for r in rows)  # each row once
    m = next(m for m in stored if m.body == b"r3")
    assert m.keys == ["k3", "q:7:0:3"] and m.tags == "t" and m.properties["i"] == "3"


def test_at_least_once_write_repeats_rows_on_replay(pocketmq_cluster):
    ns = pocketmq_cluster.namesrv_addr
    opts = parse_sink_options({"endpoints": ns, "sendBatchSize": "8"})
    cols = SinkColumns.of(SINK_SCHEMA, opts)
    rows = sink_rows(30)
    assert write_rows(opts, cols, rows, 0).sent == 30
    assert write_rows(opts, cols, rows[:10], 0).sent == 10
    assert pocketmq_cluster.wait_dispatched()
    assert len(stored_messages(pocketmq_cluster, "Out")) == 40  # the default guarantee: duplicates possible


def test_rows_go_to_the_queue_the_queue_id_column_names(pocketmq_cluster):
    ns = pocketmq_cluster.namesrv_addr
    opts = parse_sink_options({"endpoints": ns, "topic": "Pinned"})  # the option wins over the column
    cols = SinkColumns.of(SINK_SCHEMA, opts)
    rows = [(b"a", "Other", None, None, None, 2), (b"b", None, None, "x y", None, 2), (b"c", None, None, None, None, 3)]
    write_rows(opts, cols, rows, 0)
    assert pocketmq_cluster.wait_dispatched()
    assert sorted((m.queue_id, m.body, tuple(m.keys)) for m in stored_messages(pocketmq_cluster, "Pinned")) == [
        (2, b"a", ()), (2, b"b", ("x", "y")), (3, b"c", ())]
    with pytest.raises(ValueError, match="no queue 9"):
        write_rows(opts, cols, [(b"d", None, None, None, None, 9)], 0)


def test_batches_count_properties_and_keys_not_only_bodies(pocketmq_cluster):
    """256 rows of tiny bodies but 20 KB of properties each: fine alone, over the producer's 4 MiB as one batch."""
    opts = parse_sink_options({"endpoints": pocketmq_cluster.namesrv_addr, "topic": "Big"})
    cols = SinkColumns.of(SINK_SCHEMA, opts)
    rows = [(f"b{i}".encode(), None, None, ["k" * 5_000], {"note": "p" * 20_000}, None) for i in range(256)]
    assert write_rows(opts, cols, rows, 0).sent == 256
    assert pocketmq_cluster.wait_dispatched()
    assert len(stored_messages(pocketmq_cluster, "Big")) == 256


@pytest.mark.parametrize("idempotent", ["false", "true"])
def test_a_body_a_plain_send_takes_is_written_though_a_batch_could_not_carry_it(pocketmq_cluster, idempotent):
    """The producer checks a batch's whole encoding against maxMessageSize (4 MiB): the framing and properties
    of a batch of one would refuse a body of exactly 4 MiB, which a plain send takes."""
    opts = parse_sink_options({"endpoints": pocketmq_cluster.namesrv_addr, "topic": "Big", "idempotent": idempotent})
    cols = SinkColumns.of(SINK_SCHEMA, opts)
    big = b"x" * (4 * 1024 * 1024)
    rows = [(b"before", None, None, None, None, None), (big, None, None, None, None, None),
            (b"after", None, None, None, None, None)]
    assert write_rows(opts, cols, rows, 0, "w:0" if idempotent == "true" else None).sent == 3
    assert pocketmq_cluster.wait_dispatched()
    assert sorted(len(m.body) for m in stored_messages(pocketmq_cluster, "Big")) == [5, 6, len(big)]
    with pytest.raises(MQClientException, match="body size over max value"):  # one byte more: too big for any send
        write_rows(opts, cols, [(big + b"x", None, None, None, None, None)], 0)


@pytest.mark.parametrize(("fields", "message"), [
    ([StructField("value", BinaryType())], "'body' column"),
    ([StructField("body", IntegerType())], "'body' must be binary or string"),
    ([StructField("body", StringType()), StructField("keys", ArrayType(IntegerType()))], "'keys' must be"),
    ([StructField("body", StringType())], "option 'topic'"),
])
def test_sink_columns_are_checked_when_the_write_is_planned(fields, message):
    with pytest.raises(ValueError, match=message):
        SinkColumns.of(StructType(fields), parse_sink_options({"endpoints": "127.0.0.1:1"}))


def test_pyspark_discovers_the_source_by_its_module_name():
    """PySpark's own lookup (what runs when a session first resolves a data source name): every top-level
    pyspark_* module with a DefaultSource is registered under DefaultSource.name()."""
    from pyspark.serializers import UTF8Deserializer
    from pyspark.sql.worker.lookup_data_sources import _main
    from pyspark.worker_util import pickleSer

    out = io.BytesIO()
    _main(io.BytesIO(), out)
    out.seek(0)
    found = {}
    for _ in range(read_int(out)):
        name = UTF8Deserializer().loads(out)
        found[name] = pickleSer._read_with_length(out)
    assert found["rocketmq"] is RocketMQDataSource
