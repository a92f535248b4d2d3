#!/usr/bin/env python3
"""CPU and instructions a pop of e2e.py's (f) (a SimpleConsumer popping 32 per POP_MESSAGE, each pop acked with
one BATCH_ACK_MESSAGE), the client's and the broker's, in msgpack and in RocketMQ's native protocol.

    python bench/pop_cpu.py                      # CPU from /proc, 3 rounds a protocol, alternating
    python bench/pop_cpu.py --instructions       # instructions a pop: client (cachegrind) and broker (callgrind)

One ``pocketmq dev`` (its own process) holds topics of 128 B messages written in batches of 32, as bench/
push_cpu.py's. A round pops a whole topic with a fresh group (e2e_workloads.pop_consume). Busy polling is off in
both processes (``POCKETMQ_BUSY_POLL=never``), so the CPU and the instructions counted are work, not spinning.

``--instructions``: the client is a child process under ``valgrind --tool=cachegrind --cache-sim=no`` popping a
topic of 2n messages less one popping n, over the pops between them (start-up and shutdown drop out). Then, with
another server, the broker runs under ``valgrind --tool=callgrind``, its counters zeroed before and dumped after
each consumer (callgrind_control, by pid), the consumer in this process; its figure is the same difference. The
broker's timers and store threads run by the clock (the buffer merge's scan every 50 ms, the delay levels' and
the revive queues' reads, the dispatcher's rounds), and a window holds as many of them as it lasts: under
callgrind how long a window lasts goes with the machine's load, and a window's figure with it (bench/README.md,
"A pop in instructions, per protocol"). So each consumer's seconds are timed too, and at the end the run's
consumers give a least-squares fit, instructions = a pop's × pops + a second's × seconds + a consumer's own (a
pop's and a consumer's per protocol, a second's shared): a pop's is the figure that does not move with the load.
The broker's idle instructions a second (counters zeroed and dumped around ``--idle`` seconds with no client,
before the windows and after them) are printed beside it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.e2e_systems import BATCH, free_port, server  # noqa: E402
from bench.e2e_workloads import pop_consume  # noqa: E402
from bench.push_cpu import broker_pid, fill, proc_cpu, self_cpu  # noqa: E402

PROTOCOLS = ("msgpack", "rocketmq")


async def pop_round(namesrv: str, topic: str, n: int, protocol: str, group: str, pid: int) -> dict[str, Any]:
    cpu0, broker0 = self_cpu(), proc_cpu(pid)
    row = await pop_consume(namesrv, topic, n, protocol, group)
    cpu1, broker1 = self_cpu(), proc_cpu(pid)
    pops = row["pops"]
    return {"protocol": protocol, **row, "client_us_a_pop": round((cpu1 - cpu0) / pops * 1e6, 1),
            "broker_us_a_pop": round((broker1 - broker0) / pops * 1e6, 1)}


def client_instructions(namesrv: str, topic: str, n: int, protocol: str, group: str) -> tuple[int, int]:
    """Instructions of a child popping ``topic`` (``n`` messages) under cachegrind, and its pops."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                               sys.executable, __file__, "--child", namesrv, topic, str(n), protocol, group],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0", "POCKETMQ_BUSY_POLL": "never"})
        m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
        if m is None:
            raise RuntimeError(proc.stderr)
        return int(m.group(1).replace(",", "")), json.loads(proc.stdout.splitlines()[-1])["pops"]


def _callgrind_control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True, timeout=120)


def _dumped(prefix: str, seen: set[str]) -> int:
    """The summary of the one dump file that appeared since ``seen``."""
    for _ in range(100):
        new = sorted(set(glob.glob(prefix + "*")) - seen)
        text = Path(new[-1]).read_text() if new else ""
        m = re.search(r"^summary:\s+(\d+)", text, flags=re.M)
        if m:
            seen.update(new)
            return int(m.group(1))
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def _idle_rate(pid: int, prefix: str, seen: set[str], seconds: float) -> float:
    """The broker's instructions a second with no client: its timers and store threads."""
    time.sleep(1.0)  # (the last consumer's connection closed, its answers written)
    _callgrind_control(pid, "--zero")
    begin = time.monotonic()
    time.sleep(seconds)
    _callgrind_control(pid, "--dump")
    return _dumped(prefix, seen) / (time.monotonic() - begin)


def _fit(consumers: list[tuple[str, int, int, float]], protocols: tuple[str, ...]) -> tuple[dict[str, float], float]:
    """Least squares over (protocol, instructions, pops, seconds): instructions = pop[protocol] × pops + second ×
    seconds + own[protocol]. The pop's per protocol and the second's."""
    cols = len(protocols) * 2 + 1  # a pop's and a consumer's per protocol, then a second's
    rows = []
    for protocol, spent, pops, secs in consumers:
        i = protocols.index(protocol)
        x = [0.0] * cols
        x[2 * i], x[2 * i + 1], x[-1] = pops, 1.0, secs
        rows.append((x, float(spent)))
    # Normal equations, solved by Gauss-Jordan elimination with partial pivoting.
    a = [[sum(x[i] * x[j] for x, _ in rows) for j in range(cols)] + [sum(x[i] * y for x, y in rows)]
         for i in range(cols)]
    for c in range(cols):
        pivot = max(range(c, cols), key=lambda r: abs(a[r][c]))
        a[c], a[pivot] = a[pivot], a[c]
        for r in range(cols):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [v - f * w for v, w in zip(a[r], a[c], strict=True)]
    solved = [a[i][cols] / a[i][i] for i in range(cols)]
    return {p: solved[2 * i] for i, p in enumerate(protocols)}, solved[-1]


def instructions(n: int, protocols: tuple[str, ...], where: str, repeats: int, idle: float = 10.0) -> None:
    """Instructions a pop of the client (``where`` "client") or of the broker ("broker"): each protocol pops a
    topic of n and one of 2n messages with fresh groups, after a warm-up pop of each protocol (the broker's first
    pops of a connection, a group and a protocol are not counted); ``repeats`` times, the protocols' order
    reversed each time. For the broker, the fit over its consumers (``_fit``) and its idle instructions a second
    (``idle`` seconds before the windows and after them) follow the windows."""
    from pocketmq.runtime import run

    with tempfile.TemporaryDirectory(prefix="pop-cpu-") as tmp:
        namesrv_port, broker_port = free_port(), free_port()
        prefix = f"{tmp}/callgrind.out"
        argv = [sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", f"{tmp}/store",
                "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port)]
        if where == "broker":
            argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}", *argv]
        namesrv = f"127.0.0.1:{namesrv_port}"
        with server("pocketmq", argv, Path(tmp) / "pocketmq.log", "stops it cleanly", timeout=600):
            pid = broker_pid(broker_port)
            topics = {k: f"pop-instr-{k}" for k in (1, 2)}
            for k, topic in topics.items():
                run(fill(namesrv, topic, k * n))
            run(fill(namesrv, "pop-warm-up", 4 * BATCH))
            for protocol in protocols:
                run(pop_consume(namesrv, "pop-warm-up", 4 * BATCH, protocol, f"pop-warm-up-{protocol}"))
            seen: set[str] = set()
            consumers: list[tuple[str, int, int, float]] = []  # protocol, instructions, pops, seconds
            rates = [_idle_rate(pid, prefix, seen, idle)] if where == "broker" else []
            for r in range(repeats):
                for protocol in protocols if r % 2 == 0 else protocols[::-1]:
                    counts, seconds = {}, {}
                    for k, topic in topics.items():
                        group = f"pop-instr-{protocol}-{r}-{k}"
                        if where == "client":
                            counts[k] = client_instructions(namesrv, topic, k * n, protocol, group)
                            continue
                        _callgrind_control(pid, "--zero")
                        begin = time.monotonic()
                        pops = run(pop_consume(namesrv, topic, k * n, protocol, group))["pops"]
                        _callgrind_control(pid, "--dump")
                        seconds[k] = time.monotonic() - begin
                        counts[k] = (_dumped(prefix, seen), pops)
                    pops = counts[2][1] - counts[1][1]
                    spent = counts[2][0] - counts[1][0]
                    print(f"{where} {protocol}: {spent / pops:,.0f} instructions a pop "
                          f"({pops} pops, {n // BATCH} of {BATCH} expected; {counts[1][0]:,} and {counts[2][0]:,} "
                          "in all)", flush=True)
                    if where == "broker":
                        consumers += [(protocol, counts[k][0], counts[k][1], seconds[k]) for k in topics]
                        print(f"  window of {seconds[2] - seconds[1]:.1f} s (consumers of {seconds[1]:.1f} and "
                              f"{seconds[2]:.1f} s), load average {os.getloadavg()[0]:.2f}", flush=True)
            if where == "broker":
                rates.append(_idle_rate(pid, prefix, seen, idle))
                print(f"broker idle: {rates[0]:,.0f} and {rates[1]:,.0f} instructions a second (before and after "
                      "the windows)", flush=True)
                if len(consumers) > 2 * len(protocols) + 1:
                    per_pop, per_second = _fit(consumers, protocols)
                    print(f"fit over {len(consumers)} consumers: {per_second:,.0f} instructions a second; a pop "
                          + ", ".join(f"{p} {per_pop[p]:,.0f}" for p in protocols), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1, help="--instructions: measure this many times")
    ap.add_argument("--idle", type=float, default=10.0,
                    help="--instructions broker: seconds of the broker's idle instructions, before and after")
    ap.add_argument("--busy-poll", default="never", choices=("never", "always", "adaptive"),
                    help="POCKETMQ_BUSY_POLL of both processes for the CPU rounds (adaptive: the default's)")
    ap.add_argument("--protocol", choices=PROTOCOLS, action="append", help="only this protocol (repeatable)")
    ap.add_argument("--instructions", nargs="?", const="both", choices=("both", "client", "broker"),
                    help="instructions a pop (valgrind) of the client, the broker or both; --messages is n")
    args = ap.parse_args()
    os.environ["POCKETMQ_BUSY_POLL"] = "never" if args.instructions else args.busy_poll  # (read per event loop)
    protocols = tuple(args.protocol or PROTOCOLS)
    n = args.messages // BATCH * BATCH
    if args.instructions:
        for where in ("client", "broker") if args.instructions == "both" else (args.instructions,):
            instructions(n, protocols, where, args.repeats, args.idle)
        return
    from pocketmq.runtime import run

    with tempfile.TemporaryDirectory(prefix="pop-cpu-") as tmp:
        namesrv_port, broker_port = free_port(), free_port()
        argv = [sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", f"{tmp}/store",
                "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port)]
        namesrv = f"127.0.0.1:{namesrv_port}"
        rows: list[dict[str, Any]] = []
        with server("pocketmq", argv, Path(tmp) / "pocketmq.log", "stops it cleanly"):
            pid = broker_pid(broker_port)
            run(fill(namesrv, "pop-cpu", n))
            for r in range(args.rounds):
                for protocol in protocols if r % 2 == 0 else protocols[::-1]:
                    row = run(pop_round(namesrv, "pop-cpu", n, protocol, f"g{r}-{protocol}", pid))
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    for protocol in protocols:
        mine = [r for r in rows if r["protocol"] == protocol]
        print(f"{protocol}: client {statistics.median(r['client_us_a_pop'] for r in mine):.1f} us a pop, broker "
              f"{statistics.median(r['broker_us_a_pop'] for r in mine):.1f}, msgs/s "
              f"{statistics.median(r['msgs_per_s'] for r in mine):,.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        from pocketmq.runtime import run

        namesrv_, topic_, n_, protocol_, group_ = sys.argv[2:7]
        print(json.dumps(run(pop_consume(namesrv_, topic_, int(n_), protocol_, group_))))
    else:
        main()
