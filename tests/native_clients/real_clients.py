"""The harness of the real-client tests (test_real_clients.py, test_go_client.py, test_spring_client.py): the
client driver processes, a server as a client sees it, and what pocketmq's own client sends and reads to check
what the drivers report. Kept out of the test modules, which import it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pocketmq.client import (
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PullStatus,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.remoting.body import TopicConfig

# The 5.x SDK drivers' bodies are the 4.x clients' too (cpp_client.py keeps a copy: it runs in the C++ client's venv)
from tests.proxy.sdk_driver import body_for

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CPP_PYTHON = Path(os.environ.get("POCKETMQ_CPP_CLIENT_PYTHON", ROOT / ".venv-rocketmq-cpp" / "bin" / "python"))
NODE = shutil.which("node")
NODE_DIR = HERE / "node"
# rocketmq-client-go v2 in a small program (go/main.go), built by `make go-client` (test_go_client.py).
GO_CLIENT = Path(os.environ.get("POCKETMQ_GO_CLIENT", HERE / "go" / "bin" / "goclient"))


def _cpp_client_missing() -> str | None:
    if not CPP_PYTHON.exists():
        return f"the C++ client's virtualenv is missing ({CPP_PYTHON}): run `make native-clients`"
    libs = list(CPP_PYTHON.parent.parent.glob("lib/python*/site-packages/rocketmq/librocketmq.so"))
    return None if libs else "PyPI rocketmq 0.4.4 is not installed in the C++ client's venv: `make native-clients`"


def _node_client_missing() -> str | None:
    if NODE is None:
        return "node is not installed: `make native-clients` (apt-get install nodejs npm)"
    if not (NODE_DIR / "node_modules" / "ali-ons" / "package.json").exists():
        return "ali-ons is not installed in tests/native_clients/node: run `make native-clients`"
    return None


needs_cpp = pytest.mark.skipif(_cpp_client_missing() is not None, reason=_cpp_client_missing() or "")
needs_node = pytest.mark.skipif(_node_client_missing() is not None, reason=_node_client_missing() or "")
CLIENTS = [pytest.param("cpp", marks=needs_cpp), pytest.param("node", marks=needs_node)]

# Generous deadlines: a driver gives up by itself after DRIVER_TIMEOUT, the test waits a little longer.
DRIVER_TIMEOUT = 90.0
WAIT = DRIVER_TIMEOUT + 15.0

# Retries after a RECONSUME_LATER wait on delay levels of milliseconds instead of 10 s and more.
FAST_RETRY_BROKER: dict[str, Any] = {"message_delay_level": "10ms 20ms 30ms 40ms 50ms 60ms 70ms 80ms"}
# Apache's broker parses only whole s, m, h and d: a second per level (a give-back's level is 3 + its reconsumes).
APACHE_FAST_RETRY: dict[str, str] = {"messageDelayLevel": " ".join(["1s"] * 18)}

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}{os.getpid()}"


# ---- the driver processes -----------------------------------------------------------------------------------


@dataclass
class Driver:
    """One client driver process; its stdout is JSON lines, its stderr goes to a file for diagnostics."""

    name: str
    proc: asyncio.subprocess.Process
    stderr_path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # a library writing to stdout: not ours
            if isinstance(event, dict) and "event" in event:
                self.events.append(event)
                self.changed.set()
        self.changed.set()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.of("message")

    @property
    def consumed(self) -> list[dict[str, Any]]:
        return [e for e in self.messages if e.get("answer", "CONSUME_SUCCESS") == "CONSUME_SUCCESS"]

    def diagnostics(self) -> str:
        try:
            tail = self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            tail = ""
        return f"{self.name}: exit {self.proc.returncode}, last events {self.events[-3:]}, stderr:\n{tail}"

    async def wait_for(self, predicate: Callable[[Driver], bool], timeout: float = WAIT) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate(self):
            if self.reader is not None and self.reader.done() and not predicate(self):
                raise AssertionError(f"the driver ended first. {self.diagnostics()}")
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"condition not met within {timeout}s. {self.diagnostics()}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))

    async def started(self) -> None:
        await self.wait_for(lambda d: bool(d.of("started")))

    async def stop(self) -> None:
        """Ask a push consumer to shut down (it persists its offsets and unregisters)."""
        if self.proc.stdin is not None and self.proc.returncode is None:
            with contextlib.suppress(ConnectionError):
                self.proc.stdin.write(b"stop\n")
                await self.proc.stdin.drain()

    async def done(self, timeout: float = WAIT) -> dict[str, Any]:
        """The final report of a driver that finished on its own (not by its deadline)."""
        await self.wait_for(lambda d: bool(d.of("done")), timeout)
        await asyncio.wait_for(self.proc.wait(), 30)
        final = self.of("done")[-1]
        assert not final.get("timed_out") and "error" not in final, self.diagnostics()
        assert self.proc.returncode == 0, self.diagnostics()
        return final

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self.reader is not None:
            await asyncio.gather(self.reader, return_exceptions=True)


class Clients:
    """Starts drivers against one cluster and kills whatever is left at the end of the test."""

    def __init__(self, cluster: Any, tmp_path: Path, cpp_options: Iterable[str] = ()) -> None:
        self.cluster = cluster
        self.tmp_path = tmp_path
        self.cpp_options = list(cpp_options)  # options before the scenario, e.g. --access-key K --secret-key S
        self.drivers: list[Driver] = []
        # The C++ client writes logs (and, broadcasting, offsets) under $HOME: keep them in the test's folder.
        self.env = dict(os.environ, HOME=str(tmp_path / "home"))
        (tmp_path / "home").mkdir(exist_ok=True)

    async def start(self, client: str, scenario: str, *args: str, timeout: float = DRIVER_TIMEOUT) -> Driver:
        n = len(self.drivers)
        common = ["--namesrv", self.cluster.namesrv_addr, "--timeout", str(timeout)]
        if client == "cpp":
            log_dir = self.tmp_path / "cpp-logs"
            log_dir.mkdir(exist_ok=True)
            argv = [str(CPP_PYTHON), str(HERE / "cpp_client.py"), *common, "--log-dir", str(log_dir),
                    *self.cpp_options]
            cwd = self.tmp_path
        elif client == "go":
            argv = [str(GO_CLIENT), *common]
            cwd = self.tmp_path
        else:
            assert NODE is not None
            argv = [NODE, str(NODE_DIR / "client.js"), *common]
            cwd = NODE_DIR
        stderr_path = self.tmp_path / f"driver{n}-{client}-{scenario}.stderr"
        with open(stderr_path, "wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                *argv, scenario, *args, cwd=cwd, env=self.env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr,
            )
        driver = Driver(f"{client} {scenario} #{n}", proc, stderr_path)
        driver.reader = asyncio.create_task(driver.read())
        self.drivers.append(driver)
        return driver

    async def run(self, client: str, scenario: str, *args: str) -> Driver:
        """A driver that finishes by itself (send, pull, push with --expect), waited for."""
        driver = await self.start(client, scenario, *args)
        await driver.done()
        return driver

    async def close(self) -> None:
        await asyncio.gather(*(d.kill() for d in self.drivers))


@dataclass
class Server:
    """A server under test, pocketmq's or Apache's, reached only as a client reaches it: its name server, its broker
    through the admin API, pocketmq's own client (over ``protocol``: Apache's speaks only RocketMQ's)."""

    kind: str
    namesrv_addr: str
    broker_addr: str
    protocol: str

    def admin(self) -> MQAdminExt:
        return MQAdminExt(self.namesrv_addr, protocol=self.protocol)

    async def create_topic(self, topic: str, queues: int = 4) -> None:
        """What `mqadmin updateTopic` does; ali-ons needs it (it has no TBW102 fallback)."""
        async with self.admin() as admin:
            await admin.create_and_update_topic_config(self.broker_addr, TopicConfig(topic, queues, queues, 6))
        await self.wait_routed(topic)

    async def wait_routed(self, topic: str) -> None:
        """Until the name server routes ``topic`` (a topic a send created reaches it with the broker's next
        registration, a moment after the send is answered)."""

        async def routed() -> bool:
            async with self.admin() as admin:
                try:
                    return bool((await admin.examine_topic_route_info(topic)).queue_datas)
                except Exception:  # no route yet: asked again
                    return False

        await until(routed)

    async def max_offsets(self, topic: str) -> list[int]:
        """Each queue's max offset: what a consumer can pull (the broker dispatched it)."""
        async with self.admin() as admin:
            table = (await admin.examine_topic_stats(topic, self.broker_addr)).offset_table
        return [o.max_offset for _, o in sorted(table.items(), key=lambda item: item[0].queue_id)]

    async def committed_offsets(self, group: str, topic: str) -> list[int]:
        async with self.admin() as admin:
            table = (await admin.examine_consume_stats(group, topic, self.broker_addr)).offset_table
        return [w.consumer_offset for _, w in sorted(table.items(), key=lambda item: item[0].queue_id)]

    async def settled_offsets(self, group: str, topic: str,
                              hold: Callable[[list[int], list[int]], bool]) -> tuple[list[int], list[int]]:
        """The group's committed offsets and the topic's max offsets once ``hold(committed, ends)``, for 10 s at most.

        A push consumer's last commits are one-way requests sent as it shuts down: a broker may apply one after the
        driver has exited and the test asked (Apache RocketMQ 4.9.7 with the C++ client: a queue still at 0)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10.0
        while True:
            committed, ends = await self.committed_offsets(group, topic), await self.max_offsets(topic)
            if hold(committed, ends) or loop.time() > deadline:
                return committed, ends
            await asyncio.sleep(0.2)

    async def group_clients(self, group: str) -> list[str]:
        async with self.admin() as admin:
            try:
                return [c.client_id for c in (await admin.examine_consumer_connection_info(group)).connection_set]
            except Exception:  # not online (yet)
                return []

    async def send(self, msgs: list[Message]) -> None:
        """Send with pocketmq's producer, and wait until each queue has the last message sent to it dispatched."""
        ends: dict[int, int] = {}
        async with Producer(unique("PocketPG"), self.namesrv_addr, instance_name=unique("p"),
                            protocol=self.protocol) as producer:
            for msg in msgs:
                result = await producer.send(msg)
                ends[result.message_queue.queue_id] = result.queue_offset + 1
        topic = msgs[0].topic

        async def dispatched() -> bool:
            maxes = await self.max_offsets(topic)
            return all(maxes[q] >= end for q, end in ends.items())

        await until(dispatched)

    async def pull(self, topic: str) -> list[MessageExt]:
        """Every message of every queue, by pocketmq's pull consumer."""
        await self.wait_routed(topic)
        out: list[MessageExt] = []
        async with PullConsumer(unique("PocketPull"), self.namesrv_addr, instance_name=unique("c"),
                                protocol=self.protocol) as consumer:
            for mq in await consumer.fetch_subscribe_message_queues(topic):
                offset = 0
                while True:
                    result = await consumer.pull(mq, "*", offset, 32)
                    out.extend(result.msg_found_list)
                    if result.pull_status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                        break
                    offset = result.next_begin_offset
        return out

    async def wait_stored(self, topic: str, count: int) -> None:
        """Until the topic's queues hold ``count`` messages in all."""
        await until(lambda: self._holds(topic, count))

    async def _holds(self, topic: str, count: int) -> bool:
        try:
            return sum(await self.max_offsets(topic)) >= count
        except Exception:  # the topic not there yet
            return False


async def until(predicate: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    """Poll an async ``predicate`` with a deadline (the admin's requests take a round trip each)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.05)


# ---- pocketmq's side ----------------------------------------------------------------------------------------


TAGS = ("TagA", "TagB", "TagC")


def pocketmq_messages(topic: str, prefix: str, count: int) -> list[Message]:
    out = []
    for i in range(count):
        props = {"idx": str(i)}
        if i % 10 == 7:
            props["city"] = "Zürich"
        keys = [f"{prefix}-{i}", f"{prefix}-five"] if i % 5 == 0 else [f"{prefix}-{i}"]
        out.append(Message(topic, body_for(prefix, i).encode(), tags=TAGS[i % 3], keys=keys, properties=props))
    return out


async def create_topic(cluster: Any, topic: str, queues: int = 4) -> None:
    """Server.create_topic on an EmbeddedCluster of the Go and Spring tests, through the broker itself."""
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await cluster.broker.register_broker_all()
    assert await cluster.wait_routed(topic)


def pocketmq_server(cluster: Any) -> Server:
    return Server("pocketmq", cluster.namesrv_addr, cluster.broker_addr, "msgpack")


async def send_with_pocketmq(cluster: Any, msgs: list[Message]) -> None:
    await pocketmq_server(cluster).send(msgs)


async def pull_with_pocketmq(cluster: Any, topic: str) -> list[MessageExt]:
    await cluster.wait_dispatched()  # (what a driver sent: Server.pull does not know how many to wait for)
    return await pocketmq_server(cluster).pull(topic)


def group_clients(cluster: Any, group: str) -> list[str]:
    info = cluster.broker.consumer_manager.get_consumer_group_info(group)
    return [] if info is None else info.all_client_ids()


def by_keys(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["keys"]: e for e in events}


def expected(msg: Message) -> dict[str, Any]:
    """A pocketmq Message as a driver reports it."""
    return {"keys": msg.properties["KEYS"], "tags": msg.tags, "body": msg.body.decode(),
            "idx": msg.properties["idx"], "city": msg.properties.get("city")}


def reported(event: dict[str, Any]) -> dict[str, Any]:
    return {"keys": event["keys"], "tags": event["tags"], "body": event["body"],
            "idx": event["props"].get("idx"), "city": event["props"].get("city")}


def assert_stored_as_sent(sent: list[dict[str, Any]], stored: list[MessageExt]) -> None:
    """Every message a driver reports as SEND_OK is stored once, with its body, tags, keys and properties."""
    assert [e for e in sent if e["status"] != "SEND_OK"] == []
    got = {" ".join(m.keys): m for m in stored}
    assert len(got) == len(stored) == len(sent)
    for e in sent:
        m = got[e["keys"]]
        assert m.body.decode() == e["body"]
        assert (m.tags, m.properties["idx"], m.properties.get("city")) == (
            e["tags"], str(e["i"]), "Zürich" if e["i"] % 10 == 7 else None)
        # Over 4 KiB the client compressed the body (sysFlag bit 0); the store keeps it so, the reader inflates.
        assert bool(m.sys_flag & 1) == (len(e["body"].encode()) > 4096)
        assert m.queue_offset == e["offset"]
