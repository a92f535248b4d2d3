"""Console tests: a real cluster in-process and the console's aiohttp server on a free port, on the test's
event loop. tests/console/test_browser.py drives the pages in Debian's Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.embedded import EmbeddedCluster
from tests.loops import pytest_asyncio_loop_factories, pytest_configure  # noqa: F401 (the both_loops hooks)

# Each test module skips itself when the console extra is missing (pip install -e '.[console]'); the fixtures
# import the console only when a test uses them.
NEEDS = "the console extra (pip install -e '.[console]')"

FAST = {"stats_sample_interval": 0.02}




@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, **FAST) as c:
        yield c


@pytest.fixture
async def console(cluster: EmbeddedCluster) -> AsyncIterator[Any]:
    from pocketmq.console import ConsoleServer

    async with ConsoleServer(cluster.namesrv_addr, port=0, admin=True, local_brokers=cluster.brokers) as c:
        yield c
