"""A cluster with its gRPC endpoint, and a raw client of the endpoint made of Apache's own generated classes (the
Python SDK's ``rocketmq.grpc_protocol``): what the endpoint answers is read with classes it does not share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2, service_pb2, service_pb2_grpc

from pocketmq import embedded
from pocketmq.proxy.config import ProxyConfig
from pocketmq.proxy.proxy_startup import GrpcProxy
from pocketmq.remoting.body import TopicConfig

D, S = definition_pb2, service_pb2


def metadata(client_id: str = "test-client@1") -> tuple[tuple[str, str], ...]:
    return (("x-mq-client-id", client_id), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "GRPC_V2"),
            ("x-mq-client-version", "5.1.2"))


def endpoints(port: int) -> Any:
    return D.Endpoints(scheme=D.AddressScheme.IPv4, addresses=[D.Address(host="127.0.0.1", port=port)])


async def create_topic(cluster: Any, topic: str, queues: int = 4) -> None:
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await cluster.broker.register_broker_all()


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[embedded.EmbeddedCluster]:
    async with embedded.EmbeddedCluster(tmp_path) as c:
        yield c


async def start_proxy(cluster: Any, **overrides: Any) -> GrpcProxy:
    return await GrpcProxy(ProxyConfig(cluster.namesrv_addr, grpc_server_port=0, **overrides)).start()


@pytest.fixture
async def proxy(cluster: Any) -> AsyncIterator[GrpcProxy]:
    p = await start_proxy(cluster)
    yield p
    await p.stop()


@pytest.fixture
async def stub(proxy: GrpcProxy) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
        yield service_pb2_grpc.MessagingServiceStub(channel)


@pytest.fixture
def threaded_cluster(tmp_path: Any) -> Iterator[embedded.ThreadedCluster]:
    """A cluster with the endpoint on a loop of its own, for the SDKs (which block, or run in other processes)."""
    with embedded.ThreadedCluster(tmp_path, grpc=True) as c:
        yield c


@pytest.fixture
def fast_check_cluster(tmp_path: Any) -> Iterator[embedded.ThreadedCluster]:
    """The broker's transaction checks within a test (a check racing a client's own commit would roll it back in
    the other tests)."""
    from .sdk_helpers import FAST_CHECK

    with embedded.ThreadedCluster(tmp_path, grpc=True, **FAST_CHECK) as c:
        yield c


@pytest.fixture(scope="module")
def main_thread_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An open event loop as the main thread's current one, for the modules calling Apache's Python SDK here.

    The SDK fetches a route with ``future = query_topic_route_async(...)``, then ``future.add_done_callback(...)``:
    when the answer is in first (a busy machine holds the caller between the two), the callback runs on the
    calling thread and opens the route's Telemetry stream there, and gRPC's aio call asks that thread for its loop
    (``init_grpc_aio``, ``get_working_loop``). A fresh main thread makes one then; after an async test on the same
    xdist worker it cannot: pytest-asyncio's runner, as ``asyncio.run``, ends with ``set_event_loop(None)``, the
    stream fails ("There is no current event loop in thread 'MainThread'") and so does the route fetch. The loop
    never runs: gRPC only registers its completion queue's socket with it; the calls run on the SDK's own loop.
    Module-scoped, so it outlives the modules' SDK clients (their shutdown runs on the main thread too)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
