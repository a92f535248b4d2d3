"""Client test setup: fake name server and brokers (client_fakes), and the real cluster when it exists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from client_fakes import FakeBroker, FakeNamesrv

from tests.loops import pytest_asyncio_loop_factories, pytest_configure  # noqa: F401 (the both_loops hooks)


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    """Both wire protocols, for a test that takes ``protocol`` and is not parametrized otherwise."""
    return str(request.param)


@pytest.fixture
async def namesrv() -> AsyncIterator[FakeNamesrv]:
    ns = FakeNamesrv()
    await ns.server.start()
    yield ns
    await ns.server.stop()


@pytest.fixture
async def broker_a() -> AsyncIterator[FakeBroker]:
    b = FakeBroker("broker-a")
    await b.server.start()
    yield b
    await b.server.stop()


@pytest.fixture
async def broker_b() -> AsyncIterator[FakeBroker]:
    b = FakeBroker("broker-b")
    await b.server.start()
    yield b
    await b.server.stop()


@pytest.fixture
async def push_cluster(tmp_path: Any) -> AsyncIterator[Any]:
    """A real name server + broker with the push tests' fast settings (push_helpers.FAST_BROKER)."""
    from push_helpers import FAST_BROKER

    from pocketmq.embedded import EmbeddedCluster

    async with EmbeddedCluster(tmp_path, **FAST_BROKER) as c:
        yield c
