#!/usr/bin/env python3
"""Where a Java SDK receive cycle's time goes: java_sdk.py's workload (Bench.java, `make java-sdk`) against a
cluster in this process (pocketmq.embedded, the gRPC endpoint in local or cluster mode), with the endpoint's
POP and ACK requests to the broker timed where it sends them (ConsumerProcessor.pop_message / ack_message,
wrapped here).

    python bench/java_sdk_hops.py local cluster local cluster   # one run per mode named, 3,000 messages each

Per run: the receive rate, the number of POPs and messages per POP, the POP's and the ACK's time from the endpoint
to the broker and back (p50, p99, max), and the gap between one POP's answer and the next POP: the SDK's side of
the cycle (the stream to the SDK, its 32 AckMessage calls, the next ReceiveMessage).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(_BENCH.parent))
sys.path.insert(1, str(_BENCH))

import java_sdk  # noqa: E402

import pocketmq.proxy.consumer_processor as consumer_processor  # noqa: E402
from pocketmq.embedded import ThreadedCluster  # noqa: E402

POPS: list[tuple[float, float, int]] = []  # (start, seconds, messages)
ACKS: list[float] = []


def instrument() -> None:
    cls = consumer_processor.ConsumerProcessor
    pop, ack = cls.pop_message, cls.ack_message

    async def timed_pop(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = await pop(self, *args, **kwargs)
        POPS.append((start, time.perf_counter() - start, len(result.msg_found_list or ())))
        return result

    async def timed_ack(self: Any, *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            await ack(self, *args, **kwargs)
        finally:
            ACKS.append(time.perf_counter() - start)

    cls.pop_message = timed_pop  # type: ignore[method-assign]
    cls.ack_message = timed_ack  # type: ignore[method-assign]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def run(mode: str, count: int) -> None:
    POPS.clear()
    ACKS.clear()
    with (tempfile.TemporaryDirectory(prefix="pmq-hops-") as root,
          ThreadedCluster(root, grpc=True, proxy_overrides={"proxy_mode": mode}) as cluster):
        result = java_sdk.sdk_bench(cluster.grpc_endpoint, cluster.namesrv_addr, cluster.broker_addr, count, 4)
    pops = [p[1] * 1e3 for p in POPS]
    acks = [a * 1e3 for a in ACKS]
    gaps = [(POPS[i + 1][0] - POPS[i][0] - POPS[i][1]) * 1e3 for i in range(len(POPS) - 1)]
    print(f"{mode:<8} load {java_sdk.load_average()}: receive+ack {result['receive_per_s']:.0f} msgs/s, "
          f"{len(POPS)} POPs of {statistics.mean(p[2] for p in POPS):.1f}; POP ms p50 {pct(pops, .5):.2f} "
          f"p99 {pct(pops, .99):.1f} max {max(pops):.1f}; ACK ms p50 {pct(acks, .5):.2f} p99 {pct(acks, .99):.1f} "
          f"max {max(acks):.1f}; gap between POPs ms p50 {pct(gaps, .5):.1f} max {max(gaps):.1f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modes", nargs="+", choices=["local", "cluster"])
    parser.add_argument("--messages", type=int, default=3_000)
    args = parser.parse_args()
    instrument()
    for mode in args.modes:
        run(mode, args.messages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
