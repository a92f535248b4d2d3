"""pocketmq's gRPC endpoint and Apache RocketMQ 5's own proxy asked the same questions, answers compared.

A package's worth of real Apache RocketMQ (tests/apache: name server, broker and its gRPC proxy in cluster mode,
from Maven Central's jars through `make apache-rocketmq`) beside a pocketmq cluster; each case sends both the same
raw MessagingService requests (Apache's own generated classes, from the Python SDK) and compares status codes,
messages and the Settings values the SDKs depend on. Where pocketmq answers differently on purpose the test says
so (docs/protocol.md §9).

The servers are the package's, not a module's (one Apache RocketMQ and proxy for all its modules, as when they were
one module): tests/conftest.py hands the whole folder to one xdist worker. calls.py has the topics and groups both
are set up with, and the requests the cases send."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.cli import main as pocketmq_main
from pocketmq.remoting.body import TopicConfig
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ

from ..conftest import D, S, metadata
from ..sdk_helpers import create_topic
from .calls import (
    CONSUMER_ID,
    CONV_TOPIC,
    DELAY_TOPIC,
    GHOST_TOPIC,
    NODE_TOPICS,
    PROGRESS_TOPIC,
    RECV_GROUP,
    RECV_TOPIC,
    RENEW_APACHE,
    RENEW_POCKETMQ,
    RENEW_TOPIC,
    RETRY_GROUPS,
    TOPIC,
    TXN_TOPIC,
    telemetry_session,
    update_sub_group_args,
)


@pytest.fixture(scope="package")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the proxy's endpoint, the name server's address)."""
    # recallMessageEnable: RocketMQ's default is off; pocketmq's on (docs/compatibility.md).
    # The package's servers are thrown away: killed at the end, not shut down.
    with (ApacheRocketMQ(tmp_path_factory.mktemp("apache5"), V5, recallMessageEnable="true").killed_at_exit() as rmq,
          ApacheProxy(rmq, **RENEW_APACHE).killed_at_exit() as proxy):
        made = rmq.mqadmin("updateTopic", "-t", TOPIC, "-c", rmq.cluster_name, "-r", "4", "-w", "4")
        assert made.returncode == 0, made.stdout + made.stderr
        made = rmq.mqadmin("updateTopic", "-t", TXN_TOPIC, "-c", rmq.cluster_name,
                           "-a", "+message.type=TRANSACTION")
        assert made.returncode == 0, made.stdout + made.stderr
        for four_queues in (RECV_TOPIC, *NODE_TOPICS):
            made = rmq.mqadmin("updateTopic", "-t", four_queues, "-c", rmq.cluster_name, "-r", "4", "-w", "4")
            assert made.returncode == 0, made.stdout + made.stderr
        made = rmq.mqadmin("updateTopic", "-t", DELAY_TOPIC, "-c", rmq.cluster_name, "-a", "+message.type=DELAY")
        assert made.returncode == 0, made.stdout + made.stderr
        for one_queue in (CONV_TOPIC, RENEW_TOPIC, GHOST_TOPIC, PROGRESS_TOPIC):
            made = rmq.mqadmin("updateTopic", "-t", one_queue, "-c", rmq.cluster_name, "-r", "1", "-w", "1")
            assert made.returncode == 0, made.stdout + made.stderr
        for group, policy in RETRY_GROUPS.items():
            made = rmq.mqadmin(*update_sub_group_args(group, policy, rmq.cluster_name))
            assert made.returncode == 0 and "Exception" not in made.stderr, made.stdout + made.stderr
        yield proxy.endpoint, rmq.namesrv_addr


@pytest.fixture(scope="package")
def pocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("pocketmq5"), grpc=True,
                                  proxy_overrides=RENEW_POCKETMQ) as cluster:
        create_topic(cluster, TOPIC)
        create_topic(cluster, TXN_TOPIC)
        for four_queues in (RECV_TOPIC, *NODE_TOPICS):
            create_topic(cluster, four_queues)
        for one_queue in (CONV_TOPIC, RENEW_TOPIC, GHOST_TOPIC, PROGRESS_TOPIC):
            create_topic(cluster, one_queue, queues=1)

        async def typed() -> None:
            broker = cluster.cluster.broker
            assert broker is not None
            broker.topic_config_manager.update_topic_config(TopicConfig(DELAY_TOPIC, 4, 4, 6,
                                                                        attributes={"message.type": "DELAY"}))
            await broker.register_broker_all()

        cluster._call(typed())
        for group, policy in RETRY_GROUPS.items():
            assert pocketmq_main([*update_sub_group_args(group, policy, "DefaultCluster"), "-n",
                                  cluster.namesrv_addr]) == 0
        yield cluster.grpc_endpoint, cluster.namesrv_addr


@pytest.fixture(scope="package")
def both_servers(apache: tuple[str, str], pocketmq: tuple[str, str]) -> Iterator[dict[str, Any]]:
    channels = {name: grpc.insecure_channel(endpoint) for name, (endpoint, _) in (("apache", apache),
                                                                                  ("pocketmq", pocketmq))}
    yield {name: service_pb2_grpc.MessagingServiceStub(ch) for name, ch in channels.items()}
    for ch in channels.values():
        ch.close()


@pytest.fixture(scope="package")
def consumer_sessions(both_servers: dict[str, Any]) -> Iterator[dict[str, str]]:
    """A simple consumer's Telemetry stream on each server (its Settings are what ReceiveMessage reads), open for
    the package; each server's broker name for the receive topic."""
    stop = threading.Event()
    calls = [telemetry_session(stub, CONSUMER_ID, RECV_GROUP, RECV_TOPIC, D.ClientType.SIMPLE_CONSUMER, stop, 300)
             for stub in both_servers.values()]
    brokers = {}
    for name, stub in both_servers.items():
        route = stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=RECV_TOPIC)), metadata=metadata(),
                                timeout=30)
        brokers[name] = route.message_queues[0].broker.name
    yield brokers
    stop.set()
    for call in calls:
        call.cancel()
