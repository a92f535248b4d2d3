"""Apache RocketMQ 5's Java SDK (rocketmq-client-java, gRPC) against pocketmq's gRPC endpoint and against Apache
RocketMQ 5.5.0's proxy, on the same machine, with the same SDK and workload.

    python bench/java_sdk.py            # 20,000 messages of 1 KiB
    python bench/java_sdk.py --quick    # 2,000

The servers run one at a time, each alone on the machine: pocketmq (`pocketmq dev`, one process, its gRPC port in
the default permissive TLS mode) and Apache RocketMQ 5.5.0 (name server, broker and proxy JVMs from `make
apache-rocketmq`, bench/apache.py's flags scaled to this machine, the proxy in cluster mode as
`mqproxy` runs it). Against each, one JVM of the harness of tests/java_sdk (`make java-sdk`, Bench.java) with the
SDK's default settings (TLS on): 4 threads of blocking sends on one producer, then one SimpleConsumer receiving
batches of 32 and acking each message, each phase timed.

Prints a table, the target (pocketmq at least as fast: every ratio >= 1.0) and, last, one JSON object. Installs
nothing: a missing jar is reported and that server's figures are null.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)
sys.path.insert(1, str(_BENCH))

from apache import BENCH_STORE, BROKER_JVM, NAMESRV_JVM, PocketMQServer  # noqa: E402

from tests.apache.apache_proxy import ApacheProxy  # noqa: E402
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ, ApacheRocketMQUnavailable  # noqa: E402
from tests.java_sdk import java_sdk as js  # noqa: E402

PROXY_JVM = ("-Xms512m", "-Xmx512m", "-XX:+UseG1GC")
CLIENT_JVM = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC")
FIGURES = ("send_per_s", "send_p50_ms", "send_p99_ms", "receive_per_s", "cpu_ms_per_msg")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def sdk_bench(endpoint: str, namesrv: str, broker: str, count: int, threads: int) -> dict[str, Any]:
    """One JVM of Bench.java against ``endpoint``; its topic and group made first through the broker."""
    run_id = f"bench{uuid.uuid4().hex[:6]}"
    asyncio.run(js.prepare(namesrv, broker, run_id, {"bench": js.Needs("NORMAL", (js.Group("g"),))}))
    topic = js.topic(run_id, "bench")
    with tempfile.TemporaryDirectory(prefix="java-sdk-bench-") as home:
        argv = ["java", *CLIENT_JVM, f"-Duser.home={home}", f"-Djava.io.tmpdir={home}", "-cp", js.classpath(),
                "io.pocketmq.javasdk.Bench",
                "--endpoint", endpoint, "--run", topic, "--count", str(count), "--threads", str(threads)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"Bench.java exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


Runner = Callable[[str, str, str, int, int], dict[str, Any]]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, every thread counted (/proc/<pid>/stat's utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_pocketmq(root: Path, count: int, threads: int, runner: Runner = sdk_bench,
                   proxy_mode: str | None = None) -> dict[str, Any]:
    """The run against `pocketmq dev` (its gRPC endpoint in ``proxy_mode``, else dev's default), with the CPU the
    pocketmq process spent per message sent and received: less sensitive to other load on the machine than the
    rates."""
    root.mkdir(parents=True, exist_ok=True)
    server = PocketMQServer(root, extra_args=("--proxy-mode", proxy_mode) if proxy_mode else ())
    server.start()
    try:
        broker = f"127.0.0.1:{server.argv[server.argv.index('--broker-port') + 1]}"
        (pid,) = server.pids()
        cpu = cpu_seconds(pid)
        result = runner(f"127.0.0.1:{server.grpc_port}", server.namesrv_addr, broker, count, threads)
        result["cpu_ms_per_msg"] = (cpu_seconds(pid) - cpu) * 1e3 / count
        return result
    finally:
        server.stop()


def bench_apache(root: Path, count: int, threads: int, runner: Runner = sdk_bench) -> dict[str, Any]:
    with (ApacheRocketMQ(root / "apache", version=V5, jvm=BROKER_JVM, namesrv_jvm=NAMESRV_JVM, **BENCH_STORE) as rmq,
          ApacheProxy(rmq, jvm=PROXY_JVM) as proxy):
        return runner(proxy.endpoint, rmq.namesrv_addr, rmq.broker_addr, count, threads)

def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=["pocketmq", "apache"], help="run against this server alone")
    parser.add_argument("--proxy-mode", choices=["local", "cluster"],
                        help="pocketmq's gRPC endpoint reaches its broker in-process (local, `pocketmq dev`'s default)"
                             " or over a socket (cluster)")


def servers(args: argparse.Namespace) -> list[tuple[str, Callable[..., dict[str, Any]]]]:
    """(name, bench) of the servers to run against, as the options say."""
    def pocketmq(root: Path, count: int, threads: int, runner: Runner) -> dict[str, Any]:
        return bench_pocketmq(root, count, threads, runner, args.proxy_mode)

    chosen = [("pocketmq", pocketmq), ("apache-5.5.0", bench_apache)]
    return [(n, b) for n, b in chosen if args.only is None or n.startswith(args.only)]


def report(sdk: str, results: dict[str, dict[str, Any] | None], notes: dict[str, str], count: int, threads: int,
           before: str) -> None:
    """The table, the ratios against the target and the JSON line, for either SDK's run."""
    print(f"{sdk} against pocketmq and Apache RocketMQ 5.5.0's proxy: {count:,} messages of 1 KiB, {threads} "
          f"sending threads; load average before {before}, after {load_average()}")
    print(f"{'':<16}" + "".join(f"{k:>16}" for k in FIGURES))
    for name, r in results.items():
        print(f"{name:<16}" + "".join(f"{(r or {}).get(k, float('nan')):>16.{3 if 'cpu' in k else 1}f}"
                                      for k in FIGURES))
    ours, theirs = results.get("pocketmq"), results.get("apache-5.5.0")
    ratios: dict[str, float | None] = {}
    if ours and theirs:
        ratios = {"send_per_s": ours["send_per_s"] / theirs["send_per_s"],
                  "send_p50_ms": theirs["send_p50_ms"] / ours["send_p50_ms"],
                  "receive_per_s": ours["receive_per_s"] / theirs["receive_per_s"]}
        print("\npocketmq / apache-5.5.0 (target: >= 1.0 each; for latency Apache's over pocketmq's):")
        for key, value in ratios.items():
            print(f"  {key:<16}{value:.2f}")
    print(json.dumps({"results": results, "ratios": ratios, "messages": count, "threads": threads,
                      "skipped": notes}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 messages")
    parser.add_argument("--messages", type=int, help="messages sent and received (default 20,000)")
    parser.add_argument("--threads", type=int, default=4, help="sending threads (default 4)")
    add_server_options(parser)
    args = parser.parse_args()
    count = args.messages or (2_000 if args.quick else 20_000)
    results: dict[str, dict[str, Any] | None] = {}
    notes: dict[str, str] = {}
    before = load_average()
    with tempfile.TemporaryDirectory(prefix="pocketmq-java-sdk-") as tmp:
        for name, bench in servers(args):
            try:
                results[name] = bench(Path(tmp) / name, count, args.threads, sdk_bench)
            except (ApacheRocketMQUnavailable, js.JavaSdkUnavailable, RuntimeError, OSError,
                    subprocess.SubprocessError) as e:
                results[name] = None
                notes[name] = f"{type(e).__name__}: {e}"[:500]
                print(f"{name}: {notes[name]}", file=sys.stderr)
    report(f"Java SDK {js.SDK_VERSION} (gRPC, TLS)", results, notes, count, args.threads, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
