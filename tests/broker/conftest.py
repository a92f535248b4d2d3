"""Fixtures of the broker tests; the harness they build on (real brokers and name servers, ``MQ``) is
broker_harness.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import uvloop
from broker_harness import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND, GUARD, MQ, Cluster, small_config  # noqa: F401 (re-exported)

from pocketmq.broker import BrokerController


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_loops: run on the default asyncio loop and on uvloop")


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Callable[[], object]]:
    # Everything runs on the default loop; tests marked both_loops also on uvloop (what the CLI uses).
    if item.get_closest_marker("both_loops") is not None:
        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def broker(cluster: Cluster) -> BrokerController:
    """A broker without name servers."""
    return await cluster.broker()


@pytest.fixture
def mq(cluster: Cluster, broker: BrokerController) -> MQ:
    return cluster.mq(broker)




async def wait_dispatched(broker: BrokerController) -> None:
    """Until everything stored is in the consume queues (dispatch runs on the store's own thread)."""
    assert await asyncio.to_thread(broker.store.wait_dispatched, GUARD)


@pytest.fixture
def dispatched() -> Callable[[BrokerController], Any]:
    return wait_dispatched
