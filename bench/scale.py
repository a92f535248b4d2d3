"""Scale benchmark: 10,000 topics on one broker.

    python bench/scale.py               # 10,000 topics of 8 queues, 50 push consumers in 5 processes (~1-2 min)
    python bench/scale.py --topics 2000 --consumers 10 --processes 2     # a quick look

Phases, each printed with its figure and target:

  1. create   one producer (32 sends in flight) sends one message to each of N new topics: the broker
              auto-creates each (8 queues) and tells the name server. Figure: topics created per second.
  2. restart  the broker stops cleanly (SIGTERM) and starts again on the same store. Figure: seconds from the
              new process's spawn until it listens and has registered (Python's start-up included).
  3. join     C push consumers of one group in P processes subscribe to one of the topics, one after another.
              Figure: seconds from the last join until the group's assignment is a partition of the topic's
              queues (each queue owned by exactly one consumer) and stays so for a second.

  Throughout: the broker's RSS (the largest VmRSS sampled), and the name server's longest event-loop block
  while brokers register with it (a probe in the name server process sleeps 1 ms in a loop and records how
  late it wakes).

The servers run as processes of their own (bench/scale.py runs its name server, with the probe, by calling
itself with --serve-namesrv); store and logs live in a temp dir removed at the end. The last line is one JSON
object with every figure. bench/README.md has the figures measured so far.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)

TARGETS = {
    "topics_per_s": (">=", 1000.0),
    "restart_s": ("<", 3.0),
    "broker_rss_mb": ("<", 250.0),
    "namesrv_max_loop_block_ms": ("<", 50.0),
    "rebalance_converge_s": ("<", 2.0),
}
QUEUES = 8
IN_FLIGHT = 32


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- child modes ------------------------------------------------------------------------------------------


def serve_namesrv(port: int, probe_file: str) -> int:
    """A name server plus a loop-lag probe: every 0.2 s, one line "<wall time> <max lag ms in the window>"."""
    from pocketmq.namesrv.config import NamesrvConfig
    from pocketmq.namesrv.namesrv_controller import NamesrvController
    from pocketmq.runtime import run

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        ns = NamesrvController(NamesrvConfig(listen_port=port))
        await ns.start()
        print("namesrv ready", flush=True)
        with open(probe_file, "w", buffering=1) as out:
            window_end = time.monotonic() + 0.2
            worst = 0.0
            while not stop.is_set():
                before = time.monotonic()
                await asyncio.sleep(0.001)
                worst = max(worst, time.monotonic() - before - 0.001)
                if time.monotonic() >= window_end:
                    out.write(f"{time.time():.3f} {worst * 1000:.2f}\n")
                    worst, window_end = 0.0, time.monotonic() + 0.2
        await ns.shutdown()

    run(main())
    return 0


def serve_consumers(namesrv: str, topic: str, group: str, first: int, count: int) -> int:
    """``count`` push consumers, started one by one; prints JSON lines: joins and assignment changes."""
    from pocketmq.client import ConsumeConcurrentlyStatus, PushConsumer
    from pocketmq.runtime import run

    def emit(**kw: Any) -> None:
        print(json.dumps({"t": time.time(), **kw}), flush=True)

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

        async def no_op(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumers: list[PushConsumer] = []
        last: dict[int, list[int]] = {}
        try:
            for i in range(first, first + count):
                c = PushConsumer(group, namesrv, instance_name=f"scale-{i}")
                c.subscribe(topic, "*")
                c.register_message_listener(no_op)
                await c.start()
                consumers.append(c)
                emit(joined=i)
            while not stop.is_set():
                for i, c in enumerate(consumers, first):
                    queues = sorted(mq.queue_id for mq in c.assigned_queues() if mq.topic == topic)
                    if last.get(i) != queues:
                        last[i] = queues
                        emit(consumer=i, queues=queues)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.01)
        finally:
            for c in consumers:
                await c.shutdown()

    run(main())
    return 0


# --- the run ----------------------------------------------------------------------------------------------


class Proc:
    """A child process in its own session; its output goes to a log file (or is read line by line)."""

    def __init__(self, argv: list[str], log: Path, pipe: bool = False) -> None:
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 (closed in stop())
        # Children import pocketmq from this checkout, whatever is installed.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_BENCH.parent),
                                                                         os.environ.get("PYTHONPATH")]))}
        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if pipe else self._out,
                                      stderr=self._out, start_new_session=True, env=env)

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.log.read_bytes():
            if self.popen.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_bytes()[-3000:].decode(errors="replace")
                raise RuntimeError(f"{self.popen.args[:4]} did not print {text!r} (exit {self.popen.poll()}):\n{tail}")
            time.sleep(0.005)

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.popen.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except FileNotFoundError:
            pass
        return 0.0

    def cpu_s(self, system: bool = True) -> float:
        """User (+ system) CPU seconds this process used so far."""
        try:
            with open(f"/proc/{self.popen.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            return 0.0
        return (int(fields[11]) + (int(fields[12]) if system else 0)) / os.sysconf("SC_CLK_TCK")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self._out.close()


class RssSampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.proc: Proc | None = None
        self.max_mb = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            if self.proc is not None:
                self.max_mb = max(self.max_mb, self.proc.rss_mb())


def start_broker(tmp: Path, namesrv: str, port: int, log: Path) -> Proc:
    conf = tmp / "broker.conf"
    conf.write_text(
        f"brokerIP1=127.0.0.1\nlistenPort={port}\nnamesrvAddr={namesrv}\nstorePathRootDir={tmp / 'store'}\n"
        f"defaultTopicQueueNums={QUEUES}\nautoCreateTopicEnable=true\n"
    )
    verbose = ["-v"] if os.environ.get("SCALE_VERBOSE") else []
    return Proc([sys.executable, "-m", "pocketmq", *verbose, "broker", "-c", str(conf)], log)


async def create_topics(namesrv: str, topics: list[str]) -> float:
    """Send one message to each topic (new: auto-created), IN_FLIGHT at a time; returns the seconds taken."""
    from pocketmq.client import Message, Producer

    producer = Producer("scale-producer", namesrv, default_topic_queue_nums=QUEUES)
    await producer.start()
    try:
        todo = iter(topics)

        async def worker() -> None:
            for topic in todo:
                await producer.send(Message(topic, b"x"))

        begin = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        return time.perf_counter() - begin
    finally:
        await producer.shutdown()


async def wait_dispatched(broker_addr: str, timeout: float = 300.0) -> float:
    """Seconds until the broker has dispatched its whole commit log (dispatchBehindBytes 0): a send is answered
    once the commit log holds it, the consume-queue entry (for a new queue: its directory and file) follows."""
    from pocketmq.remoting.admin_body import KVTable
    from pocketmq.remoting.client import RemotingClient
    from pocketmq.remoting.codes import RequestCode, ResponseCode
    from pocketmq.remoting.command import RemotingCommand

    client = RemotingClient()
    begin = time.perf_counter()
    try:
        while time.perf_counter() - begin < timeout:
            resp = await client.invoke(broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0)
            if resp.code == ResponseCode.SUCCESS and resp.decode_body(KVTable).table["dispatchBehindBytes"] == "0":
                break
            await asyncio.sleep(0.02)
    finally:
        await client.close()
    return time.perf_counter() - begin


def converge(lines: list[dict[str, Any]], consumers: int) -> tuple[float | None, float]:
    """(seconds from the last join to a partition that held until the end (None: never), last join time)."""
    joins = [e["t"] for e in lines if "joined" in e]
    last_join = max(joins) if len(joins) == consumers else float("inf")
    owned: dict[int, list[int]] = {}
    partition_since: float | None = None
    for e in sorted((e for e in lines if "consumer" in e), key=lambda e: e["t"]):
        owned[e["consumer"]] = e["queues"]
        flat = [q for qs in owned.values() for q in qs]
        ok = len(flat) == QUEUES and set(flat) == set(range(QUEUES))
        if ok and partition_since is None:
            partition_since = e["t"]
        elif not ok:
            partition_since = None
    if partition_since is None or last_join == float("inf"):
        return None, last_join
    return max(0.0, partition_since - last_join), last_join


def run_consumers(namesrv: str, tmp: Path, topic: str, consumers: int, processes: int) -> float | None:
    group = "scale-group"
    per = [consumers // processes + (1 if i < consumers % processes else 0) for i in range(processes)]
    procs: list[Proc] = []
    lines: list[dict[str, Any]] = []
    lock = threading.Lock()

    def reader(p: Proc) -> None:
        assert p.popen.stdout is not None
        for raw in p.popen.stdout:
            with contextlib.suppress(ValueError):
                e = json.loads(raw)
                with lock:
                    lines.append(e)

    first = 0
    threads = []
    for i, n in enumerate(per):
        p = Proc([sys.executable, __file__, "--serve-consumers", namesrv, topic, group, str(first), str(n)],
                 tmp / f"consumers-{i}.log", pipe=True)
        first += n
        procs.append(p)
        t = threading.Thread(target=reader, args=(p,), daemon=True)
        t.start()
        threads.append(t)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.2)
            with lock:
                seconds, last_join = converge(list(lines), consumers)
            # Converged and held for a second (or joined long ago and never converged: give up after 20 s).
            if seconds is not None and time.time() - (last_join + seconds) > 1.0:
                return seconds
            if last_join != float("inf") and time.time() - last_join > 20:
                return None
        return None
    finally:
        for p in procs:
            p.stop()
        with open(tmp / "join-events.jsonl", "w") as out:  # for a look at a run kept with --workdir
            out.writelines(json.dumps(e) + "\n" for e in lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--consumers", type=int, default=50)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--workdir", help="keep store and logs in this (new) folder instead of a temp one")
    parser.add_argument("--serve-namesrv", nargs=2, metavar=("PORT", "PROBE_FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--serve-consumers", nargs=5, metavar=("NS", "TOPIC", "GROUP", "FIRST", "COUNT"),
                        help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.serve_namesrv:
        return serve_namesrv(int(args.serve_namesrv[0]), args.serve_namesrv[1])
    if args.serve_consumers:
        ns, topic, group, first, count = args.serve_consumers
        return serve_consumers(ns, topic, group, int(first), int(count))

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    figures: dict[str, Any] = {"topics": args.topics, "queues": QUEUES, "consumers": args.consumers,
                               "processes": args.processes}
    sampler = RssSampler()
    sampler.start()
    if args.workdir:
        os.makedirs(args.workdir)
    with (contextlib.nullcontext(args.workdir) if args.workdir
          else tempfile.TemporaryDirectory(prefix="pocketmq-scale-")) as tmp_name:
        tmp = Path(tmp_name)
        ns_port, broker_port = free_port(), free_port()
        namesrv = f"127.0.0.1:{ns_port}"
        probe = tmp / "probe.txt"
        ns = Proc([sys.executable, __file__, "--serve-namesrv", str(ns_port), str(probe)], tmp / "namesrv.log")
        broker: Proc | None = None
        try:
            ns.wait_for("namesrv ready")
            broker = start_broker(tmp, namesrv, broker_port, tmp / "broker-1.log")
            broker.wait_for("listening on")
            sampler.proc = broker
            topics = [f"scale-{i:05d}" for i in range(args.topics)]
            window_begin = time.time()
            measure_create(figures, ns, broker, namesrv, f"127.0.0.1:{broker_port}", topics)

            print("restart ...", file=sys.stderr, flush=True)
            broker.stop()
            begin = time.perf_counter()
            broker = start_broker(tmp, namesrv, broker_port, tmp / "broker-2.log")
            sampler.proc = broker
            broker.wait_for("listening on", timeout=300)
            figures["restart_s"] = round(time.perf_counter() - begin, 2)
            time.sleep(0.5)  # the probe's last window covers the registration after the restart
            figures["namesrv_max_loop_block_ms"] = max_loop_block_ms(probe, window_begin)

            print(f"join: {args.consumers} push consumers in {args.processes} processes ...", file=sys.stderr,
                  flush=True)
            converged = run_consumers(namesrv, tmp, topics[0], args.consumers, args.processes)
            figures["rebalance_converge_s"] = None if converged is None else round(converged, 3)
            figures["broker_rss_mb"] = round(max(sampler.max_mb, broker.rss_mb()), 1)
        finally:
            sampler.done.set()
            if broker is not None:
                broker.stop()
            ns.stop()
    report(args, figures)
    return 0


def measure_create(figures: dict[str, Any], ns: Proc, broker: Proc, namesrv: str, broker_addr: str,
                   topics: list[str]) -> None:
    """Topics created by sending to them: their rate, and the CPU each process spent a topic."""
    from pocketmq.runtime import run

    print(f"create: {len(topics):,} topics by sending ...", file=sys.stderr, flush=True)
    cpu = {"broker": broker.cpu_s(), "broker_user": broker.cpu_s(system=False), "namesrv": ns.cpu_s(),
           "client": time.process_time()}
    seconds = run(create_topics(namesrv, topics))
    used = {"namesrv": ns.cpu_s(), "client": time.process_time()}
    # The broker's CPU once it has also dispatched what it acknowledged (new queues' files included).
    figures["dispatch_lag_s"] = round(run(wait_dispatched(broker_addr)), 2)
    used["broker"], used["broker_user"] = broker.cpu_s(), broker.cpu_s(system=False)
    # CPU per topic created, by process: what a busy machine does not distort much.
    for who, now in used.items():
        figures[f"create_cpu_ms_per_topic_{who}"] = round((now - cpu[who]) * 1000 / len(topics), 3)
    figures["topics_per_s"] = round(len(topics) / seconds)
    figures["create_s"] = round(seconds, 2)
    figures["broker_rss_after_create_mb"] = round(broker.rss_mb(), 1)


def max_loop_block_ms(probe: Path, since: float) -> float | None:
    """The longest the name server's event loop was blocked in a probe window since ``since`` (epoch seconds)."""
    return max((float(ms) for t, ms in (line.split() for line in probe.read_text().splitlines())
                if float(t) >= since), default=None)


def report(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    print(f"\npocketmq scale: {args.topics:,} topics of {QUEUES} queues, {args.consumers} push consumers in "
          f"{args.processes} processes")
    met: dict[str, bool | None] = {}
    for key, (op, target) in TARGETS.items():
        v = figures.get(key)
        met[f"{key}_target_met"] = None if v is None else (v >= target if op == ">=" else v < target)
        print(f"  {key:<28}{'-' if v is None else v:>12}   target {op} {target:g}"
              f"   {'met' if met[f'{key}_target_met'] else 'NOT met'}")
    print(json.dumps({**figures, **met}))


if __name__ == "__main__":
    sys.exit(main())
