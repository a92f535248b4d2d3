"""Apache RocketMQ 5's Python SDK (PyPI rocketmq-python-client, gRPC) against pocketmq's gRPC endpoint and against
Apache RocketMQ 5.5.0's proxy, on the same machine, with the same SDK and workload: bench/java_sdk.py's servers
and figures, with the Python SDK in place of the Java one.

    python bench/python_sdk.py            # 5,000 messages of 1 KiB
    python bench/python_sdk.py --quick    # 500

Against each server, one Python process (this file with ``--worker``, the SDK's default settings, so plain text)
runs Bench.java's workload: ``--threads`` threads of blocking ``send`` on one producer, then one SimpleConsumer
receiving batches of 32 and acking each message, all of a batch before the next receive, each phase timed. The
acks are the SDK's blocking ``ack`` on 8 threads: its ``ack_async`` returns None in 5.1.2 (the future it makes is
dropped) and its callback then fails. The SDK does its gRPC calls on its own event-loop thread, so the worker's
threads only wait.

Prints a table, the target (pocketmq at least as fast: every ratio >= 1.0) and, last, one JSON object. Installs
nothing: a missing jar is reported and that server's figures are null.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)
sys.path.insert(1, str(_BENCH))

import java_sdk  # noqa: E402

from tests.apache.apache_rocketmq import ApacheRocketMQUnavailable  # noqa: E402
from tests.java_sdk import java_sdk as js  # noqa: E402

SDK = "rocketmq-python-client"


def worker(endpoint: str, topic: str, group: str, count: int, threads: int, size: int) -> dict[str, Any]:
    """Bench.java's workload with the Python SDK, in this process."""
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

    config = ClientConfiguration(endpoint, Credentials(), request_timeout=10)
    producer = Producer(config, (topic,))
    producer.startup()
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=5)
    consumer.startup()
    body = b"x" * size

    def message() -> Message:
        m = Message()
        m.topic, m.body = topic, body
        return m

    try:
        producer.send(message())  # before the clock starts: the route and the channel are made
        latencies = [0.0] * count
        counter = iter(range(count))
        lock = threading.Lock()

        def sender() -> None:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                t0 = time.perf_counter()
                producer.send(message())
                latencies[i] = time.perf_counter() - t0

        start = time.perf_counter()
        pool = [threading.Thread(target=sender) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        send_seconds = time.perf_counter() - start
        latencies.sort()
        received, start = 0, time.perf_counter()
        deadline = time.monotonic() + 300
        with ThreadPoolExecutor(8) as acks:
            while received < count + 1 and time.monotonic() < deadline:
                views = consumer.receive(32, 30)
                list(acks.map(consumer.ack, views))
                received += len(views)
        receive_seconds = time.perf_counter() - start
    finally:
        consumer.shutdown()
        producer.shutdown()
    return {"sent": count, "send_seconds": send_seconds, "send_per_s": count / send_seconds,
            "send_p50_ms": latencies[count // 2] * 1e3,
            "send_p99_ms": latencies[min(count - 1, count * 99 // 100)] * 1e3,
            "received": received, "receive_seconds": receive_seconds, "receive_per_s": received / receive_seconds}


def sdk_bench(endpoint: str, namesrv: str, broker: str, count: int, threads: int) -> dict[str, Any]:
    """One worker process against ``endpoint``; its topic and group made first through the broker."""
    run_id = f"bench{uuid.uuid4().hex[:6]}"
    asyncio.run(js.prepare(namesrv, broker, run_id, {"bench": js.Needs("NORMAL", (js.Group("g"),))}))
    topic = js.topic(run_id, "bench")
    argv = [sys.executable, __file__, "--worker", "--endpoint", endpoint, "--topic", topic,
            "--group", js.group(run_id, "bench", "g"), "--messages", str(count), "--threads", str(threads)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the Python SDK worker exited with {proc.returncode}: {proc.stderr[:3000]}")
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="500 messages")
    parser.add_argument("--messages", type=int, help="messages sent and received (default 5,000)")
    parser.add_argument("--threads", type=int, default=4, help="sending threads (default 4)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    java_sdk.add_server_options(parser)
    args = parser.parse_args()
    count = args.messages or (500 if args.quick else 5_000)
    if args.worker:
        print(json.dumps(worker(args.endpoint, args.topic, args.group, count, args.threads, 1024)), flush=True)
        return 0
    results: dict[str, dict[str, Any] | None] = {}
    notes: dict[str, str] = {}
    before = java_sdk.load_average()
    with tempfile.TemporaryDirectory(prefix="pocketmq-python-sdk-") as tmp:
        for name, bench in java_sdk.servers(args):
            try:
                results[name] = bench(Path(tmp) / name, count, args.threads, sdk_bench)
            except (ApacheRocketMQUnavailable, RuntimeError, OSError, subprocess.SubprocessError) as e:
                results[name] = None
                notes[name] = f"{type(e).__name__}: {e}"[:500]
                print(f"{name}: {notes[name]}", file=sys.stderr)
    java_sdk.report(f"Python SDK {SDK} (gRPC)", results, notes, count, args.threads, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
