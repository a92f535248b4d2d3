"""pocketmq against Apache RocketMQ on the same machine, with the same clients.

    python bench/apache.py            # 50,000 messages per workload, 10 s of latency
    python bench/apache.py --quick    # 5,000 messages, 3 s of latency
    python bench/apache.py --contend  # beside cores - 1 CPU-bound processes
    python bench/apache.py --startup-only [--runs N] [--no-grpc]  # pocketmq's start alone, no JVMs: medians

The servers run one at a time, each alone on the machine while its workloads run: pocketmq (`pocketmq dev`, one
process) and Apache RocketMQ 4.9.7 and 5.5.0 (name server and broker JVMs from `make apache-rocketmq`, with
runbroker.sh's and runserver.sh's flags scaled to this machine: G1, 1 GiB broker heap, 256 MiB name server heap,
no pre-touch; 128 MiB commit log files). Against each:

- pocketmq's client in RocketMQ's native protocol: bench/e2e.py's workloads (a) sync send, (b) batch send,
  (c) consume, (d) latency at 1,000 msgs/s, and (e) push with 1 and 3 consumers;
- RocketMQ's Java client 4.9.8 (bench/java, built by `make bench`): sync send with 1 and with 8 threads, batch
  send, push consume and latency (JavaClientBench.java);
- time from spawn to ready (pocketmq: its "ready" line; Apache: the broker's "boot success" after the name
  server's) and peak resident memory (VmHWM of every process of the server).

Prints a table and, last, one JSON object; ratios are pocketmq over Apache RocketMQ (for latency, Apache's over
pocketmq's), so higher is better for pocketmq everywhere. Installs nothing: a missing jar is reported and that
server's figures are null.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)
sys.path.insert(1, str(_BENCH))

from e2e import WARMUP, PocketMQ, contention, free_port, push_consume, run_workloads  # noqa: E402

from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ, ApacheRocketMQUnavailable  # noqa: E402

JAVA_BENCH = _BENCH / "java" / "target"
JAVA_FLAGS = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC")
BROKER_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxDirectMemorySize=1g")
NAMESRV_JVM = ("-Xms256m", "-Xmx256m", "-XX:+UseG1GC")
BENCH_STORE = {"mappedFileSizeCommitLog": str(128 * 1024 * 1024), "maxIndexNum": "2000000",
               "maxHashSlotNum": "500000"}


def peak_rss_mib(pids: list[int]) -> float | None:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, every thread's) a process has used: less sensitive than wall time to the
    other processes of a loaded machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 3)


class PocketMQServer:
    """`pocketmq dev` as one process, as a developer runs it: with its modules' bytecode cached (in
    ``pycache``, PYTHONPYCACHEPREFIX), as after an install or a first run, even where PYTHONDONTWRITEBYTECODE is
    set (compiling every module from source took about a second of each start)."""

    def __init__(self, root: Path, pycache: Path | None = None, grpc: bool = True,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.namesrv_port, broker_port, self.grpc_port = free_port(), free_port(), free_port()
        self.namesrv_addr = f"127.0.0.1:{self.namesrv_port}"
        self.log = root / "pocketmq.log"
        self.argv = [sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", str(root / "pocketmq"),
                     "--namesrv-port", str(self.namesrv_port), "--broker-port", str(broker_port),
                     *(["--grpc-port", str(self.grpc_port)] if grpc else ["--no-grpc"]), *extra_args]
        self.grpc = grpc
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(pycache or root / "pycache")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env=self.env)
        deadline = time.monotonic() + 30
        while b"stops it cleanly" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pocketmq did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.005)
        if self.grpc and b"  gRPC:" not in self.log.read_bytes():  # (every endpoint counts, the gRPC one included)
            self.stop()
            raise RuntimeError(f"pocketmq started without its gRPC endpoint: {self.log.read_text()[-2000:]}")

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc else []

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)


def warm_bytecode(root: Path, pycache: Path) -> float:
    """One start and stop of `pocketmq dev` that writes its bytecode to ``pycache``; its spawn to ready, s."""
    root.mkdir(parents=True, exist_ok=True)
    srv = PocketMQServer(root, pycache)
    begin = time.monotonic()
    srv.start()
    try:
        return round(time.monotonic() - begin, 3)
    finally:
        srv.stop()


def java_client(namesrv: str, workload: str, topic: str, n: int, extra: int = 1) -> dict[str, Any]:
    cp = f"{JAVA_BENCH / 'java-client-bench-1.jar'}{os.pathsep}{JAVA_BENCH / 'lib'}/*"
    argv = ["java", *JAVA_FLAGS, "-Drocketmq.client.logUseSlf4j=true", "-cp", cp,
            "io.pocketmq.bench.JavaClientBench", namesrv, workload, topic, str(n), str(extra)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"Java client {workload} failed: {out.stderr[-1500:]}")
    return dict(json.loads(lines[-1]))


def run_python_client(namesrv: str, n: int, latency_s: float, prefix: str) -> dict[str, Any]:
    from pocketmq.runtime import run

    async def go() -> dict[str, Any]:
        async with PocketMQ(namesrv, "rocketmq") as system:
            out = await run_workloads(system, n, latency_s, prefix)
        for consumers in (1, 3):
            out[f"push_consume_{consumers}"] = await push_consume(namesrv, f"{prefix}-a", n + WARMUP, consumers,
                                                                  "rocketmq")
        return out

    return run(go())


def run_java_client(namesrv: str, n: int, latency_s: float, prefix: str) -> dict[str, Any]:
    return {
        "sync_send_1": java_client(namesrv, "send", f"{prefix}-j1", n, 1),
        "sync_send_8": java_client(namesrv, "send", f"{prefix}-j8", n, 8),
        "batch_send": java_client(namesrv, "batch", f"{prefix}-jb", n),
        "push_consume": java_client(namesrv, "push", f"{prefix}-j1", n + WARMUP),
        "latency": java_client(namesrv, "latency", f"{prefix}-jl", 0, max(1, int(latency_s))),
    }


def bench_server(name: str, srv: Any, n: int, latency_s: float, java: bool) -> dict[str, Any]:
    print(f"{name}: starting ...", file=sys.stderr, flush=True)
    begin = time.monotonic()
    srv.start()
    try:
        ready_s = time.monotonic() - begin
        idle_rss = peak_rss_mib(srv.pids())
        print(f"{name}: ready in {ready_s:.2f} s; pocketmq's client (native) ...", file=sys.stderr, flush=True)
        out: dict[str, Any] = {"ready_s": round(ready_s, 3), "rss_after_start_mib": idle_rss}
        out["python_client"] = run_python_client(srv.namesrv_addr, n, latency_s, "py")
        if java:
            print(f"{name}: RocketMQ's Java client ...", file=sys.stderr, flush=True)
            out["java_client"] = run_java_client(srv.namesrv_addr, n, latency_s, "java")
        out["peak_rss_mib"] = peak_rss_mib(srv.pids())
        return out
    finally:
        srv.stop()


# (client, workload, figure, higher is better)
ROWS = [
    ("python_client", "sync_send", "tps", True), ("python_client", "batch_send", "tps", True),
    ("python_client", "consume", "msgs_per_s", True), ("python_client", "push_consume_1", "msgs_per_s", True),
    ("python_client", "push_consume_3", "msgs_per_s", True), ("python_client", "latency", "p50_ms", False),
    ("python_client", "latency", "p99_ms", False),
    ("java_client", "sync_send_1", "tps", True), ("java_client", "sync_send_8", "tps", True),
    ("java_client", "batch_send", "tps", True), ("java_client", "push_consume", "msgs_per_s", True),
    ("java_client", "latency", "p50_ms", False), ("java_client", "latency", "p99_ms", False),
    ("java_client", "latency", "p999_ms", False),
]


def figure(result: dict[str, Any] | None, client: str, workload: str, key: str) -> Any:
    return ((result or {}).get(client) or {}).get(workload, {}).get(key)


def ratios(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for client, workload, key, higher in ROWS:
        a, b = figure(ours, client, workload, key), figure(theirs, client, workload, key)
        out[f"{client}.{workload}.{key}"] = (round(a / b if higher else b / a, 3) if a and b else None)
    for key in ("ready_s", "peak_rss_mib"):
        a, b = (ours or {}).get(key), (theirs or {}).get(key)
        out[key] = round(a / b, 3) if a and b else None  # lower is better: the target is <= 0.1
    return out


def print_table(results: dict[str, dict[str, Any] | None]) -> None:
    names = list(results)
    print(f"{'client / workload':<40}" + "".join(f"{n:>18}" for n in names))
    for client, workload, key, _ in ROWS:
        cells = "".join(f"{str(figure(results[n], client, workload, key)):>18}" for n in names)
        print(f"{client + ' ' + workload + ' ' + key:<40}{cells}")
    for key in ("ready_s", "rss_after_start_mib", "peak_rss_mib"):
        print(f"{key:<40}" + "".join(f"{str((results[n] or {}).get(key)):>18}" for n in names))


def startup_only(runs: int, grpc: bool = True) -> int:
    """`pocketmq dev` started and stopped ``runs`` times after a first start that caches its bytecode: spawn to
    ready and peak resident memory at ready (VmHWM), each run's figures and the medians (Apache RocketMQ's start
    is measured by the full run only)."""
    ready, rss, cpu = [], [], []
    with tempfile.TemporaryDirectory(prefix="pocketmq-startup-") as tmp:
        pycache = Path(tmp) / "pycache"
        first = warm_bytecode(Path(tmp) / "first", pycache)
        print(f"first run (compiling bytecode): ready in {first:.3f} s", file=sys.stderr, flush=True)
        for i in range(runs):
            (Path(tmp) / f"run-{i}").mkdir()
            srv = PocketMQServer(Path(tmp) / f"run-{i}", pycache, grpc)
            begin = time.monotonic()
            srv.start()
            try:
                ready.append(round(time.monotonic() - begin, 3))
                rss.append(peak_rss_mib(srv.pids()))
                cpu.append(cpu_seconds(srv.pids()[0]))
            finally:
                srv.stop()
            print(f"run {i + 1}: ready in {ready[-1]:.3f} s ({cpu[-1]:.2f} s of CPU), peak RSS {rss[-1]} MiB",
                  file=sys.stderr, flush=True)
    out = {"runs": runs, "grpc": grpc, "first_run_ready_s": first, "ready_s": ready, "peak_rss_at_ready_mib": rss,
           "cpu_s_at_ready": cpu, "median_ready_s": statistics.median(ready), "median_cpu_s": statistics.median(cpu),
           "median_peak_rss_at_ready_mib": statistics.median(r for r in rss if r is not None),
           "load_average": os.getloadavg()}
    print(f"pocketmq dev{'' if grpc else ' --no-grpc'}, {runs} runs: median spawn to ready "
          f"{out['median_ready_s']:.3f} s ({out['median_cpu_s']:.2f} s of CPU), median peak RSS at "
          f"ready {out['median_peak_rss_at_ready_mib']} MiB (load average {os.getloadavg()[0]:.2f})")
    print(json.dumps(out))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5,000 messages, 3 s of latency")
    parser.add_argument("--messages", type=int, help="messages per send workload (default 50,000)")
    parser.add_argument("--latency-seconds", type=float, help="paced phase length (default 10; 3 quick)")
    parser.add_argument("--versions", nargs="*", default=[V4, V5], help="Apache RocketMQ versions")
    parser.add_argument("--no-java", action="store_true", help="leave out RocketMQ's Java client")
    parser.add_argument("--contend", type=int, nargs="?", const=-1, default=0, metavar="K")
    parser.add_argument("--startup-only", action="store_true",
                        help="only pocketmq's start (spawn to ready, RSS at ready), --runs times; no JVMs")
    parser.add_argument("--runs", type=int, default=7, help="runs of --startup-only (default 7)")
    parser.add_argument("--no-grpc", action="store_true",
                        help="--startup-only of `pocketmq dev --no-grpc` (Apache's name server and broker serve no "
                             "gRPC either)")
    args = parser.parse_args()
    if args.startup_only:
        return startup_only(args.runs, grpc=not args.no_grpc)
    n = args.messages or (5_000 if args.quick else 50_000)
    latency_s = args.latency_seconds or (3.0 if args.quick else 10.0)
    if args.contend < 0:
        args.contend = max(1, (os.cpu_count() or 2) - 1)
    java = not args.no_java and (JAVA_BENCH / "java-client-bench-1.jar").exists()
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results: dict[str, dict[str, Any] | None] = {}
    notes: dict[str, str] = {} if java or args.no_java else {"java_client": "bench/java not built (make bench)"}
    with tempfile.TemporaryDirectory(prefix="pocketmq-apache-") as tmp, contention(args.contend):
        pycache = Path(tmp) / "pycache"
        warm_bytecode(Path(tmp) / "warm", pycache)
        servers: dict[str, Any] = {"pocketmq": lambda: PocketMQServer(Path(tmp), pycache)}
        for v in args.versions:
            servers[f"apache-{v}"] = lambda v=v: ApacheRocketMQ(
                Path(tmp) / f"apache-{v}", version=v, jvm=BROKER_JVM, namesrv_jvm=NAMESRV_JVM, **BENCH_STORE)
        for name, make in servers.items():
            try:
                results[name] = bench_server(name, make(), n, latency_s, java)
            except (ApacheRocketMQUnavailable, RuntimeError, subprocess.SubprocessError) as e:
                results[name] = None
                notes[name] = f"{type(e).__name__}: {e}"[:500]
                print(f"{name}: {notes[name]}", file=sys.stderr)
    print(f"pocketmq vs Apache RocketMQ: {n:,} messages of 128 B per workload, loopback"
          + (f", beside {args.contend} CPU-bound process(es)" if args.contend else ""))
    print_table(results)
    summary = {f"vs_{name}": ratios(results.get("pocketmq"), r) for name, r in results.items() if name != "pocketmq"}
    for name, r in summary.items():
        print(f"\npocketmq / {name[3:]} (targets: >= 1.0 per workload; ready_s and peak_rss_mib <= 0.1):")
        for key, value in r.items():
            print(f"  {key:<44}{value}")
    print(json.dumps({"results": results, "ratios": summary, "messages": n, "latency_seconds": latency_s,
                      "contend": args.contend, "skipped": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
