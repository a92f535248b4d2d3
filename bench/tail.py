"""Where the latency tail comes from (issue 32 item 2): bench/e2e.py's (d) with every message's times kept, beside
what happened in both processes while it was under way.

    python bench/tail.py                        # 1,000 msgs/s for 20 s, msgpack then native
    python bench/tail.py --rate 1000 --seconds 60 --protocol rocketmq

`pocketmq dev` (no console, no gRPC) runs with a probe that records, on the same clock as the client
(CLOCK_MONOTONIC, perf_counter_ns), each garbage collection (start, end, generation) and each flush of a store file
to disk (the flush threads' fdatasync); the client process (a producer paced at --rate with awaited sends, and a
push-style consumer, bench/e2e.py's) records its own collections. For every message slower than --over ms, the
report says which of those overlapped its send-to-receive interval: a collection in the client, one in the broker,
a flush, or none of them (then the event loops, the dispatcher's wake-up or the machine's scheduling are what is
left). Prints the figures, the load average, and one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import bisect
import gc
import json
import os
import runpy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)

from bench.e2e_systems import BODY_BYTES, STAMP, PocketMQ, free_port, server  # noqa: E402

Event = tuple[int, int, str]  # (start ns, end ns, what)


class Probe:
    """Collections (and, in the broker, flushes) with their start and end, kept in memory."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._gc_start = 0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._gc_start = now
        else:
            self.events.append((self._gc_start, now, f"gc{info['generation']}"))

    def watch_flushes(self) -> None:
        from pocketmq.storage import mapped_file

        sync = mapped_file.sync_file

        def timed_sync(path: str) -> None:
            start = time.perf_counter_ns()
            try:
                sync(path)
            finally:
                self.events.append((start, time.perf_counter_ns(), "flush"))

        mapped_file.sync_file = timed_sync


GC_MODES = ("default", "freeze", "relaxed", "freeze+relaxed")


def tune_gc(mode: str) -> None:
    """An experiment's collector settings: ``freeze`` moves what exists now (start-up's objects) out of every
    later collection; ``relaxed`` collects the youngest generation every 20,000 allocations instead of 700."""
    if "relaxed" in mode:
        gc.set_threshold(20_000, 20, 20)
    if "freeze" in mode:
        gc.collect()
        gc.freeze()


def run_probed_broker(out: str, mode: str, argv: list[str]) -> None:
    """`python -m pocketmq <argv>` with the probe; its events written to ``out`` when the broker stops."""
    if mode != "default":  # once the broker has started: its start-up's objects then exist
        import threading

        threading.Timer(0.5, tune_gc, (mode,)).start()
    probe = Probe()
    probe.watch_flushes()
    atexit.register(lambda: Path(out).write_text(json.dumps(probe.events)))
    sys.argv = ["pocketmq", *argv]
    runpy.run_module("pocketmq", run_name="__main__", alter_sys=True)


async def paced(namesrv: str, protocol: str, rate: int, seconds: float) -> list[tuple[int, int, int]]:
    """(sent, send answered, received) perf_counter_ns of each message after the first half second."""
    count, skip = int(rate * seconds), rate // 2
    pad = b"x" * (BODY_BYTES - STAMP.size)
    received: dict[int, int] = {}
    answered: dict[int, int] = {}
    stamps: dict[int, int] = {}
    topic = f"tail-{protocol}-{os.getpid()}"

    def on_body(body: bytes) -> None:
        seq, stamp = STAMP.unpack_from(body)
        if seq >= skip:
            received[seq] = time.perf_counter_ns()

    async with PocketMQ(namesrv, protocol) as system:
        await system.send(topic, STAMP.pack(-1, 0) + pad)
        stop = asyncio.Event()
        consumer = asyncio.create_task(system.receive(topic, on_body, stop))
        await asyncio.sleep(1.0)  # the consumer parked, and a tuned broker's collector set (0.5 s after start)
        begin = time.perf_counter()
        for seq in range(count):
            delay = begin + seq / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            stamps[seq] = time.perf_counter_ns()
            await system.send(topic, STAMP.pack(seq, stamps[seq]) + pad)
            answered[seq] = time.perf_counter_ns()
        deadline = time.monotonic() + 5
        while len(received) < count - skip and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        stop.set()
        async with asyncio.timeout(10):
            await consumer
    return [(stamps[q], answered[q], r) for q, r in sorted(received.items())]


def overlapping(events: list[Event], starts: list[int], start: int, end: int) -> set[str]:
    """The kinds of ``events`` (sorted by start, ``starts`` their starts) that overlap [start, end]."""
    kinds = set()
    for i in range(bisect.bisect_right(starts, end) - 1, -1, -1):
        s, e, kind = events[i]
        if e >= start:
            kinds.add(kind)
        if start - s > 1_000_000_000:  # nothing lasts a second: stop looking back
            break
    return kinds


def segments(times: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Medians of the send's round trip (send to its answer) and of what followed (answer to receipt; negative
    when the message arrived before its send's answer was read)."""
    if not times:
        return {"messages": 0}
    rtt = sorted((a - s) / 1e6 for s, a, _ in times)
    after = sorted((r - a) / 1e6 for _, a, r in times)
    return {"messages": len(times), "send_answer_p50_ms": round(rtt[len(rtt) // 2], 3),
            "answer_to_receipt_p50_ms": round(after[len(after) // 2], 3)}


def attribute(times: list[tuple[int, int, int]], client: list[Event], broker: list[Event], over_ms: float
              ) -> dict[str, Any]:
    lat = sorted((r - s) / 1e6 for s, _, r in times)
    pick = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 3)) if lat else (lambda q: None)
    client, broker = sorted(client), sorted(broker)
    cs, bs = [e[0] for e in client], [e[0] for e in broker]
    during: dict[str, list[int]] = {}  # what overlapped a message -> [messages, of them slower than over_ms]
    for s, _, r in times:
        kinds = {f"client {k}" for k in overlapping(client, cs, s, r) if k.startswith("gc")}
        kinds |= {f"broker {k}" for k in overlapping(broker, bs, s, r)}
        row = during.setdefault(" + ".join(sorted(kinds)) or "none of these", [0, 0])
        row[0] += 1
        row[1] += (r - s) / 1e6 > over_ms
    slow = sum(row[1] for row in during.values())

    def pauses(events: list[Event], kind: str) -> dict[str, Any]:
        d = sorted((e - s) / 1e6 for s, e, k in events if k == kind)
        return {"count": len(d), "p50_ms": round(d[len(d) // 2], 3) if d else None,
                "max_ms": round(d[-1], 3) if d else None}

    return {"received": len(lat), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "p999_ms": pick(0.999),
            "max_ms": round(lat[-1], 3) if lat else None, f"over_{over_ms}_ms": slow, "during": during,
            "segments_all": segments(times),
            "segments_slow": segments([t for t in times if (t[2] - t[0]) / 1e6 > over_ms]),
            "client": {k: pauses(client, k) for k in ("gc0", "gc1", "gc2")},
            "broker": {k: pauses(broker, k) for k in ("gc0", "gc1", "gc2", "flush")}}


def run(protocol: str, rate: int, seconds: float, over_ms: float, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pocketmq-tail-") as tmp:
        root = Path(tmp)
        events_file = root / "broker-events.json"
        namesrv_port, broker_port = free_port(), free_port()
        argv = [sys.executable, __file__, "--probe-broker", str(events_file), mode, "--", "dev", "--no-console",
                "--no-grpc", "--store", str(root / "store"), "--namesrv-port", str(namesrv_port),
                "--broker-port", str(broker_port)]
        probe = Probe()
        with server("pocketmq", argv, root / "pocketmq.log", "stops it cleanly"):
            times = asyncio.run(paced(f"127.0.0.1:{namesrv_port}", protocol, rate, seconds))
        gc.callbacks.remove(probe._on_gc)
        for _ in range(100):
            if events_file.exists():
                break
            time.sleep(0.05)
        broker = [tuple(e) for e in json.loads(events_file.read_text())] if events_file.exists() else []
    return attribute(times, probe.events, broker, over_ms)  # type: ignore[arg-type]


def main() -> int:
    if len(sys.argv) > 3 and sys.argv[1] == "--probe-broker":
        run_probed_broker(sys.argv[2], sys.argv[3], sys.argv[5:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000, help="messages a second (default 1,000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the paced phase (default 20)")
    parser.add_argument("--protocol", choices=("msgpack", "rocketmq"), action="append",
                        help="repeatable (default: both)")
    parser.add_argument("--over", type=float, default=1.0, help="a message slower than this is explained (ms)")
    parser.add_argument("--gc", choices=GC_MODES, default="default",
                        help="collector settings of both processes, an experiment (default: Python's)")
    args = parser.parse_args()
    tune_gc(args.gc)
    before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    protocols = args.protocol or ("msgpack", "rocketmq")
    results = {p: run(p, args.rate, args.seconds, args.over, args.gc) for p in protocols}
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"latency at {args.rate:,} msgs/s for {args.seconds:g} s, collector {args.gc}; "
          f"load average before {before}, after {after}")
    print("target (issue 32 item 2): p99 < 1 ms, p99.9 < 3 ms")
    for protocol, r in results.items():
        print(f"\n{protocol}: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, p99.9 {r['p999_ms']} ms, "
              f"max {r['max_ms']} ms; {r[f'over_{args.over}_ms']:,} of {r['received']:,} over {args.over:g} ms; "
              "messages by what overlapped them:")
        for what, (n, slow) in sorted(r["during"].items(), key=lambda kv: -kv[1][1]):
            print(f"  {slow:>6,} of {n:>6,} ({slow / n:6.1%} slow)  {what}")
        for which in ("all", "slow"):
            seg = r[f"segments_{which}"]
            if seg["messages"]:
                print(f"  {which} messages: send to its answer p50 {seg['send_answer_p50_ms']} ms, answer to receipt "
                      f"p50 {seg['answer_to_receipt_p50_ms']} ms")
        for side in ("client", "broker"):
            print(f"  {side}: " + ", ".join(f"{k} {v['count']} (p50 {v['p50_ms']} ms, max {v['max_ms']} ms)"
                                            for k, v in r[side].items()))
    print(json.dumps({"rate": args.rate, "seconds": args.seconds, "gc": args.gc, "load_before": before,
                      "load_after": after, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
