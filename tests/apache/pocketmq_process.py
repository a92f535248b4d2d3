"""pocketmq's name server and broker as subprocesses (`python -m pocketmq namesrv|broker`), beside Apache RocketMQ's.

A process of its own, as Apache's servers are, so a test can kill -9 or SIGSTOP it like them. Ready is what they
print: the name server its address, the broker its address once BrokerController.start() has registered.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from tests.apache.apache_rocketmq import REPO, JavaProcess, ServerProcess, free_port, write_properties

# Test-sized stores, the same file sizes as ApacheRocketMQ's SMALL_STORE, so either side reads the other's store.
SMALL_STORE = {
    "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 30_000),
    "maxIndexNum": "10000",
    "maxHashSlotNum": "4000",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


class PocketMQProcess(JavaProcess):
    """A pocketmq server process (JavaProcess's output file and readiness wait serve any process)."""

    def pause(self) -> None:
        """SIGSTOP: the process keeps its connections open and says nothing (a hung broker)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused process cannot handle SIGTERM
        super().stop(sig, timeout)


class PocketMQNamesrv(ServerProcess):
    def __init__(self, home: Path, scan_interval: float = 10.0, broker_expire: float = 120.0) -> None:
        self.home = Path(home)
        self.port = 0
        self.scan_interval = scan_interval
        self.broker_expire = broker_expire
        self.process: PocketMQProcess | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> PocketMQNamesrv:
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = free_port(0)
        argv = [sys.executable, "-m", "pocketmq", "namesrv", "--port", str(self.port),
                "--scan-interval", str(self.scan_interval), "--broker-expire", str(self.broker_expire)]
        self.launch(PocketMQProcess("pocketmq-namesrv", argv, self.home), _env(), "listening on")
        return self


class PocketMQBroker(ServerProcess):
    """A pocketmq broker on ``namesrv_addr``; ``props`` are broker.conf keys (``namesrvProtocol=rocketmq`` to join
    Apache RocketMQ's name server)."""

    def __init__(self, home: Path, namesrv_addr: str, **props: str) -> None:
        self.home = Path(home)
        self.namesrv_addr = namesrv_addr
        self.props = props
        self.port = 0
        self.process: PocketMQProcess | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def broker_name(self) -> str:
        return self.props.get("brokerName", "broker-p")

    @property
    def store_dir(self) -> Path:
        return self.home / "store"

    def conf(self) -> dict[str, str]:
        conf = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": "broker-p",
            "namesrvAddr": self.namesrv_addr,
            "brokerIP1": "127.0.0.1",
            "listenPort": str(self.port),
            "storePathRootDir": str(self.store_dir),
            "autoCreateTopicEnable": "true",
            **SMALL_STORE,
        }
        conf.update(self.props)
        return conf

    def start(self) -> PocketMQBroker:
        self.home.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port(-2, 0)  # (it also listens on port - 2, the VIP channel, as Apache's broker does)
        path = self.home / "broker.conf"
        write_properties(path, self.conf())
        argv = [sys.executable, "-m", "pocketmq", "broker", "-c", str(path)]
        self.launch(PocketMQProcess("pocketmq-broker", argv, self.home), _env(), "listening on")
        return self

