"""pytest plugin (entry point `pytest11: pocketmq`): a running cluster for a user's own tests.

    def test_orders(pocketmq_cluster):
        producer = SyncProducer("g", pocketmq_cluster.namesrv_addr)

    def test_orders_from_a_5x_sdk(pocketmq_cluster):
        producer = Producer(ClientConfiguration(pocketmq_cluster.grpc_endpoint, Credentials()))  # rocketmq.v5

The cluster runs on its own event loop in a background thread (ThreadedCluster), so it serves sync tests
and async tests on any loop alike; each test gets a fresh one in its own temp folder, on free ports.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def pocketmq_cluster(tmp_path):
    """A started name server + broker and RocketMQ 5's gRPC endpoint; `.namesrv_addr`, `.broker_addr`,
    `.grpc_endpoint`, `.store`, `.wait_dispatched()`, `.wait_routed(topic)`."""
    # Imported here, not at plugin load: every pytest run in an environment with pocketmq installed
    # loads this plugin, and most never use the fixture.
    from .embedded import ThreadedCluster

    with ThreadedCluster(tmp_path / "pocketmq", grpc=True) as cluster:
        yield cluster


@pytest.fixture
def pocketmq_namesrv_addr(pocketmq_cluster) -> str:
    return pocketmq_cluster.namesrv_addr
