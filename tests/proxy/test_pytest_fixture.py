"""The pytest plugin's cluster serves the gRPC endpoint: a user's test hands ``grpc_endpoint`` to a 5.x SDK."""

from __future__ import annotations

import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer

from .sdk_helpers import create_topic, wait_pulled

# The SDK may open a stream on the main thread, which needs a current event loop (see main_thread_loop).
pytestmark = pytest.mark.usefixtures("main_thread_loop")


def test_the_fixture_tells_its_grpc_endpoint_to_a_5x_sdk(pocketmq_cluster):
    create_topic(pocketmq_cluster, "FromFixture")
    host, _, port = pocketmq_cluster.grpc_endpoint.rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    producer = Producer(ClientConfiguration(pocketmq_cluster.grpc_endpoint, Credentials()), ("FromFixture",))
    producer.startup()
    try:
        msg = Message()
        msg.topic, msg.body = "FromFixture", b"hello from a user's test"
        receipt = producer.send(msg)
    finally:
        producer.shutdown()
    [got] = wait_pulled(pocketmq_cluster, "FromFixture", 1)
    assert got.uniq_key == receipt.message_id
