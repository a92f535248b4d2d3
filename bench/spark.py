"""Spark benchmark: rows/s of the rocketmq data source against a plain-Python pull loop, same data, same run.

    python bench/spark.py            # 1,000,000 messages of 128 B, ~4 min
    python bench/spark.py --quick    # 100,000 messages, < 1 min

A pocketmq broker and name server run as their own process (`pocketmq dev`, 127.0.0.1, free ports, a temp
store), so neither reader shares an interpreter with them. The run:

  produce      the messages, into the 4 queues of one topic (batches of 256, 4 in flight)
  pull loop    one Python process pulls every queue from 0 to its end, 32 a pull (the broker's maximum),
               messages decoded: the single-process baseline
  spark count  spark.read.format("rocketmq")...load().count() in a local[2] session
  spark group  the same read, .groupBy("queueId").count()
  spark write  spark.range(N) as 128 B bodies, .write.format("rocketmq") into another topic

Spark runs are timed after a warm-up read (the first action starts Spark's Python workers). The three reads
take turns, ``--repeat`` rounds (2), and the best of each counts. ``others_cpu_share`` is the largest share
of the machine's CPU that other processes used during a timed section. Prints a table and, as the last
line, one JSON object with every figure. Target: spark count >= pull loop (ratio >= 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# `python bench/spark.py` puts bench/ first on sys.path, where bench/storage.py would shadow the `storage`
# package; the repository root takes its place.
_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)

from bench.e2e import free_port, server  # noqa: E402
from bench.storage import busy_cpu_s  # noqa: E402
from pocketmq.client import Message, SyncProducer, SyncPullConsumer  # noqa: E402

TOPIC, OUT, WARMUP = "SparkBench", "SparkBenchOut", "SparkBenchWarmup"
BODY = b"x" * 128
BATCH = 256


def produce(namesrv: str, topic: str, n: int) -> float:
    with SyncProducer("bench-producer", namesrv) as producer:
        queues = producer.fetch_publish_message_queues(topic)
        start = time.perf_counter()
        in_flight = []
        for i in range(0, n, BATCH):
            msgs = [Message(topic, BODY) for _ in range(min(BATCH, n - i))]
            in_flight.append(producer.send_batch_async(msgs, queues[(i // BATCH) % len(queues)]))
            if len(in_flight) >= 4:
                in_flight.pop(0).result()
        for f in in_flight:
            f.result()
        return time.perf_counter() - start


def pull_loop(namesrv: str, topic: str) -> int:
    with SyncPullConsumer("bench-pull-loop", namesrv) as consumer:
        count = 0
        for mq in consumer.fetch_subscribe_message_queues(topic):
            offset, end = 0, consumer.max_offset(mq)
            while offset < end:
                result = consumer.pull(mq, "*", offset, 32)
                count += len(result.msg_found_list)
                offset = result.next_begin_offset
        return count


def total_messages(namesrv: str, topic: str) -> int:
    with SyncPullConsumer("bench-check", namesrv) as consumer:
        return sum(consumer.max_offset(mq) for mq in consumer.fetch_subscribe_message_queues(topic))


def tree_cpu_s() -> float:
    """CPU seconds of this process and its live descendants (broker, JVM, Spark's Python workers)."""
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])
        cpu[int(pid)] = (int(fields[11]) + int(fields[12])) / tick
    ours, me = 0.0, os.getpid()
    for pid in cpu:
        p = pid
        while p > 1 and p != me:
            p = parent.get(p, 0)
        if p == me:
            ours += cpu[pid]
    return ours


class Timer:
    """Wall time of a section, and the share of the machine's CPU other processes used meanwhile."""

    def __init__(self) -> None:
        self.others: list[float] = []

    def __call__(self, action):
        wall, busy, ours = time.perf_counter(), busy_cpu_s(), tree_cpu_s()
        result = action()
        wall = time.perf_counter() - wall
        others = max(0.0, busy_cpu_s() - busy - (tree_cpu_s() - ours))
        self.others.append(others / (wall * (os.cpu_count() or 1)))
        return result, wall


def source(spark, ns: str, topic: str):
    return spark.read.format("rocketmq").option("endpoints", ns).option("subscribe", topic).load()


def measure_reads(spark, ns: str, n: int, repeat: int, timed: Timer) -> dict[str, list[float]]:
    """Rows a second of each way of reading the topic, every round."""
    # The reads take turns, so a burst of load from elsewhere does not fall on one of them only.
    rates: dict[str, list[float]] = {"pull_loop": [], "spark_count": [], "spark_group_by": []}
    for _ in range(repeat):
        count, seconds = timed(lambda: pull_loop(ns, TOPIC))
        assert count == n, (count, n)
        rates["pull_loop"].append(n / seconds)
        count, seconds = timed(lambda: source(spark, ns, TOPIC).count())
        assert count == n, (count, n)
        rates["spark_count"].append(n / seconds)
        groups, seconds = timed(lambda: source(spark, ns, TOPIC).groupBy("queueId").count().collect())
        assert sum(r["count"] for r in groups) == n
        rates["spark_group_by"].append(n / seconds)
    return rates


def report(figures: dict[str, float | int | None], n: int, repeat: int) -> None:
    print(f"\nSpark data source, {n:,} messages of {len(BODY)} B, local[2] on {os.cpu_count()} cores, "
          f"best of {repeat}")
    print(f"  {'produce (SyncProducer, batches of 256)':42} {figures['produce_msgs_per_s']:>10,} msgs/s")
    print(f"  {'pull loop (one process, 32 a pull)':42} {figures['pull_loop_rows_per_s']:>10,} rows/s")
    print(f"  {'spark read .count()':42} {figures['spark_count_rows_per_s']:>10,} rows/s")
    print(f"  {'spark read .groupBy(queueId).count()':42} {figures['spark_group_by_rows_per_s']:>10,} rows/s")
    print(f"  {'spark write (2 tasks)':42} {figures['spark_write_rows_per_s']:>10,} rows/s")
    print(f"  spark count / pull loop: {figures['spark_count_vs_pull_loop']} (target >= 1); session start "
          f"{figures['spark_session_start_s']} s, first action {figures['spark_first_action_s']} s")
    print(f"  others' CPU share, worst section: {figures['others_cpu_share']:.0%} (above ~15 % the figures are noisy)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 messages")
    parser.add_argument("--count", type=int, help="messages (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the reads; the best of each counts")
    args = parser.parse_args()
    n = args.count or (100_000 if args.quick else 1_000_000)
    try:
        from pyspark.sql import functions as F

        from pyspark_pocketmq import local_session
    except ImportError as e:
        print(f"bench/spark.py: skipped, the spark extra is not installed ({e})")
        print(json.dumps({"skipped": True}))
        return 0

    timed = Timer()
    figures: dict[str, float | int | None] = {"messages": n, "body_bytes": len(BODY)}
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        namesrv_port, broker_port = free_port(), free_port()
        argv = [sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", os.path.join(tmp, "store"),
                "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port)]
        with server("pocketmq", argv, Path(tmp) / "pocketmq.log", "stops it cleanly"):
            ns = f"127.0.0.1:{namesrv_port}"
            figures["produce_msgs_per_s"] = round(n / produce(ns, TOPIC, n))
            produce(ns, WARMUP, 1000)

            spark, seconds = timed(lambda: local_session("bench-spark"))
            figures["spark_session_start_s"] = round(seconds, 1)

            _, seconds = timed(lambda: source(spark, ns, WARMUP).count())
            figures["spark_first_action_s"] = round(seconds, 1)
            for name, values in measure_reads(spark, ns, n, args.repeat, timed).items():
                figures[f"{name}_rows_per_s"] = round(max(values))

            rows = spark.range(n, numPartitions=2).select(F.lit(BODY).alias("body"))
            _, seconds = timed(lambda: rows.write.format("rocketmq").option("endpoints", ns)
                               .option("topic", OUT).mode("append").save())
            assert total_messages(ns, OUT) == n
            figures["spark_write_rows_per_s"] = round(n / seconds)
            spark.stop()

    figures["spark_count_vs_pull_loop"] = round(figures["spark_count_rows_per_s"] / figures["pull_loop_rows_per_s"], 2)
    figures["others_cpu_share"] = round(max(timed.others), 3)
    report(figures, n, args.repeat)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
