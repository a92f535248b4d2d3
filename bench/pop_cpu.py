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
broker's idle timers count in its windows, which is why n should make a window of some hundred pops.
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


def instructions(n: int, protocols: tuple[str, ...], where: str, repeats: int) -> None:
    """Instructions a pop of the client (``where`` "client") or of the broker ("broker"): each protocol pops a
    topic of n and one of 2n messages with fresh groups, after a warm-up pop of each protocol (the broker's first
    pops of a connection, a group and a protocol are not counted); ``repeats`` times, the protocols' order
    reversed each time (a window's figure moves with what the broker's timers and collections put in it)."""
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
            for r in range(repeats):
                for protocol in protocols if r % 2 == 0 else protocols[::-1]:
                    counts = {}
                    for k, topic in topics.items():
                        group = f"pop-instr-{protocol}-{r}-{k}"
                        if where == "client":
                            counts[k] = client_instructions(namesrv, topic, k * n, protocol, group)
                            continue
                        _callgrind_control(pid, "--zero")
                        pops = run(pop_consume(namesrv, topic, k * n, protocol, group))["pops"]
                        _callgrind_control(pid, "--dump")
                        counts[k] = (_dumped(prefix, seen), pops)
                    pops = counts[2][1] - counts[1][1]
                    print(f"{where} {protocol}: {(counts[2][0] - counts[1][0]) / pops:,.0f} instructions a pop "
                          f"({pops} pops, {n // BATCH} of {BATCH} expected; {counts[1][0]:,} and {counts[2][0]:,} "
                          "in all)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1, help="--instructions: measure this many times")
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
            instructions(n, protocols, where, args.repeats)
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
