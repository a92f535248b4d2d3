"""A real Apache RocketMQ name server and broker (and, for 5.x, its gRPC proxy) as subprocesses, for the suite.

The jars come from Maven Central through `make apache-rocketmq` (tests/apache/pom.xml), one folder per version
under `.apache-rocketmq/<version>/lib`. Each server gets a folder of its own as ROCKETMQ_HOME and user.home (the
4.9.x logback files it insists on, its store, its KV config, its logs), free loopback ports, small heaps and small
mapped files, so it is ready in seconds and leaves nothing behind.

Readiness is what the servers print: "The Name Server boot success" and, since 4.x's BrokerStartup prints "The
broker[...] boot success" only after BrokerController.start() has registered with the name server, a 4.x broker that
printed it is in the name server's route table; a 5.x broker is ready once the name server lists it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from tests.apache import mqadmin_runner

REPO = Path(__file__).resolve().parents[2]
JARS = REPO / ".apache-rocketmq"
LOGBACK = Path(__file__).with_name("conf") / "logback.xml"
MQADMIN_RUNNER = JARS / "mqadmin-runner"  # tests/apache/java/MqadminRunner.java, compiled by `make apache-rocketmq`

# The versions the suite runs: the newest 4.x whose servers are on Maven Central, and the newest 5.x whose name
# server, broker, proxy and tools are all there (Makefile's APACHE_ROCKETMQ_VERSIONS must list the same).
V4 = "4.9.7"
V5 = "5.5.0"

# Java 17 closes the JDK internals RocketMQ's mapped files use (the cleaner of a direct buffer), and 5.4+ reflects
# into java.lang; the proxy's gRPC netty wants java.nio.
JAVA17_OPENS = (
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
)
# Test-sized JVMs: a small heap, the serial collector and C1 only start in a fraction of the default's time on
# two cores. The bench starts them with its own flags. Direct memory gets room of its own (by default its limit is the
# heap's 256 MiB): 5.x's timer wheel, which also brings POP's checkpoints back, takes a 4 MiB direct buffer per
# thread, and at the limit it failed with OutOfMemoryError and the broker never redelivered an unacked message.
TEST_JVM = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData")

# Small files: a 1 GiB commit log and 420 MB index files would not fit a test's budget.
SMALL_STORE = {
    "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 30_000),
    "maxIndexNum": "10000",
    "maxHashSlotNum": "4000",
    "mappedFileSizeTimerLog": str(4 * 1024 * 1024),
    "timerWheelEnable": "true",
}

# Two 5.x services that would burn a test's CPU for nothing (bench/README.md, "AppCDS for the suite's Apache JVMs"):
# TransactionMetricsFlushService spins on one core until its first interval has passed (10 s by default, from every
# start), and TimerFlushService compares the whole timer wheel (38 MB) with its file byte by byte each interval:
# about 0.75 CPU-s a pass on C1, for as long as the broker runs (7.5 % of a core at 10 s). The test brokers' stores
# are thrown away, so it passes once at start and then every 10 minutes. 4.9.x ignores both keys. A test whose 5.x
# store is read after the broker stops sets the flush interval back (test_store_pop_timers_5.py).
QUIET_5X = {
    "transactionMetricFlushInterval": "1000",
    "timerFlushIntervalMs": "600000",
}

BOOT_TIMEOUT = 120.0


class ApacheRocketMQUnavailable(RuntimeError):
    """The jars or Java are missing: the one-line reason, never a skip."""


def jar_dir(version: str) -> Path:
    lib = JARS / version / "lib"
    if not any(lib.glob("rocketmq-broker-*.jar")):
        raise ApacheRocketMQUnavailable(
            f"Apache RocketMQ {version} jars are not in {lib}: run `make apache-rocketmq` (Maven Central)"
        )
    if shutil.which("java") is None:
        raise ApacheRocketMQUnavailable("no `java` on PATH: Apache RocketMQ needs Java 17")
    return lib


def free_port(*offsets: int) -> int:
    """A port P such that P + each offset is free on loopback (the broker also listens on P - 2 and P + 1)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + min(offsets, default=0) < 1024 or port + max(offsets, default=0) > 65535:
            continue
        if all(_is_free(port + offset) for offset in offsets):
            return port
    raise RuntimeError("no free port block on loopback")


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()), encoding="utf-8")


@dataclass
class JavaProcess:
    """One JVM with its output in a file; ``wait_for`` reads the file until a line appears or the JVM dies."""

    name: str
    args: list[str]
    home: Path
    proc: subprocess.Popen[bytes] | None = None
    out: Path = field(init=False)

    def __post_init__(self) -> None:
        self.out = self.home / f"{self.name}.out"

    def start(self, env: dict[str, str]) -> None:
        with open(self.out, "wb") as sink:
            self.proc = subprocess.Popen(
                self.args, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=self.home
            )

    def start_ready(self, env: dict[str, str], ready: str) -> None:
        """Start, and wait until the output shows ``ready`` (raising if the process exits first)."""
        self.start(env)
        self.wait_for(ready)

    def output(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace") if self.out.exists() else ""

    def wait_for(self, marker: str, timeout: float = BOOT_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while marker not in self.output():
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not ready in {timeout:.0f}s:\n{self.output()[-3000:]}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ServerProcess:
    """A server that runs as processes (JavaProcess: output in a file) until stopped: ``start`` returns it ready
    (``launch`` starts one process and waits for its ready line), and a ``with`` block starts it and stops it, also
    when the start failed half-way. ApacheProxy and pocketmq_process's servers are one process; ApacheRocketMQ,
    two, stops both. The end of the ``with`` block stops it with ``exit_signal``: SIGTERM, an orderly shutdown
    (for a store read after), unless ``killed_at_exit`` made it SIGKILL (for a store thrown away: an orderly
    shutdown waits out the broker's service threads, about 6 s for a 4.9.7 broker and 16-27 s for a 5.5.0 one
    on a shared 2-core machine)."""

    process: JavaProcess | None = None
    exit_signal: int = signal.SIGTERM

    def start(self) -> Self:
        raise NotImplementedError

    def killed_at_exit(self) -> Self:
        """The end of the ``with`` block kills it (SIGKILL): what it stored is thrown away."""
        self.exit_signal = signal.SIGKILL
        return self

    def launch(self, process: JavaProcess, env: dict[str, str], ready: str) -> None:
        """Start ``process`` and wait until its output shows ``ready`` (raising if it exits first)."""
        self.process = process
        process.start_ready(env, ready)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            self.process.stop(sig)

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop(self.exit_signal)
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop(self.exit_signal)


class ApacheRocketMQ(ServerProcess):
    """A name server and one master broker of Apache RocketMQ ``version`` under ``root``.

    ``broker_props`` are broker.conf keys (``aclEnable``, ``brokerName``...). ``jvm`` replaces the test JVM flags
    (the bench passes the distribution's own, scaled to the machine), ``namesrv_jvm`` the name server's if they
    differ. ``namesrv_addr`` joins an existing name server instead of starting one (a mixed cluster);
    ``namesrv_props`` are namesrv.conf keys (5.x's ``scanNotActiveBrokerInterval``...).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        version: str = V4,
        jvm: tuple[str, ...] = TEST_JVM,
        namesrv_addr: str | None = None,
        namesrv_jvm: tuple[str, ...] | None = None,
        namesrv_props: dict[str, str] | None = None,
        **broker_props: str,
    ) -> None:
        self.version = version
        self.home = Path(root)
        self.jvm = jvm
        self.namesrv_jvm = jvm if namesrv_jvm is None else namesrv_jvm
        self.lib = jar_dir(version)
        self._external_namesrv = namesrv_addr
        self.namesrv_port = 0 if namesrv_addr is None else int(namesrv_addr.rsplit(":", 1)[1])
        self.broker_port = 0
        self.broker_props = broker_props
        self.namesrv_props = dict(namesrv_props or {})
        self.namesrv: JavaProcess | None = None
        self.broker: JavaProcess | None = None
        self._runners: list[mqadmin_runner.MqadminRunner] = []  # every mqadmin runner started, to close
        self._idle_runners: list[mqadmin_runner.MqadminRunner] = []
        self._runners_lock = threading.Lock()

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def namesrv_addr(self) -> str:
        return self._external_namesrv or f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def broker_name(self) -> str:
        return self.broker_props.get("brokerName", "broker-a")

    @property
    def cluster_name(self) -> str:
        return self.broker_props.get("brokerClusterName", "DefaultCluster")

    @property
    def store_dir(self) -> Path:
        return self.home / "store"

    @property
    def kind(self) -> str:
        return f"apache-{self.version}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["ROCKETMQ_HOME"] = str(self.home)
        return env

    def java(self, main: str, *args: str, jvm: tuple[str, ...] | None = None, classpath: str = "") -> list[str]:
        props = (f"-Drocketmq.home.dir={self.home}", f"-Duser.home={self.home}", "-Drocketmq.client.logUseSlf4j=true",
                 f"-Djava.io.tmpdir={self.home / 'tmp'}")
        return [
            "java",
            *(self.jvm if jvm is None else jvm),
            *JAVA17_OPENS,
            *props,
            "-cp",
            f"{self.lib}/*{classpath}",
            main,
            *args,
        ]

    def _prepare_home(self) -> None:
        (self.home / "conf").mkdir(parents=True, exist_ok=True)
        (self.home / "logs").mkdir(exist_ok=True)
        # RocksDB's JNI library (12 MB a start) and netty's self-signed certificates are written to java.io.tmpdir
        # and never removed: in the fixture's folder they go with it.
        (self.home / "tmp").mkdir(exist_ok=True)
        for name in ("namesrv", "broker", "tools"):
            shutil.copyfile(LOGBACK, self.home / "conf" / f"logback_{name}.xml")

    def prepare_tools(self) -> ApacheRocketMQ:
        """Only mqadmin of this version (its home and logback file), no servers: ``mqadmin(..., "-n", addr)``."""
        self._prepare_home()
        return self

    def broker_conf(self) -> dict[str, str]:
        conf = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": "broker-a",
            "brokerId": "0",
            "namesrvAddr": self.namesrv_addr,
            "brokerIP1": "127.0.0.1",
            "listenPort": str(self.broker_port),
            "bindAddress": "127.0.0.1",
            "storePathRootDir": str(self.store_dir),
            "storePathCommitLog": str(self.store_dir / "commitlog"),
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            "enablePropertyFilter": "true",
            "traceTopicEnable": "true",
            "aclEnable": "false",
            **SMALL_STORE,
            **QUIET_5X,
        }
        conf.update(self.broker_props)
        return conf

    def start(self) -> ApacheRocketMQ:
        self._prepare_home()
        if self._external_namesrv is None:
            self.start_namesrv()
        self.start_broker()
        return self

    def start_namesrv(self) -> None:
        self.namesrv_port = free_port(0)
        conf = self.home / "namesrv.conf"
        write_properties(
            conf,
            {
                "listenPort": str(self.namesrv_port),
                "bindAddress": "127.0.0.1",
                "kvConfigPath": str(self.home / "namesrv" / "kvConfig.json"),
                **self.namesrv_props,
            },
        )
        argv = self.java("org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(conf), jvm=self.namesrv_jvm)
        self.namesrv = JavaProcess("namesrv", argv, self.home)
        self.namesrv.start_ready(self.env(), "The Name Server boot success")

    def start_broker(self) -> None:
        chosen = self.broker_port == 0
        for attempt in range(3):
            if chosen:
                self.broker_port = free_port(-2, 0, 1)
            conf = self.home / "broker.conf"
            write_properties(conf, self.broker_conf())
            argv = self.java("org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf))
            self.broker = JavaProcess("broker", argv, self.home)
            try:
                self.broker.start_ready(self.env(), "boot success")
                break
            except RuntimeError as e:
                # The JVM binds its HA port (P + 1) seconds after the probe found it free, and the suite's other
                # worker binds ephemeral ports meanwhile: another block of ports, when the ports were ours to pick.
                if not chosen or "Address already in use" not in str(e) or attempt == 2:
                    raise
        self._wait_ready()

    def _wait_ready(self) -> None:
        """5.x's BrokerStartup may print "boot success" before the name server has answered its first
        registration (4.x's prints it after): wait until the name server lists the broker at its address. And
        4.9.7 fails GET_BROKER_RUNTIME_INFO (mqadmin's clusterList and brokerStatus) with NoSuchElementException
        until its store's first sampling, about a second after its start: wait until it answers."""

        async def listed() -> None:
            deadline = time.monotonic() + BOOT_TIMEOUT
            while True:
                try:
                    async with MQAdminExt(self.namesrv_addr, protocol="rocketmq") as admin:
                        info = await admin.examine_broker_cluster_info()
                        data = info.broker_addr_table.get(self.broker_name)
                        if data is not None and self.broker_addr in data.broker_addrs.values():
                            if self.broker_props.get("aclEnable") != "true":  # (under ACL it asks for keys)
                                await admin.fetch_broker_runtime_stats(self.broker_addr)
                            return
                except Exception:  # not answering (or not yet as it will): asked again until the deadline
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"broker {self.broker_name} not listed by {self.namesrv_addr} or not answering")
                await asyncio.sleep(0.05)

        # In a thread of its own: the caller may be a test running on an event loop.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, listed()).result()

    def restart_broker(self, sig: int = signal.SIGTERM) -> None:
        """Stop the broker (SIGTERM: its shutdown hook; SIGKILL: a crash) and start it on the same store and port."""
        assert self.broker is not None
        self.broker.stop(sig)
        self.broker.out.rename(self.home / f"broker-{int(time.time() * 1000)}.out")
        self.start_broker()

    def mqadmin(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Apache RocketMQ's own mqadmin (MQAdminStartup) with ``args``; ``-n`` is added unless given. It runs in a
        JVM kept for the next command (mqadmin_runner), one per command running at the same time, and answers
        what a JVM of its own would (its stdout, stderr and exit code)."""
        argv = list(args)
        if "-n" not in argv:
            argv += ["-n", self.namesrv_addr]
        with self._runners_lock:
            runner = self._idle_runners.pop() if self._idle_runners else None
        if runner is None:
            runner = self._start_runner()
        try:
            return runner.run(argv, timeout)
        finally:
            if runner.alive:
                with self._runners_lock:
                    self._idle_runners.append(runner)

    def _start_runner(self) -> mqadmin_runner.MqadminRunner:
        if not (MQADMIN_RUNNER / "io" / "pocketmq" / "tests" / "MqadminRunner.class").exists():
            raise ApacheRocketMQUnavailable(
                f"the mqadmin runner is not built in {MQADMIN_RUNNER}: run `make apache-rocketmq`")
        with self._runners_lock:
            log = self.home / f"mqadmin-runner-{len(self._runners)}.err"
            runner = mqadmin_runner.MqadminRunner(
                self.java(mqadmin_runner.MAIN, jvm=TEST_JVM, classpath=f"{os.pathsep}{MQADMIN_RUNNER}"),
                self.env(), self.home, log)
            self._runners.append(runner)
        return runner

    def close_tools(self) -> None:
        """End the mqadmin runners (their JVMs also end with the Python process that started them)."""
        with self._runners_lock:
            runners, self._runners, self._idle_runners = self._runners, [], []
        for runner in runners:
            runner.close()

    def pids(self) -> list[int]:
        return [p.proc.pid for p in (self.namesrv, self.broker) if p is not None and p.proc is not None]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGKILL for a server whose store is thrown away: a 5.x broker's orderly shutdown takes seconds."""
        for proc in (self.broker, self.namesrv):
            if proc is not None:
                proc.stop(sig)
        self.close_tools()


class ApacheNamesrv(ApacheRocketMQ):
    """Apache RocketMQ ``version``'s name server alone: for tests of what it does with other brokers' routes."""

    def start(self) -> ApacheNamesrv:
        self._prepare_home()
        self.start_namesrv()
        return self
