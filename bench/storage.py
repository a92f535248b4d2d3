#!/usr/bin/env python3
"""Storage benchmark: put / get / dispatch / index / append-flatness / recovery figures for pocketmq.

    python bench/storage.py [--quick] [--sizes 100,1024,4096] [--count N] [--repeat 3] [--dir DIR]

Prints tables, then as its last line one JSON object of the figures. It measures; it asserts nothing.
Put figures are the best of --repeat runs. The baseline, a bare struct + CRC + mmap loop writing the
same records, takes turns with the store's runs in the same process (the store drained and flushed
first, so its threads are idle), and every ratio divides by the baseline of the same body size and
properties.
See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.storage_recovery import bench_recovery  # noqa: E402
from bench.storage_runs import (  # noqa: E402
    BATCH,
    MIN_FREE,
    QUEUES,
    VARIANTS,
    baseline,
    batches_of,
    get_rate,
    lag_growing,
    make_messages,
    open_store,
    perf,
    query_latency,
    queue_total,
    record_size,
    timed_puts,
)
from pocketmq.storage import DefaultMessageStore  # noqa: E402


# -- put / get / index figures ----------------------------------------------------------------------
@dataclass
class Cell:
    """The runs of one (mode, props, size) line; rates are reported as the best run."""

    runs: list[tuple[float, float]] = field(default_factory=list)  # (msgs/s, bytes/s)
    lags: list[list[int]] = field(default_factory=list)
    drains: list[float] = field(default_factory=list)

    @property
    def best(self) -> tuple[float, float]:
        return max(self.runs)


def bench_size(root: str, size: int, n: int, repeat: int, figures: dict, rows: list[list]) -> tuple[list, list]:
    """Put figures for one body size, for every props variant; returns (get row, index row)."""
    body = random.Random(size).randbytes(size)
    sample_every = max(BATCH, n // 15 // BATCH * BATCH)
    baselines: dict[str, Cell] = {}
    baseline_dir = os.path.join(root, f"baseline-{size}")
    os.makedirs(baseline_dir)
    get_row: list = []
    index_row: list = []
    for variant in VARIANTS:
        shape = "keys" if variant == "keys" else "tags"  # tags+str writes the same records as tags
        base = None if shape in baselines else baselines.setdefault(shape, Cell())
        store_dir = os.path.join(root, f"put-{size}-{variant.replace('+', '-')}")
        store = open_store(store_dir)
        # Warm up: the first message of a queue creates its files, which is not what we measure here.
        warm_up = make_messages(BATCH * QUEUES, body, variant, "warm-up")
        for b in batches_of(warm_up):
            store.put_messages(b)
        store.wait_dispatched(60.0)
        cells = {"single": Cell(), "batch32": Cell()}
        keys: list[str] = []
        same = make_messages(n, body, variant, "") if variant != "keys" else []  # reusable: no unique keys
        for rep in range(repeat):
            if base is not None:
                # The baseline takes turns with the store, its threads idle: nothing left to dispatch or flush.
                store.wait_dispatched(120.0)
                store.flush_commit_log(0)
                msgs = make_messages(n, body, shape, f"base-{rep}")
                s, nbytes = baseline(msgs, os.path.join(baseline_dir, f"{shape}-{rep}"))
                base.runs.append((n / s, nbytes / s))
            for mode, cell in cells.items():
                msgs = same or make_messages(n, body, variant, f"{rep}-{mode}")
                run = timed_puts(store, msgs, mode == "batch32", sample_every)
                cell.runs.append((n / run.seconds, run.nbytes / run.seconds))
                cell.lags.append(run.lags)
                cell.drains.append(run.drain_s)
                if variant == "keys":
                    keys.extend(m.properties["KEYS"] for m in msgs)
        expected = BATCH * QUEUES + 2 * repeat * n
        if queue_total(store) != expected:
            print(f"WARNING: {size} B {variant}: {queue_total(store):,} messages in the queues, {expected:,} put")
        if base is not None:
            add_row(figures, rows, "baseline", shape, size, base, base)
        for mode, cell in cells.items():
            add_row(figures, rows, mode, variant, size, cell, baselines[shape])
        if variant == "tags":
            get_row = bench_get(store, size, repeat * 2 * n, repeat, figures)
        if variant == "keys":
            index_row = bench_index_query(store, size, keys, 300 if n < 50_000 else 2000, figures)
        store.shutdown()
        shutil.rmtree(store_dir)
    shutil.rmtree(baseline_dir)
    return get_row, index_row


def bench_get(store: DefaultMessageStore, size: int, total: int, repeat: int, figures: dict) -> list:
    """Reading back every message put (the best of ``repeat`` rounds); the get table's row."""
    mps, bps, faults = max(get_rate(store, total) for _ in range(repeat))
    figures[f"get_{size}_msgs_per_s"] = round(mps)
    figures[f"get_{size}_mb_per_s"] = round(bps / 1e6, 1)
    figures[f"get_{size}_major_faults"] = faults
    return [size, mps, bps / 1e6, faults]


def bench_index_query(store: DefaultMessageStore, size: int, keys: list[str], queries: int, figures: dict) -> list:
    """Latency of looking messages up by key in the index; the index table's row."""
    p50, p99, hit, faults = query_latency(store, keys, queries)
    figures[f"index_query_{size}_p50_us"] = round(p50, 1)
    figures[f"index_query_{size}_p99_us"] = round(p99, 1)
    figures[f"index_query_{size}_major_faults"] = faults
    return [size, len(keys), p50, p99, hit, faults]


def add_row(figures: dict, rows: list[list], mode: str, variant: str, size: int, cell: Cell, base: Cell) -> None:
    rate, byte_rate = cell.best
    ratio = rate / base.best[0]
    stem = f"{mode}_{variant.replace('+', '_')}_{size}"
    figures[f"{stem}_msgs_per_s"] = round(rate)
    figures[f"{stem}_mb_per_s"] = round(byte_rate / 1e6, 1)
    if mode == "baseline":
        rows.append([mode, variant, size, rate, byte_rate / 1e6, 1.0, "", "", "", ""])
        return
    # The dispatcher gets the GIL in 5 ms slices, so a lag worth ~20 ms of puts is just scheduling.
    growing = any(lag_growing(lags, max(1 << 20, 0.02 * byte_rate)) for lags in cell.lags)
    lag_max = max(max(lags) for lags in cell.lags)
    figures[f"{stem}_ratio"] = round(ratio, 3)
    figures[f"{stem}_lag_max_bytes"] = lag_max
    figures[f"{stem}_lag_growing"] = growing
    rows.append([mode, variant, size, rate, byte_rate / 1e6, ratio, lag_max / 1024, cell.lags[-1][-1] / 1024,
                 growing, max(cell.drains) * 1000])


# -- append flatness --------------------------------------------------------------------------------
def bench_flatness(root: str, file_size: int, files: int) -> tuple[list[float], list[int]]:
    """Batch-put 100 B TAGS messages through `files` commit-log files of `file_size` bytes;
    (msgs/s per file, dispatch lag in bytes at each file's end)."""
    store_dir = os.path.join(root, "flat")
    store = open_store(store_dir, mapped_file_size_commit_log=file_size)
    msgs = make_messages(BATCH * 1024, bytes(100), "tags", "flat")
    batches = batches_of(msgs)
    per_file = file_size // record_size(msgs[0])
    mfq = store.commit_log.mapped_file_queue
    put, behind = store.put_messages, store.dispatch_behind_bytes
    rates, lags = [], []
    gc.collect()
    t0 = perf()
    count = 1
    while count <= files:
        for b in batches:
            put(b)
            if len(mfq.files) != count:  # the batch just put opened the next file
                t1 = perf()
                rates.append(per_file / (t1 - t0))
                lags.append(behind())
                t0, count = t1, count + 1
                if count > files:
                    break
    store.wait_dispatched(120.0)
    store.shutdown()
    shutil.rmtree(store_dir)
    return rates, lags


# -- output -----------------------------------------------------------------------------------------
def fmt(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(title: str, header: list[str], rows: list[list]) -> None:
    cells = [header] + [[fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, r in enumerate(cells):
        # The first two columns are labels (left-aligned), the rest figures (right-aligned).
        line = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        print("  " + "  ".join(line))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def human(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


def busy_cpu_s() -> float:
    """CPU seconds all processes have used since boot (from /proc/stat; 0 where there is none)."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    except (OSError, ValueError):
        return 0.0
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds of this process and its finished children (the recovery writer)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def first_touch_us(root: str, size: int = 32 << 20) -> float:
    """µs per 4 KiB page to dirty a fresh sparse file through mmap: the page-fault cost every append pays.
    (In a VM whose guest memory is backed lazily this varies a lot from run to run.)"""
    path = os.path.join(root, "touch.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    mm = mmap.mmap(fd, size)
    t0 = perf()
    for pos in range(0, size, 4096):
        mm[pos] = 1
    elapsed = perf() - t0
    mm.close()
    os.close(fd)
    os.unlink(path)
    return elapsed / (size // 4096) * 1e6


@dataclass
class Plan:
    """What a run measures, from the command line (smaller with --quick)."""

    sizes: list[int]
    n100: int  # messages per put run at 100 B
    byte_cap: int  # bytes per put run
    flat_file: int
    recovery_size: int
    repeat: int
    quick: bool
    dir: str | None  # the temp store dir's parent
    recovery_body: int = 1024


@dataclass
class Measured:
    touch: float
    put_rows: list[list]
    get_rows: list[list]
    index_rows: list[list]
    rates: list[float]  # append flatness: each file's best pass,
    worst: list[float]  # its worst pass,
    flat_lags: list[int]  # and the most dispatch lag at its end
    rec: dict


def parse_args(argv: list[str] | None) -> Plan:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small run, under 30 s")
    ap.add_argument("--sizes", default="100,1024,4096", help="body sizes in bytes (default 100,1024,4096)")
    ap.add_argument("--count", type=int, help="messages per put run at 100 B (bigger bodies: capped by bytes)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per put figure; the best is reported")
    ap.add_argument("--dir", help="parent of the temp store dir (default: the system temp dir)")
    args = ap.parse_args(argv)
    plan = Plan(
        sizes=[int(s) for s in args.sizes.split(",")],
        n100=args.count or (24_000 if args.quick else 200_000),
        byte_cap=(8 if args.quick else 96) << 20,
        flat_file=(8 if args.quick else 64) << 20,
        recovery_size=(64 << 20) if args.quick else (1 << 30),
        repeat=args.repeat,
        quick=args.quick,
        dir=args.dir,
    )
    return plan


def measure(root: str, plan: Plan, figures: dict) -> Measured:
    touch = first_touch_us(root)
    put_rows: list[list] = []
    get_rows, index_rows = [], []
    for size in plan.sizes:
        n = max(BATCH * 8, min(plan.n100, plan.byte_cap // (size + 120)) // BATCH * BATCH)
        get_row, index_row = bench_size(root, size, n, plan.repeat, figures, put_rows)
        get_rows.append(["get", "tags", *get_row])
        index_rows.append(["query", "keys", *index_row])
    # Per file, the best of --repeat passes, as for the put figures: one pass's slow file is the VM's
    # noise more often than not (bench/README.md); a slowdown that comes with the file count shows in all.
    passes = [bench_flatness(root, plan.flat_file, 10) for _ in range(plan.repeat)]
    rates = [max(p[0][i] for p in passes) for i in range(10)]
    worst = [min(p[0][i] for p in passes) for i in range(10)]
    flat_lags = [max(p[1][i] for p in passes) for i in range(10)]
    rec = bench_recovery(root, plan.recovery_size, plan.recovery_body)
    return Measured(touch, put_rows, get_rows, index_rows, rates, worst, flat_lags, rec)


def print_tables(plan: Plan, m: Measured) -> tuple[float, float]:
    """Every table; the append flatness's spreads (of the best passes, of the worst)."""
    print(f"first write to a fresh mapped page: {m.touch:.1f} µs/page")
    table(f"Put: best of {plan.repeat} runs; MB/s of commit-log records; ratio = msgs/s / baseline's (same size,"
          " same records); dispatch lag sampled during the puts, drain = wait_dispatched() after",
          ["mode", "props", "body B", "msgs/s", "MB/s", "ratio", "lag max KiB", "lag end KiB", "lag grows",
           "drain ms"], m.put_rows)
    table(f"Get: get_message(32) over the 4 queues just written, best of {plan.repeat}; major faults = pages"
          " read back from disk (the kernel had evicted them)",
          ["", "", "body B", "msgs/s", "MB/s", "major faults"], m.get_rows)
    table("Index query: query_message(key) for random existing KEYS",
          ["", "", "body B", "keys", "p50 µs", "p99 µs", "hit rate", "major faults"], m.index_rows)
    table(f"Append flatness: batch-32 put, 100 B TAGS, {human(plan.flat_file)} commit-log files; msgs/s of each"
          f" file, best and worst of {plan.repeat} passes; dispatch lag at each file's end (the most of any pass)",
          ["file", "", "msgs/s", "worst", "lag KiB"],
          [[i + 1, "", r, w, lag / 1024] for i, (r, w, lag) in enumerate(zip(m.rates, m.worst, m.flat_lags,
                                                                            strict=True))])
    spread = (max(m.rates) - min(m.rates)) / statistics.mean(m.rates)
    worst_spread = (max(m.worst) - min(m.worst)) / statistics.mean(m.worst)
    print(f"  file 10 / file 1 = {m.rates[-1] / m.rates[0]:.3f}; spread (max - min) / mean = {spread:.3f}"
          f" (of the worst passes: {worst_spread:.3f})")
    rec = m.rec
    scaled = "" if plan.recovery_size == 1 << 30 else " (scaled down from 1 GiB for --quick)"
    table(f"Recovery of a {human(plan.recovery_size)} commit log{scaled}, {plan.recovery_body} B bodies, TAGS only: a"
          f" child process filled it ({rec['written']:,} msgs, {rec['log_bytes']:,} B in {rec['fill_s']:.1f} s,"
          f" dispatch lag then {rec['lag_at_kill']:,} B) and was SIGKILLed, leaving the abort file; checkpoint"
          f" {'never flushed (stale)' if rec['checkpoint_stale'] else 'as last flushed'}; the log is still in the page"
          " cache, as after a process crash (not a machine crash). total = load + start (start returns once"
          " dispatch has caught up); normal = clean shutdown, then restart.",
          ["restart", "", "total s", "load s", "start s", "msgs in queues", "log bytes"],
          [[kind, "", *rec[kind]] for kind in ("abnormal", "normal")])
    return spread, worst_spread


def main(argv: list[str] | None = None) -> None:
    plan = parse_args(argv)
    parent = plan.dir or tempfile.gettempdir()
    free = shutil.disk_usage(parent).free
    if free < MIN_FREE:
        print(f"skipped: {free / 2**30:.1f} GiB free under {parent}, the benchmark needs 3 GiB")
        print(json.dumps({"skipped": True, "free_gib": round(free / 2**30, 1)}))
        return
    root = tempfile.mkdtemp(prefix="pocketmq-bench-", dir=parent)
    figures: dict = {}
    t_start, busy_start, own_start = perf(), busy_cpu_s(), own_cpu_s()
    print(f"pocketmq storage bench: {'quick' if plan.quick else 'full'} run, Python {sys.version.split()[0]},"
          f" {os.cpu_count()} CPUs, store under {root}")
    try:
        m = measure(root, plan, figures)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    spread, worst_spread = print_tables(plan, m)

    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall = perf() - t_start
    own = own_cpu_s() - own_start
    # Busy CPU time of everything else on the machine (kernel work on our behalf, e.g. writeback, included).
    others = max(0.0, busy_cpu_s() - busy_start - own) / (wall * (os.cpu_count() or 1))
    print(f"\nmax RSS {rss_mb:.0f} MB (counts the mapped commit-log pages this process touched); wall time"
          f" {wall:.1f} s, CPU {own:.1f} s; other processes kept {others:.0%} of the CPUs busy"
          f"{' (they competed with the bench: its figures are low and noisy)' if others > 0.15 else ''}")

    main_size = 100 if 100 in plan.sizes else plan.sizes[0]
    stem = f"tags_{main_size}"
    label = human(plan.recovery_size).replace(" ", "").lower()
    figures.update({
        "body_size_main": main_size,
        "baseline_msgs_per_s": figures[f"baseline_{stem}_msgs_per_s"],
        "single_put_ratio": figures[f"single_{stem}_ratio"],
        "batch_put_ratio": figures[f"batch32_{stem}_ratio"],
        "dispatch_lag_max_bytes": figures[f"batch32_{stem}_lag_max_bytes"],
        "dispatch_lag_growing": figures[f"batch32_{stem}_lag_growing"],
        "get_msgs_per_s": figures[f"get_{main_size}_msgs_per_s"],
        "index_query_p50_us": figures[f"index_query_{main_size}_p50_us"],
        "index_query_p99_us": figures[f"index_query_{main_size}_p99_us"],
        "append_file_size": plan.flat_file,
        "append_rate_file1": round(m.rates[0]),
        "append_rate_file10": round(m.rates[-1]),
        "append_flat_spread": round(spread, 3),
        "append_flat_spread_worst": round(worst_spread, 3),
        f"recovery_{label}_abnormal_s": round(m.rec["abnormal"][0], 3),
        f"restart_{label}_normal_s": round(m.rec["normal"][0], 3),
        "recovery_body_size": plan.recovery_body,
        "first_touch_us_per_page": round(m.touch, 2),
        "repeat": plan.repeat,
        "rss_mb": round(rss_mb),
        "others_cpu_share": round(others, 3),
        "quick": plan.quick,
    })
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
