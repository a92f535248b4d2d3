"""Admin tests: a real name server and two brokers (broker-a, broker-b) of one cluster, fast stats sampling."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.embedded import EmbeddedCluster

FAST = {"stats_sample_interval": 0.02, "register_name_server_period": 30.0}


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cluster2(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, brokers=2, **FAST) as c:
        yield c


@pytest.fixture
async def cluster1(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, **FAST) as c:
        yield c


@pytest.fixture
async def admin(cluster2: EmbeddedCluster, protocol: str) -> AsyncIterator[MQAdminExt]:
    async with MQAdminExt(cluster2.namesrv_addr, protocol=protocol) as a:
        yield a
