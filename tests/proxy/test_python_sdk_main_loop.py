"""Apache's Python SDK after an async test on the same xdist worker: the flake of
test_a_simple_consumer_receives_what_the_sdk_sent_and_acks_it ("There is no current event loop in thread
'MainThread'", then "failed to fetch topic:Recv5 route"), made certain; the SDK modules' main_thread_loop fixture
is what keeps it away."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer
from rocketmq.v5.client.connection.rpc_client import RpcClient

from pocketmq import embedded

from .sdk_helpers import create_topic, wait_pulled


@pytest.fixture(scope="module", autouse=True)
def as_an_async_test_leaves_it() -> None:
    """The main thread as an earlier module's async test leaves it: pytest-asyncio's runner, as ``asyncio.run``
    here, ends with ``set_event_loop(None)``, after which the thread has no loop and makes none on demand.
    (Autouse: set up before main_thread_loop, as that earlier test ran before it.)"""
    asyncio.run(asyncio.sleep(0))


pytestmark = pytest.mark.usefixtures("main_thread_loop")


@contextlib.contextmanager
def route_answers_first(held: list[Any]) -> Iterator[None]:
    """Timing only, as a busy machine did it: the calling thread waits after each route query the SDK sends until
    its answer is in, so the SDK's ``add_done_callback`` runs the route callback (which opens the Telemetry stream
    of the route's endpoints) on this thread instead of the SDK's loop."""
    query = RpcClient.query_topic_route_async.__code__

    def hold(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is query:
            concurrent.futures.wait([arg])
            held.append(arg)

    sys.setprofile(hold)
    try:
        yield
    finally:
        sys.setprofile(None)


def test_the_sdk_fetches_a_route_on_the_main_thread_after_an_async_test(threaded_cluster: embedded.ThreadedCluster):
    """Without main_thread_loop the Telemetry stream fails on the main thread, the route with it, and the send
    raises "failed to fetch topic:Loop5 route"."""
    create_topic(threaded_cluster, "Loop5")
    held: list[Any] = []
    with route_answers_first(held):
        producer = Producer(ClientConfiguration(threaded_cluster.grpc_endpoint, Credentials(), request_timeout=5),
                            ("Loop5",))
        producer.startup()
        try:
            msg = Message()
            msg.topic, msg.body = "Loop5", b"after an async test"
            receipt = producer.send(msg)
        finally:
            producer.shutdown()
    assert held  # (the SDK still fetches its routes where the hold waits)
    [got] = wait_pulled(threaded_cluster, "Loop5", 1)
    assert got.uniq_key == receipt.message_id
