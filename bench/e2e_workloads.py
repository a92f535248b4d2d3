"""bench/e2e.py's workloads, (a) to (f) of its docstring, on any ``System`` of bench/e2e_systems.py."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.e2e_systems import BATCH, BODY_BYTES, LATENCY_RATE, STAMP, WARMUP, System

# --- workloads --------------------------------------------------------------------------------------------


@dataclass
class Calls:
    """Awaited calls of one workload: rate in messages per second, RT per call."""

    messages: int = 0
    failed: int = 0
    seconds: float = 0.0
    rt_ns: list[int] = field(default_factory=list)

    def figures(self, rate_key: str) -> dict[str, float | int]:
        rt = self.rt_ns or [0]
        return {
            rate_key: round(self.messages / self.seconds) if self.seconds else 0,
            "max_rt_ms": round(max(rt) / 1e6, 3),
            "avg_rt_ms": round(statistics.fmean(rt) / 1e6, 3),
            "failed": self.failed,
        }


async def timed(calls: int, per_call: int, call: Callable[[], Awaitable[Any]]) -> Calls:
    out = Calls()
    clock = time.perf_counter_ns
    begin = clock()
    for _ in range(calls):
        start = clock()
        try:
            n = await call()
        except Exception:
            out.failed += per_call
        else:
            out.messages += per_call if n is None else n
        out.rt_ns.append(clock() - start)
    out.seconds = (clock() - begin) / 1e9
    return out


async def consume_all(system: System, expected: int, timeout: float) -> Calls:
    out = Calls()
    clock = time.perf_counter_ns
    begin = clock()
    deadline = time.monotonic() + timeout
    while out.messages < expected and time.monotonic() < deadline:
        start = clock()
        try:
            out.messages += await system.fetch()
        except Exception:
            out.failed += 1  # failed fetches, not messages: nothing tells how many a failed fetch held
        out.rt_ns.append(clock() - start)
    await system.settle()
    out.seconds = (clock() - begin) / 1e9
    return out


# Upper bounds of the latency histogram's buckets, in ms (the last takes the rest): where the tail starts.
HISTOGRAM_MS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, float("inf"))


def bucket_name(bound: float) -> str:
    return "hist_rest" if bound == float("inf") else f"hist_le_{bound:g}ms"


def histogram(ms: list[float]) -> dict[str, int]:
    """How many of the sorted latencies ``ms`` fall in each bucket of HISTOGRAM_MS."""
    out: dict[str, int] = {}
    below = 0
    for bound in HISTOGRAM_MS:
        upto = bisect.bisect_right(ms, bound)
        out[bucket_name(bound)] = upto - below
        below = upto
    return out


async def latency(system: System, topic: str, seconds: float, body: bytes, rate: int = LATENCY_RATE
                  ) -> dict[str, float | int | None]:
    """Pace sends at ``rate`` a second for ``seconds``; send -> receive per message, in this one process."""
    count = int(seconds * rate)
    skip = rate // 2  # the first half second warms up and is not counted
    pad = body[STAMP.size:]
    received: list[int] = []
    clock = time.perf_counter_ns

    def on_body(b: bytes) -> None:
        seq, stamp = STAMP.unpack_from(b)
        if seq >= skip:
            received.append(clock() - stamp)

    await system.send(topic, STAMP.pack(-1, 0) + pad)  # creates the topic / stream before the consumer
    stop = asyncio.Event()
    consumer = asyncio.create_task(system.receive(topic, on_body, stop))
    await asyncio.sleep(0.5)  # the consumer is subscribed / parked
    if consumer.done():
        consumer.result()  # it failed: raise why
    failed = 0
    begin = time.perf_counter()
    for seq in range(count):
        # An absolute schedule: a late send does not push the later ones back (libuv timers are 1 ms). Each
        # send is awaited, one producer's sync sends, so a rate above one round trip's is not reached.
        delay = begin + seq / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            await system.send(topic, STAMP.pack(seq, clock()) + pad)
        except Exception:
            failed += 1
    sent_rate = count / (time.perf_counter() - begin)
    wait_until = time.monotonic() + 5
    while len(received) < count - skip - failed and time.monotonic() < wait_until:
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(consumer, 10)
    ms = sorted(x / 1e6 for x in received)
    pick = (lambda q: round(ms[min(len(ms) - 1, int(q * len(ms)))], 3)) if ms else (lambda q: None)
    return {"p50_ms": pick(0.50), "p99_ms": pick(0.99), "p999_ms": pick(0.999),
            "max_ms": round(ms[-1], 3) if ms else None, "sent": count - skip, "received": len(ms), "failed": failed,
            "rate": round(sent_rate), **histogram(ms)}


async def run_workloads(system: System, n: int, latency_s: float, prefix: str = "bench",
                        latency_rate: int = LATENCY_RATE) -> dict[str, dict[str, Any]]:
    """(a) to (d), on topics named ``prefix``-a, -b, -d (a run of its own on a server that ran others)."""
    body = os.urandom(BODY_BYTES)
    bodies = [body] * BATCH
    out: dict[str, dict[str, Any]] = {}
    for _ in range(WARMUP):
        await system.send(f"{prefix}-a", body)
    out["sync_send"] = (await timed(n, 1, lambda: system.send(f"{prefix}-a", body))).figures("tps")
    for _ in range(WARMUP // BATCH):
        await system.send_batch(f"{prefix}-b", bodies)
    out["batch_send"] = (await timed(n // BATCH, BATCH, lambda: system.send_batch(f"{prefix}-b", bodies))
                         ).figures("tps")
    await system.open_group(f"{prefix}-a")
    out["consume"] = (await consume_all(system, n + WARMUP, timeout=max(60, n / 500))).figures("msgs_per_s")
    out["latency"] = await latency(system, f"{prefix}-d", latency_s, body, latency_rate)
    return out


def suspended_push_group(namesrv: str, group: str, topic: str, consumers: int, protocol: str,
                         listener: Callable[..., Any]) -> list[Any]:
    """``consumers`` PushConsumers of ``group`` on ``topic`` from its first offset, suspended (started, they join
    the group's first rebalance together and consume from resume() on)."""
    from pocketmq.client import PushConsumer

    members = []
    for i in range(consumers):
        c = PushConsumer(group, namesrv, instance_name=f"{group}-{i}", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                         protocol=protocol)
        c.subscribe(topic, "*")
        c.register_message_listener(listener)
        c.suspend()
        members.append(c)
    return members


async def push_consume(namesrv: str, topic: str, expected: int, consumers: int, protocol: str = "msgpack"
                       ) -> dict[str, Any]:
    """(e): ``consumers`` PushConsumers of a fresh group (one process, one loop) read ``topic`` from its first
    offset. They start suspended, so the group's first rebalance already sees every member; msgs/s counts
    distinct messages from resume() to the last one's listener call (the rebalance included)."""
    from pocketmq.client import ConsumeConcurrentlyStatus

    group = f"bench-push-{consumers}-{topic}"
    done = asyncio.Event()
    seen: set[tuple[int, int]] = set()
    deliveries = 0

    async def no_op(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        nonlocal deliveries
        deliveries += len(msgs)
        seen.update((m.queue_id, m.queue_offset) for m in msgs)
        if len(seen) >= expected:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    group_members = suspended_push_group(namesrv, group, topic, consumers, protocol, no_op)
    try:
        for c in group_members:
            await c.start()
        begin = time.perf_counter()
        for c in group_members:
            c.resume()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), max(60, expected / 500))
        seconds = time.perf_counter() - begin
    finally:
        for c in group_members:
            await c.shutdown()
    return {"msgs_per_s": round(len(seen) / seconds), "received": len(seen), "expected": expected,
            "duplicates": deliveries - len(seen)}


async def pop_consume(namesrv: str, topic: str, expected: int, protocol: str = "msgpack",
                      group: str | None = None) -> dict[str, Any]:
    """(f): one SimpleConsumer of a fresh group (``group``, by default one named after the topic) pops ``topic``
    from its first offset, 32 per pop, each pop's messages acked with one batch ack that goes out while the next
    pop is on its way. msgs/s counts distinct messages from the first pop to the last ack's answer."""
    from pocketmq.client import SimpleConsumer

    seen: set[tuple[int, int]] = set()
    deliveries = pops = 0
    consumer = SimpleConsumer(group or f"bench-pop-{topic}", namesrv, subscriptions={topic: "*"}, init_mode=0,
                              await_duration=1.0, protocol=protocol)
    await consumer.start()
    try:
        acking: asyncio.Task[None] | None = None
        begin = time.perf_counter()
        deadline = time.monotonic() + max(60, expected / 500)
        while len(seen) < expected and time.monotonic() < deadline:
            msgs = await consumer.receive(BATCH, invisible_duration=60)
            pops += 1
            if acking is not None:
                await acking
                acking = None
            if msgs:
                deliveries += len(msgs)
                seen.update((m.queue_id, m.queue_offset) for m in msgs)
                acking = asyncio.ensure_future(consumer.ack_batch(msgs))
        if acking is not None:
            await acking
        seconds = time.perf_counter() - begin
    finally:
        await consumer.shutdown()
    return {"msgs_per_s": round(len(seen) / seconds), "received": len(seen), "expected": expected,
            "duplicates": deliveries - len(seen), "pops": pops}
