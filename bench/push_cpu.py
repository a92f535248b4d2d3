#!/usr/bin/env python3
"""CPU a pushed message: the client's and the broker's, from /proc, over a fixed number of messages.

    python bench/push_cpu.py                       # 100,000 messages, both protocols, 3 rounds, 1 consumer
    python bench/push_cpu.py --messages 200000 --rounds 5 --consumers 3 --contend --busy-poll adaptive
    python bench/push_cpu.py --profile out.prof    # cProfile of the client in one msgpack round

One ``pocketmq dev`` (its own process) holds a topic of ``--messages`` messages of 128 B (written once, in
batches of 32). Each round starts PushConsumers of a fresh group (bench/e2e.py's (e): a no-op ``async def``
listener, RocketMQ's defaults, so one listener call a message), in msgpack and in RocketMQ's native protocol
alternately, and reads the whole topic. Wall time on a shared 2-core machine moves by tens of percent; CPU
(user + system) of this process and of the broker over the consume phase, per message, moves far less, and it
is what caps the rate beside a CPU-bound process (bench/README.md, "CPU a pushed message"). Busy polling is off
in both processes by default (``POCKETMQ_BUSY_POLL=never``), so the CPU counted is work, not spinning.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.e2e_systems import BATCH, BODY_BYTES, PocketMQ, free_port, server  # noqa: E402
from bench.e2e_workloads import suspended_push_group  # noqa: E402

PROTOCOLS = ("msgpack", "rocketmq")
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system seconds of a process (all its threads) from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def self_sys() -> float:
    return os.times().system


async def fill(namesrv: str, topic: str, n: int) -> None:
    body = b"x" * BODY_BYTES
    async with PocketMQ(namesrv) as system:
        for _ in range(n // BATCH):
            await system.send_batch(topic, [body] * BATCH)


async def push_round(namesrv: str, topic: str, expected: int, consumers: int, protocol: str, group: str,
                     broker_pid: int) -> dict[str, Any]:
    """Every message of ``topic`` through ``consumers`` PushConsumers of a fresh group; CPU from resume() to the
    last listener call."""
    from pocketmq.client import ConsumeConcurrentlyStatus

    done = asyncio.Event()
    seen: set[tuple[int, int]] = set()

    async def no_op(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        seen.update((m.queue_id, m.queue_offset) for m in msgs)
        if len(seen) >= expected:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    members = suspended_push_group(namesrv, group, topic, consumers, protocol, no_op)
    try:
        for c in members:
            await c.start()
        cpu0, sys0, broker0, wall0 = self_cpu(), self_sys(), proc_cpu(broker_pid), time.perf_counter()
        for c in members:
            c.resume()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), max(60, expected / 500))
        cpu1, sys1, broker1, wall1 = self_cpu(), self_sys(), proc_cpu(broker_pid), time.perf_counter()
    finally:
        for c in members:
            await c.shutdown()
    n = len(seen)
    return {"protocol": protocol, "received": n, "msgs_per_s": round(n / (wall1 - wall0)),
            "client_us": round((cpu1 - cpu0) / n * 1e6, 2),
            "client_sys_us": round((sys1 - sys0) / n * 1e6, 2), "broker_us": round((broker1 - broker0) / n * 1e6, 2)}


async def capture(namesrv: str, topic: str, expected: int, protocol: str) -> list[Any]:
    """The raw pull answers (PullResultExt, before decoding) of one consumer reading the whole topic."""
    from pocketmq.client.impl.consumer.pull_api import PullAPIWrapper

    raws: list[Any] = []
    original = PullAPIWrapper.process_pull_result

    def keep(self: Any, mq: Any, raw: Any, subscription: Any) -> Any:
        if raw.message_binary:
            raws.append((mq, raw, subscription))
        return original(self, mq, raw, subscription)

    PullAPIWrapper.process_pull_result = keep  # type: ignore[method-assign]
    try:
        await push_round(namesrv, topic, expected, 1, protocol, f"capture-{protocol}", os.getpid())
    finally:
        PullAPIWrapper.process_pull_result = original  # type: ignore[method-assign]
    return raws


async def replay(namesrv: str, topic: str, raws: list[Any], repeats: int) -> list[float]:
    """The client's work a message after the wire, alone: each captured answer decoded, put in a ProcessQueue
    and handed to a started (suspended) consumer's consume service, as ``_on_pull_success`` does, its no-op
    listener called a message; CPU of this thread a message, per repeat."""
    from pocketmq.client import ConsumeConcurrentlyStatus, PushConsumer
    from pocketmq.client.impl.consumer.process_queue import ProcessQueue

    count = 0

    async def no_op(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        nonlocal count
        count += len(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer("replay", namesrv, instance_name="replay", protocol="msgpack")
    c.subscribe(topic, "*")
    c.register_message_listener(no_op)
    c.suspend()
    await c.start()
    impl = c.impl
    service, pull_api = impl.consume_message_service, impl._pull_api
    per_message: list[float] = []
    try:
        for _ in range(repeats):
            pqs: dict[Any, Any] = {}
            count = expected = 0
            begin = time.thread_time()
            for mq, raw, subscription in raws:
                pq = pqs.get(mq) or pqs.setdefault(mq, ProcessQueue())
                msgs = pull_api.process_pull_result(mq, raw, subscription).msg_found_list
                expected += len(msgs)
                service.submit_consume_request(msgs, pq, mq, pq.put_message(msgs))
                while count < expected:
                    await asyncio.sleep(0)
            per_message.append((time.thread_time() - begin) / expected * 1e6)
    finally:
        await c.shutdown()
    return per_message


def count_instructions(*child: str) -> int:
    """Instructions of ``push_cpu.py --child ...`` (a consumer reading a topic, or ``--child-replay``: a replay)
    under ``valgrind --tool=cachegrind --cache-sim=no`` (the broker runs outside it)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                               sys.executable, __file__, *child],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0", "POCKETMQ_BUSY_POLL": "never"})
        m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
        if m is None:
            raise RuntimeError(proc.stderr)
        return int(m.group(1).replace(",", ""))


def instructions(namesrv: str, n: int, protocols: tuple[str, ...], pid: int, what: str) -> None:
    """Instructions a message: a consumer reading 2n messages less one reading n, over n (start-up and shutdown
    drop out); then the replay's, three repeats less one, over 2n."""
    from pocketmq.runtime import run

    run(fill(namesrv, "instr-1", n))
    run(fill(namesrv, "instr-2", 2 * n))
    for protocol in protocols if what != "replay" else ():
        once = count_instructions("--child", namesrv, "instr-1", str(n), protocol, str(pid))
        twice = count_instructions("--child", namesrv, "instr-2", str(2 * n), protocol, str(pid))
        print(f"instructions {protocol}: {(twice - once) / n:,.0f} a message", flush=True)
    if what == "consumer":
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raws.pickle")
        raws = run(capture(namesrv, "instr-1", n, "msgpack"))
        with open(path, "wb") as f:
            pickle.dump(raws, f)
        once = count_instructions("--child-replay", namesrv, "instr-1", path, "1")
        thrice = count_instructions("--child-replay", namesrv, "instr-1", path, "3")
        print(f"instructions replay: {(thrice - once) / 2 / n:,.0f} a message", flush=True)


def broker_pid(port: int) -> int:
    """The pid listening on ``port`` (the broker), from /proc/net/tcp and the fds of this user's processes."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if int(parts[1].split(":")[1], 16) == port and parts[3] == "0A":
                inodes.add(parts[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        return int(pid)
    raise RuntimeError(f"no process listens on {port}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--consumers", type=int, default=1)
    ap.add_argument("--protocol", choices=PROTOCOLS, action="append", help="only this protocol (repeatable)")
    ap.add_argument("--busy-poll", default="never", choices=("never", "always", "adaptive"))
    ap.add_argument("--contend", action="store_true", help="one CPU-bound process beside (bench/e2e.py's --contend)")
    ap.add_argument("--replay", type=int, metavar="R", help="capture one round's pull answers, then replay them R "
                    "times through the decode and consume path alone (no wire), CPU of the loop thread a message")
    ap.add_argument("--instructions", nargs="?", const="all", choices=("all", "consumer", "replay"),
                    help="instructions a message of the client (cachegrind): a whole consumer, the replay, or both")
    ap.add_argument("--profile", help="write a cProfile of one round (the first protocol) here and stop")
    args = ap.parse_args()
    os.environ["POCKETMQ_BUSY_POLL"] = args.busy_poll  # (read once per event loop, in both processes)
    protocols = tuple(args.protocol or PROTOCOLS)
    from bench.e2e import contention
    from pocketmq.runtime import run

    with tempfile.TemporaryDirectory(prefix="push-cpu-") as tmp, contention(1 if args.contend else 0):
        namesrv_port, broker_port = free_port(), free_port()
        argv = [sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", f"{tmp}/store",
                "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port)]
        namesrv = f"127.0.0.1:{namesrv_port}"
        with server("pocketmq", argv, Path(tmp) / "pocketmq.log", "stops it cleanly"):
            pid = broker_pid(broker_port)
            n = args.messages // BATCH * BATCH
            run(fill(namesrv, "push-cpu", n))
            if args.instructions:
                instructions(namesrv, n, protocols, pid, args.instructions)
                return
            if args.replay:
                for protocol in protocols:
                    raws = run(capture(namesrv, "push-cpu", n, protocol))
                    figures = run(replay(namesrv, "push-cpu", raws, args.replay))
                    print(f"replay {protocol}: {statistics.median(figures):.2f} us a message (runs "
                          f"{', '.join(f'{f:.2f}' for f in figures)})")
                return
            if args.profile:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
                print(run(push_round(namesrv, "push-cpu", n, args.consumers, protocols[0], "g-prof", pid)))
                prof.disable()
                prof.dump_stats(args.profile)
                return
            rows: list[dict[str, Any]] = []
            for r in range(args.rounds):
                for protocol in protocols if r % 2 == 0 else protocols[::-1]:
                    row = run(push_round(namesrv, "push-cpu", n, args.consumers, protocol, f"g{r}-{protocol}", pid))
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    for protocol in protocols:
        mine = [r for r in rows if r["protocol"] == protocol]
        print(f"{protocol}: client {statistics.median(r['client_us'] for r in mine):.2f} us a message "
              f"(runs {', '.join(str(r['client_us']) for r in mine)}), broker "
              f"{statistics.median(r['broker_us'] for r in mine):.2f}, msgs/s "
              f"{statistics.median(r['msgs_per_s'] for r in mine):,.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        from pocketmq.runtime import run

        namesrv_, topic_, n_, protocol_, pid_ = sys.argv[2:7]
        run(push_round(namesrv_, topic_, int(n_), 1, protocol_, f"instr-{os.getpid()}", int(pid_)))
    elif sys.argv[1:2] == ["--child-replay"]:
        from pocketmq.runtime import run

        namesrv_, topic_, path_, repeats_ = sys.argv[2:6]
        with open(path_, "rb") as f:
            run(replay(namesrv_, topic_, pickle.load(f), int(repeats_)))
    else:
        main()
