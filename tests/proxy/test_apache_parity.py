"""pocketmq's gRPC endpoint and Apache RocketMQ 5's own proxy asked the same questions, answers compared.

A module's worth of real Apache RocketMQ (tests/apache: name server, broker and its gRPC proxy in cluster mode,
from Maven Central's jars through `make apache-rocketmq`) beside a pocketmq cluster; each case sends both the same
raw MessagingService requests (Apache's own generated classes, from the Python SDK) and compares status codes,
messages and the Settings values the SDKs depend on. Where pocketmq answers differently on purpose the test says
so (docs/protocol.md §9).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ

from .conftest import D, S, metadata
from .sdk_helpers import create_topic

TOPIC = "ParityTopic"
TXN_TOPIC = "ParityTxnTopic"  # message.type=TRANSACTION at Apache's (pocketmq's untyped topics take every type)


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache5"), V5) as rmq:
        proxy = ApacheProxy(rmq).start()
        try:
            made = rmq.mqadmin("updateTopic", "-t", TOPIC, "-c", rmq.cluster_name, "-r", "4", "-w", "4")
            assert made.returncode == 0, made.stdout + made.stderr
            made = rmq.mqadmin("updateTopic", "-t", TXN_TOPIC, "-c", rmq.cluster_name,
                               "-a", "+message.type=TRANSACTION")
            assert made.returncode == 0, made.stdout + made.stderr
            yield proxy.endpoint
        finally:
            proxy.stop()


@pytest.fixture(scope="module")
def pocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("pocketmq5"), grpc=True) as cluster:
        create_topic(cluster, TOPIC)
        create_topic(cluster, TXN_TOPIC)
        yield cluster.grpc_endpoint


@pytest.fixture(scope="module")
def both_servers(apache: str, pocketmq: str) -> Iterator[dict[str, Any]]:
    channels = {name: grpc.insecure_channel(endpoint) for name, endpoint in (("apache", apache),
                                                                             ("pocketmq", pocketmq))}
    yield {name: service_pb2_grpc.MessagingServiceStub(ch) for name, ch in channels.items()}
    for ch in channels.values():
        ch.close()


def ask(both_servers: dict[str, Any], method: str, request: Any, md: Any = None) -> dict[str, Any]:
    return {name: getattr(stub, method)(request, metadata=metadata() if md is None else md, timeout=30)
            for name, stub in both_servers.items()}


def statuses(answers: dict[str, Any]) -> dict[str, tuple[int, str]]:
    return {name: (a.status.code, a.status.message) for name, a in answers.items()}


def assert_same_status(answers: dict[str, Any]) -> None:
    got = statuses(answers)
    assert got["pocketmq"] == got["apache"], got


def message(body: bytes = b"x", message_id: str = "0102FC0000000171190B1C3CCC000000E9", **system: Any) -> Any:
    return D.Message(topic=D.Resource(name=TOPIC), body=body, system_properties=D.SystemProperties(
        message_id=message_id, message_type=D.MessageType.NORMAL, body_encoding=D.Encoding.IDENTITY, **system))


def test_a_call_without_client_id(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name=TOPIC)), md=()))


def test_an_unknown_topic(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name="NoSuchTopic5"))))


def test_a_system_topic(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name="TBW102"))))


def test_the_route_of_a_topic(both_servers):
    answers = ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name=TOPIC)))
    assert_same_status(answers)
    shape = {name: [(q.id, q.permission, q.broker.id) for q in a.message_queues] for name, a in answers.items()}
    assert shape["pocketmq"] == shape["apache"]
    # On purpose: an untyped topic takes every type here; Apache reads it as NORMAL.
    assert {tuple(q.accept_message_types) for q in answers["apache"].message_queues} == {(D.MessageType.NORMAL,)}


def test_a_heartbeat_before_settings(both_servers):
    assert_same_status(ask(both_servers, "Heartbeat", S.HeartbeatRequest(client_type=D.ClientType.PRODUCER),
                           md=metadata("no-settings@1")))


def settings_replies(both_servers: dict[str, Any], settings: Any, who: str) -> dict[str, Any]:
    """Each server's reply to ``settings`` on a Telemetry stream kept open until the reply is read (Apache's proxy
    ends a stream the client half-closes before its reply is written, as the SDKs never do)."""
    replies = {}
    for name, stub in both_servers.items():
        read = threading.Event()

        def commands() -> Iterator[Any]:
            yield S.TelemetryCommand(settings=settings)
            read.wait(30)  # noqa: B023 (used while this iteration's call runs)

        call = stub.Telemetry(commands(), metadata=metadata(f"{who}-{name}@1"), timeout=30)
        replies[name] = next(call)
        read.set()
        call.cancel()
    return replies


def test_the_settings_reply_of_a_producer(both_servers):
    replies = settings_replies(both_servers, D.Settings(client_type=D.ClientType.PRODUCER,
                                                publishing=D.Publishing(topics=[D.Resource(name=TOPIC)])),
                               "parity-producer")
    a, p = replies["apache"], replies["pocketmq"]
    assert (p.status.code, p.status.message) == (a.status.code, a.status.message)
    assert p.settings.backoff_policy == a.settings.backoff_policy
    assert p.settings.publishing == a.settings.publishing
    assert p.settings.metric == a.settings.metric


def test_the_settings_reply_of_a_push_consumer(both_servers):
    replies = settings_replies(both_servers, D.Settings(
        client_type=D.ClientType.PUSH_CONSUMER, subscription=D.Subscription(
            group=D.Resource(name="ParityGroup"), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name=TOPIC), expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])),
        "parity-consumer")
    a, p = replies["apache"].settings, replies["pocketmq"].settings
    assert p.backoff_policy == a.backoff_policy
    assert (p.subscription.receive_batch_size, p.subscription.long_polling_timeout, p.subscription.fifo) == \
        (a.subscription.receive_batch_size, a.subscription.long_polling_timeout, a.subscription.fifo)


@pytest.mark.parametrize("case", ["too large", "empty", "no id", "system key", "bad tag", "no message",
                                  "control character key"])
def test_send_refusals(both_servers, case):
    if case == "no message":
        request = S.SendMessageRequest()
    else:
        msg = {"too large": lambda: message(body=b"x" * (4 * 1024 * 1024 + 1)),
               "empty": lambda: message(body=b""),
               "no id": lambda: message(message_id=""),
               "system key": lambda: message(),
               "bad tag": lambda: message(tag="a|b"),
               "control character key": lambda: message(keys=["a\x01b"])}[case]()
        if case == "system key":
            msg.user_properties["UNIQ_KEY"] = "mine"
        request = S.SendMessageRequest(messages=[msg])
    assert_same_status(ask(both_servers, "SendMessage", request))


def test_query_assignment(both_servers):
    answers = ask(both_servers, "QueryAssignment", S.QueryAssignmentRequest(topic=D.Resource(name=TOPIC),
                                                                     group=D.Resource(name="ParityGroup")))
    assert_same_status(answers)
    shape = {name: [(x.message_queue.id, x.message_queue.permission, x.message_queue.broker.id)
                    for x in a.assignments] for name, a in answers.items()}
    assert shape["pocketmq"] == shape["apache"]


def test_end_transaction_of_an_unknown_transaction(both_servers):
    assert_same_status(ask(both_servers, "EndTransaction", S.EndTransactionRequest(
        topic=D.Resource(name=TOPIC), message_id="m", transaction_id="unknown",
        resolution=D.TransactionResolution.COMMIT, source=D.TransactionSource.SOURCE_CLIENT)))
    assert_same_status(ask(both_servers, "EndTransaction", S.EndTransactionRequest(topic=D.Resource(name=TOPIC))))


def test_a_send_answers_with_the_clients_message_id(both_servers):
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(
        b"parity", message_id="0102FC0000000171190B1C3CCC0000AAAA", tag="TagP", keys=["k1"])]))
    assert_same_status(answers)
    entries = {name: [(e.status.code, e.message_id, e.transaction_id) for e in a.entries]
               for name, a in answers.items()}
    # (Apache 5's broker gives every send a transaction id: the message id.)
    assert entries["pocketmq"] == entries["apache"] == [(D.Code.OK, "0102FC0000000171190B1C3CCC0000AAAA",
                                                         "0102FC0000000171190B1C3CCC0000AAAA")]


def test_a_half_message_gets_a_transaction_id(both_servers):
    half = message(b"half", message_id="0102FC0000000171190B1C3CCC0000BBBB")
    half.topic.name = TXN_TOPIC
    half.system_properties.message_type = D.MessageType.TRANSACTION
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[half]))
    assert_same_status(answers)
    for answer in answers.values():
        [entry] = answer.entries
        assert entry.message_id == "0102FC0000000171190B1C3CCC0000BBBB" and entry.transaction_id
