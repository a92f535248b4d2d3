"""Order events -> Spark Structured Streaming -> per-minute aggregates -> another topic.

    python examples/spark_pipeline.py                          # starts its own cluster in a temp folder
    python examples/spark_pipeline.py --namesrv 127.0.0.1:9876   # against a running one (`make run`)

1. A producer sends order events to the topic ``Orders``: JSON bodies {"order_id", "amount", "ts"}, the order
   id as the message key.
2. Spark streams ``Orders`` (trigger availableNow: everything there now, then stop), counts orders and sums
   revenue per minute of event time, and writes each minute's figures as a JSON message to
   ``OrderStatsPerMinute`` (key: the minute), idempotently. Python sinks take the append and complete output
   modes, not update: in complete mode every trigger writes the whole table of minutes again.
3. A batch read of ``OrderStatsPerMinute`` shows the result: the last message of a minute is its current
   value.

Needs the spark extra (``pip install -e '.[spark]'``) and Java 17 or 21 on the PATH.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
from decimal import Decimal

from pocketmq.client import Message, SyncProducer

SOURCE = "Orders"
TARGET = "OrderStatsPerMinute"
START = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)


def order_events(count: int, first: int = 0) -> list[dict]:
    """Orders every 7 seconds from 10:00 UTC, amounts between 5.00 and 54.50."""
    return [
        {"order_id": f"o-{i}", "amount": str(Decimal(500 + (i * 37) % 5000) / 100),
         "ts": (START + dt.timedelta(seconds=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        for i in range(first, first + count)
    ]


def produce(namesrv: str, events: list[dict], topic: str = SOURCE) -> None:
    with SyncProducer("order-service", namesrv) as producer:
        for e in events:
            producer.send(Message(topic, json.dumps(e).encode(), tags="order", keys=e["order_id"]))


def start_aggregation(spark, namesrv: str, checkpoint: str, source: str = SOURCE, target: str = TARGET):
    """The streaming query: per-minute order count and revenue, one message per minute and trigger."""
    from pyspark.sql import functions as F

    orders = (spark.readStream.format("rocketmq").option("endpoints", namesrv).option("subscribe", source)
              .option("startingOffsets", "earliest").load()
              .select(F.from_json(F.col("body").cast("string"),
                                  "order_id string, amount decimal(10,2), ts timestamp").alias("o"))
              .select("o.*"))
    per_minute = (orders.groupBy(F.window("ts", "1 minute").alias("w"))
                  .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
                  .select(F.date_format("w.start", "yyyy-MM-dd HH:mm").alias("minute"), "orders", "revenue"))
    messages = per_minute.select(
        F.to_json(F.struct("minute", "orders", "revenue")).alias("body"),
        F.array("minute").alias("keys"),
        F.lit("minute-stats").alias("tags"),
    )
    return (messages.writeStream.format("rocketmq").option("endpoints", namesrv).option("topic", target)
            .option("idempotent", "true").option("checkpointLocation", checkpoint)
            .outputMode("complete").trigger(availableNow=True).start())


def current_stats(spark, namesrv: str, target: str = TARGET) -> dict[str, dict]:
    """The latest message of each minute in the target topic, by minute."""
    rows = (spark.read.format("rocketmq").option("endpoints", namesrv).option("subscribe", target).load()
            .orderBy("storeTimestamp", "queueId", "queueOffset").collect())
    latest = {}
    for r in rows:
        stats = json.loads(r.body, parse_float=Decimal)
        latest[stats["minute"]] = stats
    return dict(sorted(latest.items()))


def expected_stats(events: list[dict]) -> dict[str, dict]:
    """The same figures computed in plain Python (what the test compares against)."""
    out: dict[str, dict] = {}
    for e in events:
        minute = e["ts"][:16].replace("T", " ")
        s = out.setdefault(minute, {"minute": minute, "orders": 0, "revenue": Decimal(0)})
        s["orders"] += 1
        s["revenue"] += Decimal(e["amount"])
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", help="name server address; default: start a cluster in a temp folder")
    parser.add_argument("--orders", type=int, default=60, help="order events to produce (default 60)")
    args = parser.parse_args(argv)
    if shutil.which("java") is None:
        print("spark_pipeline: Spark needs Java 17 or 21 (apt-get install -y openjdk-17-jdk-headless)",
              file=sys.stderr)
        return 1

    from pyspark_pocketmq import local_session

    work = tempfile.mkdtemp(prefix="spark-pipeline-")
    cluster = None
    namesrv = args.namesrv
    if namesrv is None:
        from pocketmq.embedded import ThreadedCluster

        cluster = ThreadedCluster(work).start()
        namesrv = cluster.namesrv_addr
        print(f"started a cluster: name server {namesrv}, store in {work}")
    try:
        events = order_events(args.orders)
        produce(namesrv, events)
        print(f"produced {len(events)} order events to {SOURCE}")
        spark = local_session("spark-pipeline")
        query = start_aggregation(spark, namesrv, f"{work}/checkpoint")
        query.awaitTermination()
        print(f"streamed them through Spark into {TARGET}:")
        for stats in current_stats(spark, namesrv).values():
            print(f"  {stats['minute']}  {stats['orders']:3d} orders  revenue {stats['revenue']:>8}")
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)  # the checkpoint, with --namesrv too
    return 0


if __name__ == "__main__":
    sys.exit(main())
