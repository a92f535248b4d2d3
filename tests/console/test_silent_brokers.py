"""Brokers registered at the name server that accept connections and never answer (anyone may register one
without ACL, as in Apache RocketMQ): the cluster page asks every broker at once, and a /metrics scrape asks such a
broker once, not once per topic and group, and still carries what the live broker gave. No wall time is measured:
the fake brokers count the requests they get and hold them until the test lets them go."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pocketmq.broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI  # noqa: E402
from pocketmq.client.message import Message  # noqa: E402
from pocketmq.client.producer.producer import Producer  # noqa: E402
from pocketmq.remoting.codec import decode_frames  # noqa: E402
from pocketmq.remoting.topic_config import TopicConfigSerializeWrapper  # noqa: E402

BOUND = 10.0  # a deadline for a failing test, never a measured figure
FAKES = 2
LIVE = {"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a"}


@dataclass
class SilentBroker:
    """Accepts, counts each request, answers none; once let go it closes every connection (the requests held fail
    at once), and a later one as soon as it has sent a request."""

    requests: int = 0
    released: bool = False
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        buffered, seen = b"", 0
        try:
            while data := await reader.read(65536):
                buffered += data
                complete = len(decode_frames(buffered))
                self.requests += complete - seen
                seen = complete
                if seen and self.released:
                    break
        finally:
            writer.close()

    def let_go(self) -> None:
        self.released = True
        for w in self.writers:
            w.close()


@pytest.fixture
async def silent(cluster: Any) -> AsyncIterator[list[SilentBroker]]:
    brokers = [SilentBroker() for _ in range(FAKES)]
    servers = [await asyncio.start_server(b.serve, "127.0.0.1", 0) for b in brokers]
    outer = BrokerOuterAPI()
    body = await outer.encode_body(TopicConfigSerializeWrapper({}))
    for i, server in enumerate(servers):
        addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        await outer.register(cluster.namesrv_addr, BrokerIdentity("DefaultCluster", f"silent{i}", 0, addr), body)
    yield brokers
    await outer.close()  # (the name server forgets a broker whose connection closes)
    for b in brokers:
        b.let_go()
    for server in servers:
        server.close()


async def answer_when_all_asked(console: Any, path: str, silent: list[SilentBroker], poll: Any) -> str:
    """GET ``path``; once every silent broker holds a request, let them go. Asked one after another, the second
    would get its request only after the first's admin timeout (30 s here), past the poll's deadline."""
    async with aiohttp.ClientSession() as s:
        got = asyncio.ensure_future(s.get(console.url + path))
        await poll(lambda: all(b.requests for b in silent), timeout=BOUND)
        for b in silent:
            b.let_go()
        async with await asyncio.wait_for(got, BOUND) as r:
            assert r.status == 200
            return await r.text()


@pytest.fixture
async def slow_admin(cluster: Any) -> AsyncIterator[Any]:
    from pocketmq.console import ConsoleServer

    async with ConsoleServer(cluster.namesrv_addr, port=0, timeout=30.0, local_brokers=cluster.brokers) as c:
        yield c


async def test_the_cluster_page_asks_every_broker_at_once(cluster, slow_admin, silent, poll):
    rows = json.loads(await answer_when_all_asked(slow_admin, "api/cluster", silent, poll))["brokers"]
    assert sorted(r["broker"] for r in rows) == ["broker-a", "silent0", "silent1"]
    assert all(r.get("error") for r in rows if r["broker"].startswith("silent"))
    assert next(r for r in rows if r["broker"] == "broker-a")["commitlog_max"] >= 0


async def test_a_scrape_asks_a_silent_broker_once_and_keeps_the_live_ones_figures(cluster, slow_admin, silent,
                                                                                    poll):
    async with Producer("SilentPG", cluster.namesrv_addr) as p:
        await p.send(Message("LiveT", b"x"))
    assert await cluster.wait_dispatched()
    text = await answer_when_all_asked(slow_admin, "metrics", silent, poll)
    assert [b.requests for b in silent] == [1] * FAKES  # its runtime info; nothing more once that failed
    samples = [(s.name, s.labels) for f in text_string_to_metric_families(text) for s in f.samples]
    live_in = {**LIVE, "topic": "LiveT", "message_type": "normal", "is_system": "false"}
    assert ("rocketmq_messages_in_total", live_in) in samples
    assert ("pocketmq_commitlog_bytes", LIVE) in samples
    assert not [labels for _, labels in samples if labels.get("node_id", "").startswith("silent")]
