"""bench/e2e.py's report: the table in RocketMQ's benchmark columns, the figures' names in its JSON line, and
pocketmq against the best peer with the targets."""

from __future__ import annotations

from typing import Any

from bench.e2e_systems import BATCH, LATENCY_RATE
from bench.e2e_workloads import HISTOGRAM_MS, bucket_name

SYSTEMS = ("pocketmq", "pocketmq_native", "rocketmq_cpp", "redis", "nats")  # rows of the table
PEERS = ("redis", "nats")
# Every figure of a system, by workload: the JSON has each as "{system}_{workload}_{key}" (null if skipped).
SEND = ("tps", "max_rt_ms", "avg_rt_ms", "failed")
FIGURES = {
    "sync_send": SEND,
    "batch_send": SEND,
    "consume": ("msgs_per_s", "max_rt_ms", "avg_rt_ms", "failed"),
    "latency": ("p50_ms", "p99_ms", "p999_ms", "max_ms", "sent", "received", "failed", "rate",
                *map(bucket_name, HISTOGRAM_MS)),
    "push_consume_1": ("msgs_per_s", "received", "expected", "duplicates"),
    "push_consume_3": ("msgs_per_s", "received", "expected", "duplicates"),
    "pop_consume": ("msgs_per_s", "received", "expected", "duplicates"),
}


def fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_histogram(results: dict[str, dict[str, Any] | None]) -> None:
    """(d)'s latencies per bucket (messages; upper bounds in ms), the tail's shape beside its percentiles."""
    names = [bucket_name(b) for b in HISTOGRAM_MS]
    heads = [f"<={b:g}" if b != float("inf") else "more" for b in HISTOGRAM_MS]
    print(f"  {'histogram, ms':<16}" + "".join(f"{h:>8}" for h in heads))
    for s in SYSTEMS:
        f = (results[s] or {}).get("latency", {})
        if f:
            print(f"  {s:<16}" + "".join(f"{fmt(f.get(n), 'd'):>8}" for n in names))


def print_table(results: dict[str, dict[str, Any] | None], latency_rate: int = LATENCY_RATE) -> None:
    def rows(workload: str, title: str, rate: str, failed: str = "Send Failed") -> None:
        print(f"\n{title}")
        print(f"  {'system':<16}{rate:>14}{'Max RT(ms)':>13}{'Average RT(ms)':>16}{failed:>13}")
        for s in SYSTEMS:
            f = (results[s] or {}).get(workload, {})
            if not f and s == "rocketmq_cpp":
                continue
            rate_key = "msgs_per_s" if workload == "consume" else "tps"
            print(f"  {s:<16}{fmt(f.get(rate_key), ',d'):>14}{fmt(f.get('max_rt_ms'), '.3f'):>13}"
                  f"{fmt(f.get('avg_rt_ms'), '.3f'):>16}{fmt(f.get('failed'), 'd'):>13}")

    rows("sync_send", "(a) one producer, each send awaited (RT per send)", "Send TPS")
    rows("batch_send", f"(b) batches of {BATCH} (RT per batch; TPS in messages)", "Send TPS")
    rows("consume", f"(c) consume in a group, {BATCH} per fetch, each acked (RT per fetch; failed = fetches)",
         "Consume TPS", "Failed")
    print(f"\n(d) end-to-end latency at {latency_rate:,} msgs/s (send -> receive)")
    print(f"  {'system':<16}{'p50(ms)':>10}{'p99(ms)':>10}{'p99.9(ms)':>10}{'max(ms)':>10}{'received':>15}"
          f"{'sent/s':>9}")
    for s in SYSTEMS:
        f = (results[s] or {}).get("latency", {})
        if not f and s == "rocketmq_cpp":
            continue
        got = f"{f['received']}/{f['sent']}" if f else "-"
        print(f"  {s:<16}{fmt(f.get('p50_ms'), '.3f'):>10}{fmt(f.get('p99_ms'), '.3f'):>10}"
              f"{fmt(f.get('p999_ms'), '.3f'):>10}{fmt(f.get('max_ms'), '.3f'):>10}{got:>15}"
              f"{fmt(f.get('rate'), 'd'):>9}")
    print_histogram(results)
    print("\n(e) push consumers (pocketmq only): a new group reads (a)'s messages, no-op listener")
    print(f"  {'system':<16}{'consumers':<10}{'Consume TPS':>14}{'received':>15}   vs best peer's (c)")
    for s in ("pocketmq", "pocketmq_native", "rocketmq_cpp"):
        for k in (1, 3):
            f = (results[s] or {}).get(f"push_consume_{k}", {})
            if not f and s == "rocketmq_cpp":
                continue
            got = f"{f['received']}/{f['expected']}" if f else "-"
            print(f"  {s:<16}{k:<10}{fmt(f.get('msgs_per_s'), ',d'):>14}{got:>15}   "
                  f"{fmt(push_ratio(results, k, s), '')}x")
    print(f"\n(f) pop and ack (pocketmq only): a SimpleConsumer pops (a)'s messages, {BATCH} per pop, "
          "one batch ack each")
    print(f"  {'system':<16}{'Consume TPS':>14}{'received':>15}{'duplicates':>12}   vs its own (c)")
    for s in ("pocketmq", "pocketmq_native"):
        f = (results[s] or {}).get("pop_consume", {})
        got = f"{f['received']}/{f['expected']}" if f else "-"
        print(f"  {s:<16}{fmt(f.get('msgs_per_s'), ',d'):>14}{got:>15}{fmt(f.get('duplicates'), 'd'):>12}   "
              f"{fmt(pop_ratio(results, s), '')}x")


def pop_ratio(results: dict[str, dict[str, Any] | None], system: str = "pocketmq") -> float | None:
    """(f) over (c), both pocketmq's: popping and acking against pulling with piggybacked offset commits."""
    r = results[system] or {}
    pop, pull = r.get("pop_consume", {}).get("msgs_per_s"), r.get("consume", {}).get("msgs_per_s")
    return round(pop / pull, 3) if pop is not None and pull else None


def ratio(results: dict[str, dict[str, Any] | None], workload: str, key: str) -> float | None:
    ours = (results["pocketmq"] or {}).get(workload, {}).get(key)
    peers = [r[workload][key] for s, r in results.items() if s in PEERS and r and r[workload].get(key)]
    return round(ours / max(peers), 3) if ours is not None and peers else None


def push_ratio(results: dict[str, dict[str, Any] | None], consumers: int, system: str = "pocketmq"
               ) -> float | None:
    """A pocketmq row's push consume rate over the best peer's (c) consume rate."""
    ours = (results[system] or {}).get(f"push_consume_{consumers}", {}).get("msgs_per_s")
    peers = [r["consume"]["msgs_per_s"] for s, r in results.items() if s in PEERS and r
             and r["consume"].get("msgs_per_s")]
    return round(ours / max(peers), 3) if ours is not None and peers else None


# pocketmq / best peer, at least (latency: p99 below 5 ms).
TARGETS = {"sync_send_ratio": 2.0, "batch_send_ratio": 4.0, "consume_ratio": 3.0, "push_consume_ratio": 3.0,
           "pop_vs_consume_ratio": 0.5}


def summarize(results: dict[str, dict[str, Any] | None], figures: dict[str, Any]
              ) -> tuple[dict[str, Any], dict[str, bool | None]]:
    """pocketmq against the best peer on each workload, and whether each target is met (None: not measured)."""
    summary = {
        "sync_send_ratio": ratio(results, "sync_send", "tps"),
        "batch_send_ratio": ratio(results, "batch_send", "tps"),
        "consume_ratio": ratio(results, "consume", "msgs_per_s"),
        "push_consume_ratio": max((r for r in (push_ratio(results, 1), push_ratio(results, 3)) if r is not None),
                                  default=None),
        "latency_p99_ms": figures.get("pocketmq_latency_p99_ms"),
        "pop_vs_consume_ratio": pop_ratio(results),
    }
    met = {f"{k}_target_met": None if summary[k] is None else summary[k] >= t for k, t in TARGETS.items()}
    p99 = summary["latency_p99_ms"]
    met["latency_p99_target_met"] = None if p99 is None else p99 < 5.0
    print("\npocketmq / best peer: " + ", ".join(f"{k} {fmt(v, '')} (target {TARGETS.get(k, '< 5 ms')})"
                                                 for k, v in summary.items()))
    return summary, met
