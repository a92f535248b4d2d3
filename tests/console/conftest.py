"""Console tests: a real cluster in-process and the console's aiohttp server on a free port, on the test's
event loop. tests/console/test_browser.py drives the pages in Debian's Chromium."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import uvloop

from pocketmq.embedded import EmbeddedCluster

# Each test module skips itself when the console extra is missing (pip install -e '.[console]'); the fixtures
# import the console only when a test uses them.
NEEDS = "the console extra (pip install -e '.[console]')"

FAST = {"stats_sample_interval": 0.02}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_loops: run on the default asyncio loop and on uvloop")


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Callable[[], object]]:
    # `pocketmq dev` serves the console on uvloop: the tests of the connection handling run on it too, whose
    # transports are not asyncio's classes.
    if item.get_closest_marker("both_loops") is not None:
        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, **FAST) as c:
        yield c


@pytest.fixture
async def console(cluster: EmbeddedCluster) -> AsyncIterator[Any]:
    from pocketmq.console import ConsoleServer

    async with ConsoleServer(cluster.namesrv_addr, port=0, admin=True, local_brokers=cluster.brokers) as c:
        yield c
