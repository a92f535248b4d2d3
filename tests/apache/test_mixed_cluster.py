"""Mixed clusters: Apache RocketMQ brokers and pocketmq brokers under one name server, either kind of name server.

An Apache RocketMQ broker registers with pocketmq's name server in RocketMQ's own RegisterBrokerBody (JSON, or with
compressedRegister its compressed form); a pocketmq broker with ``namesrvProtocol=rocketmq`` registers with Apache
RocketMQ's name server the same way. A topic created over the whole cluster by Apache's mqadmin lives on one broker
of each kind, and pocketmq's client sends to and pulls from both through whichever name server; both mqadmins list
both brokers. A broker killed is dropped at once by either name server (its connection closes), and a broker that
hangs (SIGSTOP: its connection stays open) is dropped by the expiry scan, where the scan can be made short: pocketmq's
(--scan-interval, and a broker's heartbeatTimeoutMillis, else --broker-expire) and 5.x's (scanNotActiveBrokerInterval
and heartbeatTimeoutMillis); 4.9.7's scan runs every 10 s with a fixed 120 s expiry, too long for the suite.

The name servers are the module's, one of each kind and version (Servers), as are Apache's mqadmins: each test
registers brokers of its own there, and they are gone from it when the test ends (killed, or stopped).
"""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from pocketmq.cli import main as pocketmq_main
from pocketmq.client import Message, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.common.mix_all import NAMESPACE_ORDER_TOPIC_CONFIG
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import V4, V5, ApacheNamesrv, ApacheRocketMQ, JavaProcess
from tests.apache.pocketmq_process import PocketMQBroker, PocketMQNamesrv

from .differential import call, request
from .differential_requests import create_topic


@dataclass
class MixedCluster:
    namesrv_addr: str
    apache: ApacheRocketMQ  # its broker
    pocket: PocketMQBroker

    def processes(self) -> dict[str, JavaProcess]:
        assert self.apache.broker is not None and self.pocket.process is not None
        return {self.apache.broker_name: self.apache.broker, self.pocket.broker_name: self.pocket.process}

    def addrs(self) -> dict[str, str]:
        return {self.apache.broker_name: self.apache.broker_addr, self.pocket.broker_name: self.pocket.addr}


# (name server, Apache broker version, the Apache broker's compressedRegister, the pocketmq broker's settings)
LAYOUTS = {
    "pocketmq-namesrv-4.9.7-compressed": ("pocketmq", V4, "true", {}),
    "pocketmq-namesrv-5.5.0": ("pocketmq", V5, "false", {}),
    "apache-4.9.7-namesrv": ("apache", V4, "false", {"namesrvProtocol": "rocketmq", "compressedRegister": "true"}),
    "apache-5.5.0-namesrv": ("apache", V5, "false", {"namesrvProtocol": "rocketmq"}),
}


class Servers:
    """The module's name servers, one of each kind and version, and Apache's mqadmin of each version, started at
    first use and ended with the module. pocketmq's name server scans every 200 ms with its own expiry of 120 s,
    5.x's every 200 ms (for the hung brokers below); a broker that registers without heartbeatTimeoutMillis keeps
    that 120 s expiry. Apache's mqadmin of a version answers for either kind of name server (``-n``) from one runner
    JVM."""

    APACHE_NAMESRV_PROPS = {V4: {}, V5: {"scanNotActiveBrokerInterval": "200"}}

    def __init__(self, root: Path, stack: ExitStack) -> None:
        self.root = root
        self.stack = stack
        self.pocketmq_namesrv: PocketMQNamesrv | None = None
        self.apache_namesrvs: dict[str, ApacheNamesrv] = {}
        self.tools: dict[str, ApacheRocketMQ] = {}

    def pocketmq(self) -> str:
        if self.pocketmq_namesrv is None:
            self.pocketmq_namesrv = self.stack.enter_context(
                PocketMQNamesrv(self.root / "pocketmq-namesrv", scan_interval=0.2, broker_expire=120.0))
        return self.pocketmq_namesrv.addr

    def apache(self, version: str) -> str:
        if version not in self.apache_namesrvs:
            self.apache_namesrvs[version] = self.stack.enter_context(ApacheNamesrv(
                self.root / f"namesrv-{version}", version=version,
                namesrv_props=self.APACHE_NAMESRV_PROPS[version]).killed_at_exit())
        return self.apache_namesrvs[version].namesrv_addr

    def mqadmin(self, version: str, namesrv_addr: str, *args: str) -> subprocess.CompletedProcess[str]:
        if version not in self.tools:
            tools = ApacheRocketMQ(self.root / f"tools-{version}", version=version).prepare_tools()
            self.stack.callback(tools.close_tools)
            self.tools[version] = tools
        return self.tools[version].mqadmin(*args, "-n", namesrv_addr)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with ExitStack() as stack:
        yield Servers(tmp_path_factory.mktemp("mixed-servers"), stack)


@contextmanager
def mixed_cluster(root: Path, layout: str, servers: Servers) -> Iterator[MixedCluster]:
    """The layout's two brokers on the module's name server of its kind, the pocketmq broker started while the
    Apache one starts."""
    kind, version, compressed, pocket_props = LAYOUTS[layout]
    namesrv_addr = servers.pocketmq() if kind == "pocketmq" else servers.apache(version)
    pocket = PocketMQBroker(root / "pocketmq", namesrv_addr, **pocket_props)
    with ExitStack() as stack:
        stack.callback(pocket.stop)
        with ThreadPoolExecutor(1) as pool:
            pocket_ready = pool.submit(pocket.start)
            apache = stack.enter_context(ApacheRocketMQ(root / "apache", version=version, namesrv_addr=namesrv_addr,
                                                        compressedRegister=compressed).killed_at_exit())
            pocket_ready.result()
        yield MixedCluster(namesrv_addr, apache, pocket)


def pocketmq_command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``pocketmq <args>`` as its entry point runs it, in this process (an interpreter's start is seconds): its exit
    code, stdout and stderr."""
    capsys.readouterr()
    code = pocketmq_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def cluster_brokers(namesrv_addr: str) -> dict[str, dict[int, str]]:
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        for _ in range(50):
            try:
                info = await admin.examine_broker_cluster_info()
                break
            except MQBrokerException as e:
                # Apache's RouteInfoManager.getAllClusterInfo hands out its live maps without the lock, so a
                # query that meets an unregistration fails with SYSTEM_ERROR (a CI run saw it on 5.5.0).
                if "ConcurrentModificationException" not in (e.remark or ""):
                    raise
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the name server kept failing GET_BROKER_CLUSTER_INFO")
    return {name: dict(bd.broker_addrs) for name, bd in info.broker_addr_table.items()}


async def wait_brokers(namesrv_addr: str, names: set[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while set(await cluster_brokers(namesrv_addr)) != names:
        if time.monotonic() > deadline:
            raise AssertionError(f"brokers {await cluster_brokers(namesrv_addr)} never became {names}")
        await asyncio.sleep(0.1)


async def wait_route(namesrv_addr: str, topic: str, brokers: set[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    async with MQAdminExt(namesrv_addr, protocol="rocketmq") as admin:
        while True:
            try:
                route = await admin.examine_topic_route_info(topic)
                if {q.broker_name for q in route.queue_datas} == brokers:
                    return
            except Exception:  # no route yet: TOPIC_NOT_EXIST
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no route of {topic} over {brokers}")
            await asyncio.sleep(0.1)


async def send_everywhere_and_pull(namesrv_addr: str, topic: str) -> tuple[dict[str, int], list[bytes]]:
    """One message to every queue of ``topic`` (both brokers) and six routed by the producer; returns how many each
    broker took and every body pulled back from every queue."""
    taken: dict[str, int] = {}
    async with (
        Producer(f"pg-{topic}", namesrv_addr, protocol="rocketmq") as producer,
        PullConsumer(f"cg-{topic}", namesrv_addr, protocol="rocketmq") as consumer,
    ):
        queues = await consumer.fetch_subscribe_message_queues(topic)
        for i, mq in enumerate(queues):
            result = await producer.send(Message(topic, f"q{i}".encode(), keys=f"k{i}"), mq)
            taken[result.message_queue.broker_name] = taken.get(result.message_queue.broker_name, 0) + 1
        for i in range(6):
            result = await producer.send(Message(topic, f"r{i}".encode()))
            taken[result.message_queue.broker_name] = taken.get(result.message_queue.broker_name, 0) + 1
        got: list[bytes] = []
        for mq in queues:
            offset = 0
            while True:
                pulled = await consumer.pull(mq, "*", offset, 32)
                if pulled.pull_status != PullStatus.FOUND:
                    break
                got += [m.body for m in pulled.msg_found_list]
                offset = pulled.next_begin_offset
    return taken, got


@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_a_topic_over_both_kinds_of_broker_through_either_name_server(
        tmp_path: Path, layout: str, servers: Servers, capsys: pytest.CaptureFixture[str]) -> None:
    with mixed_cluster(tmp_path, layout, servers) as cluster:
        apache: ApacheRocketMQ = cluster.apache
        both = {apache.broker_name, cluster.pocket.broker_name}
        # 5.x's broker may log "boot success" before its first registration is answered.
        await wait_brokers(cluster.namesrv_addr, both)
        assert await cluster_brokers(cluster.namesrv_addr) == {
            name: {0: addr} for name, addr in cluster.addrs().items()
        }
        # Apache's mqadmin creates the topic on every broker of the cluster (UPDATE_AND_CREATE_TOPIC to each).
        topic = f"Mixed{uuid.uuid4().hex[:8]}"
        created = await asyncio.to_thread(servers.mqadmin, apache.version, cluster.namesrv_addr,
                                          "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "3", "-w", "3")
        assert created.returncode == 0, created.stdout + created.stderr
        await wait_route(cluster.namesrv_addr, topic, both)

        taken, got = await send_everywhere_and_pull(cluster.namesrv_addr, topic)
        assert set(taken) == both and taken[apache.broker_name] >= 3 and taken[cluster.pocket.broker_name] >= 3
        assert sorted(got) == sorted([f"q{i}".encode() for i in range(6)] + [f"r{i}".encode() for i in range(6)])

        # Both mqadmins list both brokers, with their versions (pocketmq's broker says V4_9_8).
        apache_list = await asyncio.to_thread(servers.mqadmin, apache.version, cluster.namesrv_addr, "clusterList")
        assert apache_list.returncode == 0, apache_list.stderr
        for name, addr in cluster.addrs().items():
            assert any(name in line and addr in line for line in apache_list.stdout.splitlines()), apache_list.stdout
        code, out, err = await asyncio.to_thread(
            pocketmq_command, capsys, "clusterList", "-n", cluster.namesrv_addr, "--protocol", "rocketmq", "--json")
        assert code == 0, err
        listed = {row["brokerName"]: row for row in json.loads(out)}
        assert set(listed) == both
        assert listed[apache.broker_name]["version"] == "V" + apache.version.replace(".", "_")
        assert listed[cluster.pocket.broker_name]["version"] == "V4_9_8"

        # A broker killed: its connection closes and the name server drops it at once (long before any expiry).
        processes = cluster.processes()
        processes[cluster.pocket.broker_name].stop(signal.SIGKILL)
        await wait_brokers(cluster.namesrv_addr, {apache.broker_name}, timeout=30)
        processes[apache.broker_name].stop(signal.SIGKILL)
        await wait_brokers(cluster.namesrv_addr, set(), timeout=30)


# A hung broker (SIGSTOP) keeps its connection open: only the expiry scan drops it.
async def test_pocketmq_name_server_scan_drops_a_hung_apache_broker(tmp_path: Path, servers: Servers) -> None:
    # Apache's broker registers every 10 s at the most often (registerNameServerPeriod is clamped to 10-60 s), so an
    # expiry of the name server's own must be longer than that. A 5.x broker with enableSlaveActingMaster registers
    # with its brokerNotActiveTimeoutMillis as heartbeatTimeoutMillis, and between registrations sends
    # BROKER_HEARTBEAT every brokerHeartbeatInterval: the name server keeps it for that timeout, not for its own.
    ns = servers.pocketmq()
    with ApacheRocketMQ(tmp_path / "apache", version=V5, namesrv_addr=ns, enableSlaveActingMaster="true",
                        brokerHeartbeatInterval="500", brokerNotActiveTimeoutMillis="2000").killed_at_exit() as apache:
        assert apache.broker is not None and apache.broker.proc is not None
        await wait_brokers(ns, {apache.broker_name})
        apache.broker.proc.send_signal(signal.SIGSTOP)
        try:
            await wait_brokers(ns, set(), timeout=60)
        finally:
            apache.broker.proc.send_signal(signal.SIGCONT)


async def test_apache_5_name_server_scan_drops_a_hung_pocketmq_broker(tmp_path: Path, servers: Servers) -> None:
    # 5.x's name server scans every scanNotActiveBrokerInterval (Servers: 200 ms) and keeps a broker for the
    # heartbeatTimeoutMillis it registered with; pocketmq's broker sends brokerNotActiveTimeoutMillis as that.
    ns = servers.apache(V5)
    with PocketMQBroker(tmp_path / "pocketmq", ns, namesrvProtocol="rocketmq",
                        registerNameServerPeriod="500", brokerNotActiveTimeoutMillis="1500") as pocket:
        assert pocket.process is not None
        await wait_brokers(ns, {pocket.broker_name})
        pocket.process.pause()
        await wait_brokers(ns, set(), timeout=60)


async def test_pocketmq_name_server_keeps_a_broker_for_its_heartbeat_timeout(tmp_path: Path, servers: Servers) -> None:
    # The name server's own expiry is 120 s (Servers); the broker's heartbeatTimeoutMillis (1.5 s) is what its scan
    # uses, as 5.x's name server does (the same broker setting as above, against pocketmq's name server).
    ns = servers.pocketmq()
    with PocketMQBroker(tmp_path / "pocketmq", ns, registerNameServerPeriod="500",
                        brokerNotActiveTimeoutMillis="1500") as pocket:
        assert pocket.process is not None
        await wait_brokers(ns, {pocket.broker_name})
        pocket.process.pause()
        await wait_brokers(ns, set(), timeout=60)


def _order_flags_after_update_order_conf(namesrv_addr: str, broker_addr: str, broker_name: str) -> list[object]:
    """updateOrderConf's KV entry on the name server, then two topics created on the Apache broker: its incremental
    registration reads the name server's ORDER_TOPIC_CONFIG table from the answer and sets each topic's order flag
    (TopicConfigManager.updateOrderTopicConfig)."""
    ordered, plain = f"OrdConf{uuid.uuid4().hex[:6]}", f"Plain{uuid.uuid4().hex[:6]}"
    put = call(namesrv_addr, request(R.PUT_KV_CONFIG, {
        "namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": ordered, "value": f"{broker_name}:4"}))
    try:
        rows: list[object] = [put.code]
        for topic in (ordered, plain):
            rows.append(call(broker_addr, create_topic(topic)).code)
        table = call(broker_addr, request(R.GET_ALL_TOPIC_CONFIG)).body["topicConfigTable"]
        return [*rows, table[ordered]["order"], table[plain]["order"]]
    finally:
        call(namesrv_addr, request(R.DELETE_KV_CONFIG, {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": ordered}))


def test_an_apache_broker_takes_the_order_topic_config_from_pocketmqs_name_server(
        tmp_path: Path, apache_rocketmq: ApacheRocketMQ, servers: Servers) -> None:
    # What 4.9.7 does under its own name server: the session's (topics and an order entry of this test's own,
    # the entry deleted after).
    ref = apache_rocketmq
    want = _order_flags_after_update_order_conf(ref.namesrv_addr, ref.broker_addr, ref.broker_name)
    assert want == [0, 0, 0, True, False]
    ns = servers.pocketmq()
    with ApacheRocketMQ(tmp_path / "apache", version=V4, namesrv_addr=ns).killed_at_exit() as apache:
        asyncio.run(wait_brokers(ns, {apache.broker_name}))
        assert _order_flags_after_update_order_conf(ns, apache.broker_addr, apache.broker_name) == want


def _wait_order_flags(broker_addr: str, want: dict[str, bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        table = call(broker_addr, request(R.GET_ALL_TOPIC_CONFIG)).body["topicConfigTable"]
        got = {topic: table[topic]["order"] for topic in want}
        if got == want:
            return
        assert time.monotonic() < deadline, (got, want)
        time.sleep(0.02)


def test_a_pocketmq_broker_takes_the_order_topic_config_from_apaches_name_server(
        tmp_path: Path, servers: Servers, capsys: pytest.CaptureFixture[str]) -> None:
    """The other way round: pocketmq's updateOrderConf and `updateTopic -o true` on Apache 4.9.7's name server, and a
    pocketmq broker registering there (every 50 ms) sets its topics' order flags from the table in the answer. (The
    commands run in this process, as `pocketmq <command>` runs them: an interpreter's start for each is seconds.)"""
    ordered, plain = f"OrdConf{uuid.uuid4().hex[:6]}", f"Plain{uuid.uuid4().hex[:6]}"
    ns = servers.apache(V4)
    with PocketMQBroker(tmp_path / "pocketmq", ns, namesrvProtocol="rocketmq", registerNameServerPeriod="50") as pocket:
        def admin(*args: str) -> str:
            code, out, err = pocketmq_command(capsys, args[0], "-n", ns, "--protocol", "rocketmq", *args[1:])
            assert code == 0, err
            return out

        for topic in (ordered, plain):
            admin("updateTopic", "-b", pocket.addr, "-t", topic, "-r", "2", "-w", "2")
        assert admin("updateOrderConf", "-t", ordered, "-m", "put", "-v", f"{pocket.broker_name}:2") == (
            f"update orderConf success. topic=[{ordered}], orderConf=[{pocket.broker_name}:2]\n")
        _wait_order_flags(pocket.addr, {ordered: True, plain: False})
        out = admin("updateTopic", "-b", pocket.addr, "-t", plain, "-r", "2", "-w", "2", "-o", "true")
        assert out.startswith(f"set broker orderConf. isOrder=true, orderConf=[{pocket.broker_name}:2]create topic")
        assert admin("updateOrderConf", "-t", plain, "-m", "get") == (
            f"get orderConf success. topic=[{plain}], orderConf=[{pocket.broker_name}:2] \n")
        assert admin("updateOrderConf", "-t", ordered, "-m", "delete") == (
            f"delete orderConf success. topic=[{ordered}]\n")
        _wait_order_flags(pocket.addr, {ordered: False, plain: True})
