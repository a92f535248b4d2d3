"""pocketmq's gRPC endpoint and Apache RocketMQ 5's own proxy asked the same questions, answers compared.

A module's worth of real Apache RocketMQ (tests/apache: name server, broker and its gRPC proxy in cluster mode,
from Maven Central's jars through `make apache-rocketmq`) beside a pocketmq cluster; each case sends both the same
raw MessagingService requests (Apache's own generated classes, from the Python SDK) and compares status codes,
messages and the Settings values the SDKs depend on. Where pocketmq answers differently on purpose the test says
so (docs/protocol.md §9).
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.cli import main as pocketmq_main
from pocketmq.client import Message, Producer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.recall_message_handle import HandleV1
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import RequestCode
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ

from .conftest import D, S, metadata
from .sdk_helpers import create_topic

TOPIC = "ParityTopic"
TXN_TOPIC = "ParityTxnTopic"  # message.type=TRANSACTION at Apache's (pocketmq's untyped topics take every type)
RECV_TOPIC = "ParityRecvTopic"  # consumed by the receive cases only
DELAY_TOPIC = "ParityDelayTopic"  # message.type=DELAY on both
CONV_TOPIC = "ParityConvTopic"  # a 4.x producer's messages, received over gRPC
RENEW_TOPIC = "ParityRenewTopic"  # auto-renewed receives of push consumers, one queue
GHOST_TOPIC = "ParityGhostTopic"  # an auto-renewed receive of a client without Telemetry, one queue
# Groups made by updateSubGroup (5.5.0's mqadmin at Apache's, pocketmq's own CLI) with -p, and one without.
RETRY_GROUPS = {
    "ParityCustomizedG": '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[15000,15000]}}',
    "ParityExponentialG": '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":12000}}',
    "ParityDefaultG": None,
    # (a push consumer's auto renewal runs out: nacked with the first delay, index 0 of a one-entry `next`)
    "ParityRenewShortG": '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000]}}',
    "ParityRenewLongG": '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[3600000]}}',
}
# Auto renewal on both proxies: an auto-renewed receive hides its messages for 3 s; each scan (every 300 ms) renews
# every handle, all of them within the 2 h ahead of their end (a renewal hides a message up to an hour), until 1.5 s
# after the receive, then nacks it with its group's retry delay.
RENEW_APACHE = {"defaultInvisibleTimeMills": 3000, "renewAheadTimeMillis": 7_200_000,
                "renewSchedulePeriodMillis": 300, "renewMaxTimeMillis": 1500}
RENEW_POCKETMQ = {"default_invisible_time_millis": 3000, "renew_ahead_time_millis": 7_200_000,
                  "renew_schedule_period_millis": 300, "renew_max_time_millis": 1500}


def update_sub_group_args(group: str, policy: str | None, cluster: str) -> list[str]:
    return ["updateSubGroup", "-c", cluster, "-g", group, "-r", "1", *(["-p", policy] if policy else [])]


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the proxy's endpoint, the name server's address)."""
    # recallMessageEnable: RocketMQ's default is off; pocketmq's on (docs/compatibility.md).
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache5"), V5, recallMessageEnable="true") as rmq:
        proxy = ApacheProxy(rmq, **RENEW_APACHE).start()
        try:
            made = rmq.mqadmin("updateTopic", "-t", TOPIC, "-c", rmq.cluster_name, "-r", "4", "-w", "4")
            assert made.returncode == 0, made.stdout + made.stderr
            made = rmq.mqadmin("updateTopic", "-t", TXN_TOPIC, "-c", rmq.cluster_name,
                               "-a", "+message.type=TRANSACTION")
            assert made.returncode == 0, made.stdout + made.stderr
            made = rmq.mqadmin("updateTopic", "-t", RECV_TOPIC, "-c", rmq.cluster_name, "-r", "4", "-w", "4")
            assert made.returncode == 0, made.stdout + made.stderr
            made = rmq.mqadmin("updateTopic", "-t", DELAY_TOPIC, "-c", rmq.cluster_name, "-a", "+message.type=DELAY")
            assert made.returncode == 0, made.stdout + made.stderr
            for one_queue in (CONV_TOPIC, RENEW_TOPIC, GHOST_TOPIC):
                made = rmq.mqadmin("updateTopic", "-t", one_queue, "-c", rmq.cluster_name, "-r", "1", "-w", "1")
                assert made.returncode == 0, made.stdout + made.stderr
            for group, policy in RETRY_GROUPS.items():
                made = rmq.mqadmin(*update_sub_group_args(group, policy, rmq.cluster_name))
                assert made.returncode == 0 and "Exception" not in made.stderr, made.stdout + made.stderr
            yield proxy.endpoint, rmq.namesrv_addr
        finally:
            proxy.stop(signal.SIGKILL)  # the module's servers are thrown away: killed, not shut down
            rmq.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def pocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("pocketmq5"), grpc=True,
                                  proxy_overrides=RENEW_POCKETMQ) as cluster:
        create_topic(cluster, TOPIC)
        create_topic(cluster, TXN_TOPIC)
        create_topic(cluster, RECV_TOPIC)
        for one_queue in (CONV_TOPIC, RENEW_TOPIC, GHOST_TOPIC):
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


@pytest.fixture(scope="module")
def both_servers(apache: tuple[str, str], pocketmq: tuple[str, str]) -> Iterator[dict[str, Any]]:
    channels = {name: grpc.insecure_channel(endpoint) for name, (endpoint, _) in (("apache", apache),
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


async def stored_retry_policies(namesrv: str) -> dict[str, Any]:
    """Each RETRY_GROUPS group's groupRetryPolicy as the broker lists it (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, JSON)."""
    async with MQAdminExt(namesrv, protocol="rocketmq", timeout=30.0) as admin:
        addr = next(iter((await admin.master_addrs()).values()))
        listed = admin._ok(await admin._broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), addr)
    table = listed.decode_body()["subscriptionGroupTable"]
    return {group: dict(table[group]["groupRetryPolicy"]) for group in RETRY_GROUPS}


def test_a_groups_retry_policy(both_servers, apache, pocketmq):
    """updateSubGroup -p: the broker keeps the policy as 5.5.0's (a missing field filled with its default, a group
    without one CUSTOMIZED), and a push consumer of the group gets it as its backoff from either proxy."""
    stored = {name: asyncio.run(stored_retry_policies(namesrv))
              for name, (_, namesrv) in (("apache", apache), ("pocketmq", pocketmq))}
    assert stored["pocketmq"] == stored["apache"]
    assert stored["apache"]["ParityExponentialG"] == {
        "type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 12000, "max": 7200000, "multiplier": 2}}
    for group in RETRY_GROUPS:
        replies = settings_replies(both_servers, D.Settings(
            client_type=D.ClientType.PUSH_CONSUMER, subscription=D.Subscription(
                group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                    topic=D.Resource(name=TOPIC),
                    expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])),
            f"parity-{group}")
        a, p = replies["apache"].settings, replies["pocketmq"].settings
        assert p.backoff_policy == a.backoff_policy, group
        assert a.backoff_policy.max_attempts == 2


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


def test_a_batch_past_the_broker_s_message_size(both_servers):
    # Two messages of 2.5 MiB: each within the proxy's limit, together past the broker's 4 MiB.
    big = [message(b"y" * (5 << 19), message_id=f"0102FC0000000171190B1C3CCC0000C{i:03X}") for i in range(2)]
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=big))
    codes = {name: a.status.code for name, a in answers.items()}
    assert codes["pocketmq"] == codes["apache"], statuses(answers)


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
    entries = {name: [(e.status.code, e.message_id, e.transaction_id, e.recall_handle) for e in a.entries]
               for name, a in answers.items()}
    # (Apache 5's broker gives every send a transaction id: the message id; a recall handle to timer messages only.)
    assert entries["pocketmq"] == entries["apache"] == [(D.Code.OK, "0102FC0000000171190B1C3CCC0000AAAA",
                                                         "0102FC0000000171190B1C3CCC0000AAAA", "")]


def test_a_half_message_gets_a_transaction_id(both_servers):
    half = message(b"half", message_id="0102FC0000000171190B1C3CCC0000BBBB")
    half.topic.name = TXN_TOPIC
    half.system_properties.message_type = D.MessageType.TRANSACTION
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[half]))
    assert_same_status(answers)
    for answer in answers.values():
        [entry] = answer.entries
        assert entry.message_id == "0102FC0000000171190B1C3CCC0000BBBB" and entry.transaction_id


def test_a_message_id_with_a_comma(both_servers):
    """One message, one entry with the whole id, also as the transaction id (pocketmq split the broker's joined
    ids on commas: two entries, and the SDK sent the message again). A batch gets an entry per message on
    pocketmq; Apache 5.5.0's cluster mode answers one, the ids joined with commas."""
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(
        b"comma", message_id="0102FC0000000171190B1C3CCC0000EE01,x")]))
    assert_same_status(answers)
    entries = {name: [(e.status.code, e.message_id, e.transaction_id) for e in a.entries]
               for name, a in answers.items()}
    assert entries["pocketmq"] == entries["apache"] == [
        (D.Code.OK, "0102FC0000000171190B1C3CCC0000EE01,x", "0102FC0000000171190B1C3CCC0000EE01,x")]


# U+00A0 is no whitespace to Java's Character.isWhitespace (StringUtils.isBlank), U+3000 is; U+0085 is a control
# character to both, whitespace to Python only.
@pytest.mark.parametrize("case", ["NBSP tag", "NBSP key", "NBSP message id", "ideographic space key", "NEL tag"])
def test_whitespace_is_java_s(both_servers, case):
    nbsp = "\u00a0"
    system = {"NBSP tag": {"tag": nbsp}, "NBSP key": {"keys": [nbsp]}, "NBSP message id": {"message_id": nbsp},
              "ideographic space key": {"keys": ["\u3000"]}, "NEL tag": {"tag": "\x85"}}[case]
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(b"ws", **system)]))
    assert_same_status(answers)


# --- consumption ---------------------------------------------------------------------------------------------

CONSUMER_ID = "parity-consumer@1"
RECV_GROUP = "ParityRecvGroup"


def telemetry_session(stub: Any, client_id: str, group: str, topic: str, client_type: Any, stop: threading.Event,
                      timeout: float) -> Any:
    """A consumer's Telemetry stream: its Settings (group, one topic, every tag) register it with the proxy, and the
    stream stays open until ``stop``."""
    def commands() -> Iterator[Any]:
        yield S.TelemetryCommand(settings=D.Settings(
            client_type=client_type, request_timeout=Duration(seconds=3),
            subscription=D.Subscription(group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name=topic), expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])))
        stop.wait(timeout)

    call = stub.Telemetry(commands(), metadata=metadata(client_id), timeout=timeout)
    assert next(call).status.code == D.Code.OK
    return call


@pytest.fixture(scope="module")
def consumer_sessions(both_servers: dict[str, Any]) -> Iterator[dict[str, str]]:
    """A simple consumer's Telemetry stream on each server (its Settings are what ReceiveMessage reads), open for
    the module; each server's broker name for the receive topic."""
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


def receive_request(broker: str, topic: str = RECV_TOPIC, group: str = RECV_GROUP, invisible_ms: int = 30_000,
                    polling_ms: int = 5_000) -> Any:
    request = S.ReceiveMessageRequest(
        group=D.Resource(name=group), message_queue=D.MessageQueue(topic=D.Resource(name=topic),
                                                                   broker=D.Broker(name=broker)),
        filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"), batch_size=32,
        invisible_duration=Duration(), long_polling_timeout=Duration())
    request.invisible_duration.FromMilliseconds(invisible_ms)
    request.long_polling_timeout.FromMilliseconds(polling_ms)
    return request


def receive_both(both_servers: dict[str, Any], brokers: dict[str, str], timeout: float = 30,
                 **kwargs: Any) -> dict[str, list[Any]]:
    """The same receive of both servers at once (a long poll that finds nothing waits its 5 s on each)."""
    def one(name: str) -> list[Any]:
        return list(both_servers[name].ReceiveMessage(receive_request(brokers[name], **kwargs),
                                                      metadata=metadata(CONSUMER_ID), timeout=timeout))

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(one, name) for name in both_servers}
        return {name: future.result() for name, future in futures.items()}


def shape(responses: list[Any]) -> list[Any]:
    return [(r.status.code, r.status.message) if r.WhichOneof("content") == "status" else r.WhichOneof("content")
            for r in responses]


@pytest.mark.parametrize("case", ["unknown topic", "system topic", "illegal group", "invisible time too small",
                                  "invisible time too large"])
def test_receive_refusals(both_servers, consumer_sessions, case):
    kwargs: dict[str, Any] = {
        "unknown topic": {"topic": "NoSuchTopic5"},
        "system topic": {"topic": "TBW102"},
        "illegal group": {"group": "bad group!"},
        "invisible time too small": {"invisible_ms": 9_999},
        "invisible time too large": {"invisible_ms": 12 * 3600 * 1000 + 1},
    }[case]
    got = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions, **kwargs).items()}
    assert got["pocketmq"] == got["apache"], got
    assert got["apache"][-1] == "delivery_timestamp"


def test_a_receive_whose_deadline_is_shorter_than_the_polling_time(both_servers, consumer_sessions):
    got = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions, timeout=3,
                                                      polling_ms=10_000).items()}
    assert got["pocketmq"] == got["apache"], got


def without_frame(status: Any) -> tuple[int, str]:
    """(code, message) without the Java stack frame RocketMQ's proxy appends to an internal error's text."""
    return status.code, ". ".join(status.message.split(". ")[:2])


# A handle that does not parse, one that is not numbers, and one whose invisible time ran out in 1970. Asked by
# a client with a Telemetry stream, as the SDKs are: without one, Apache 5.5.0's ChangeInvisibleDuration of a
# well-formed handle fails with a NullPointerException (its receipt-handle lookup keys on the missing channel),
# where pocketmq answers as for any client.
@pytest.mark.parametrize("handle", ["not a handle", "a b c d e f g h", "0 1 2 3 0 broker-a 0 0 5"])
def test_bad_receipt_handles(both_servers, consumer_sessions, handle):
    answers = ask(both_servers, "AckMessage", S.AckMessageRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
        entries=[S.AckMessageEntry(message_id="m", receipt_handle=handle)]), md=metadata(CONSUMER_ID))
    got = {name: (without_frame(a.status), [(without_frame(e.status), e.message_id, e.receipt_handle)
                                             for e in a.entries]) for name, a in answers.items()}
    assert got["pocketmq"] == got["apache"], got
    change = S.ChangeInvisibleDurationRequest(group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
                                              receipt_handle=handle, message_id="m",
                                              invisible_duration=Duration(seconds=10))
    answers = ask(both_servers, "ChangeInvisibleDuration", change, md=metadata(CONSUMER_ID))
    got = {name: without_frame(a.status) for name, a in answers.items()}
    assert got["pocketmq"] == got["apache"], got


def test_receive_ack_and_change_invisible_duration(both_servers, consumer_sessions):
    for i in range(2):
        answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[D.Message(
            topic=D.Resource(name=RECV_TOPIC), body=f"consume me {i}".encode(),
            system_properties=D.SystemProperties(message_id=f"0102FC0000000171190B1C3CCC0000CC0{i}", tag="TagR",
                                                 message_type=D.MessageType.NORMAL,
                                                 body_encoding=D.Encoding.IDENTITY))]))
        assert_same_status(answers)
    got: dict[str, list[Any]] = {"apache": [], "pocketmq": []}
    for _ in range(10):
        for name, responses in receive_both(both_servers, consumer_sessions).items():
            got[name].extend(r.message for r in responses if r.WhichOneof("content") == "message")
        if all(len(m) >= 2 for m in got.values()):
            break
    for name, msgs in got.items():
        assert sorted(m.body for m in msgs) == [b"consume me 0", b"consume me 1"], name
    views = {name: sorted((m.system_properties.message_id, m.system_properties.tag,
                           m.system_properties.delivery_attempt, m.system_properties.body_digest.checksum,
                           m.system_properties.body_encoding, m.system_properties.message_type) for m in msgs)
             for name, msgs in got.items()}
    assert views["pocketmq"] == views["apache"]
    first = {name: sorted(msgs, key=lambda m: m.body)[0] for name, msgs in got.items()}
    second = {name: sorted(msgs, key=lambda m: m.body)[1] for name, msgs in got.items()}
    acks = {name: stub.AckMessage(S.AckMessageRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC), entries=[S.AckMessageEntry(
            message_id=first[name].system_properties.message_id,
            receipt_handle=first[name].system_properties.receipt_handle)]), metadata=metadata(CONSUMER_ID), timeout=30)
        for name, stub in both_servers.items()}
    assert_same_status(acks)
    assert {n: [(e.status.code, e.status.message) for e in a.entries] for n, a in acks.items()}["pocketmq"] == \
        [(e.status.code, e.status.message) for e in acks["apache"].entries]
    changes = {name: stub.ChangeInvisibleDuration(S.ChangeInvisibleDurationRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
        receipt_handle=second[name].system_properties.receipt_handle,
        message_id=second[name].system_properties.message_id, invisible_duration=Duration(seconds=60)),
        metadata=metadata(CONSUMER_ID), timeout=30) for name, stub in both_servers.items()}
    assert_same_status(changes)
    for name, change in changes.items():
        assert change.receipt_handle and change.receipt_handle != second[name].system_properties.receipt_handle
        # The new handle acks it, on both.
        ack = both_servers[name].AckMessage(S.AckMessageRequest(
            group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC), entries=[S.AckMessageEntry(
                message_id=second[name].system_properties.message_id, receipt_handle=change.receipt_handle)]),
            metadata=metadata(CONSUMER_ID), timeout=30)
        assert ack.status.code == D.Code.OK, (name, ack.status)
    # Nothing left: the same "nothing" on both.
    nothing = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions).items()}
    assert nothing["pocketmq"] == nothing["apache"], nothing


def test_recall_of_a_handle_that_is_none(both_servers):
    answers = ask(both_servers, "RecallMessage", S.RecallMessageRequest(topic=D.Resource(name=DELAY_TOPIC),
                                                                        recall_handle="not a handle"))
    assert_same_status(answers)


def delay_message(message_id: str, deliver_ms: int) -> Any:
    m = message(b"delayed", message_id=message_id)
    m.topic.name = DELAY_TOPIC
    m.system_properties.message_type = D.MessageType.DELAY
    m.system_properties.delivery_timestamp.FromMilliseconds(deliver_ms)
    return m


def recall(both_servers: dict[str, Any], handles: dict[str, str], topic: str = DELAY_TOPIC) -> dict[str, Any]:
    return {name: stub.RecallMessage(S.RecallMessageRequest(topic=D.Resource(name=topic),
                                                            recall_handle=handles[name]),
                                     metadata=metadata(), timeout=30) for name, stub in both_servers.items()}


def test_a_delay_message_is_recalled_by_its_handle(both_servers):
    """The handle a DELAY send answers with is Apache's, byte for byte (the same slot of the same precision), and
    recalling with it is answered alike."""
    message_id = "0102FC0000000171190B1C3CCC0000CCCC"
    deliver = (int(time.time()) + 60) * 1000 + 500
    sent = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[delay_message(message_id, deliver)]))
    assert_same_status(sent)
    handles = {name: a.entries[0].recall_handle for name, a in sent.items()}
    assert handles["pocketmq"] == handles["apache"] == HandleV1.build_handle(
        DELAY_TOPIC, "broker-a", str(deliver - 500 + 1), message_id)
    answers = recall(both_servers, handles)
    assert_same_status(answers)
    assert {name: a.message_id for name, a in answers.items()} == {"apache": message_id, "pocketmq": message_id}


@pytest.mark.parametrize("case", ["due already", "too far ahead", "another topic", "another broker",
                                  "not a number"])
def test_recall_refusals(both_servers, case):
    now = int(time.time() * 1000)
    topic, broker, timestamp = DELAY_TOPIC, "broker-a", str(now + 60_000)
    if case == "due already":
        timestamp = str(now - 1_000)
    elif case == "too far ahead":
        timestamp = str(now + 4 * 86_400_000)  # (timerMaxDelaySec: three days)
    elif case == "another topic":
        topic = TOPIC
    elif case == "another broker":
        broker = "no-such-broker"
    else:
        timestamp = "soon"
    handle = HandleV1.build_handle(topic, broker, timestamp, "0102FC0000000171190B1C3CCC0000DDDD")
    answers = recall(both_servers, {"apache": handle, "pocketmq": handle})
    assert_same_status(answers)
    assert answers["pocketmq"].status.code != D.Code.OK


def test_a_4x_producer_s_message_as_a_5x_consumer_reads_it(apache, pocketmq, both_servers):
    """Keys ending with the separator (Java's split drops the empty last one), TIMER_DELAY_SEC (a delivery time:
    its delay from when it is handed out) and a born host without __BORNHOST (the IP alone)."""
    run = str(time.time_ns())
    for _, namesrv in (apache, pocketmq):
        asyncio.run(_produce_4x(namesrv, run))
    group = "ParityConvGroup"
    stop = threading.Event()
    calls = []
    try:
        for stub in both_servers.values():
            def commands() -> Iterator[Any]:
                yield S.TelemetryCommand(settings=D.Settings(
                    client_type=D.ClientType.SIMPLE_CONSUMER, request_timeout=Duration(seconds=3),
                    subscription=D.Subscription(group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                        topic=D.Resource(name=CONV_TOPIC),
                        expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])))
                stop.wait(120)

            call = stub.Telemetry(commands(), metadata=metadata(CONSUMER_ID), timeout=120)
            assert next(call).status.code == D.Code.OK
            calls.append(call)
        brokers = {name: stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=CONV_TOPIC)), metadata=metadata(),
                                         timeout=30).message_queues[0].broker.name
                   for name, stub in both_servers.items()}
        asked_at = time.time_ns() // 1_000_000
        got: dict[str, dict[str, Any]] = {"apache": {}, "pocketmq": {}}
        deadline = time.monotonic() + 60
        while any(len(m) < 2 for m in got.values()):
            assert time.monotonic() < deadline, {name: list(m) for name, m in got.items()}
            for name, responses in receive_both(both_servers, brokers, topic=CONV_TOPIC, group=group).items():
                for r in responses:
                    if r.WhichOneof("content") == "message":
                        got[name][r.message.system_properties.tag] = r.message.system_properties
    finally:
        stop.set()
        for call in calls:
            call.cancel()
    keys = {name: (list(m["K" + run].keys), m["K" + run].born_host) for name, m in got.items()}
    assert keys["pocketmq"] == keys["apache"] == (["k1", "k2"], "127.0.0.1"), keys
    delayed = {name: (m["S" + run].message_type, m["S" + run].HasField("delivery_timestamp"))
               for name, m in got.items()}
    assert delayed["pocketmq"] == delayed["apache"] == (D.MessageType.DELAY, True), delayed
    assert all(m["S" + run].delivery_timestamp.ToMilliseconds() >= asked_at + 1000 for m in got.values())


async def _produce_4x(namesrv: str, run: str) -> None:
    async with Producer("ParityConvProducer", namesrv, protocol="rocketmq") as producer:
        await producer.send(Message(CONV_TOPIC, b"keys", tags="K" + run, keys="k1 k2 "))
        delayed = Message(CONV_TOPIC, b"delayed", tags="S" + run)
        delayed.delay_time_sec = 1
        await producer.send(delayed)


# --- auto renewal -----------------------------------------------------------------------------------------------


def push_session(stub: Any, client_id: str, group: str, stop: threading.Event) -> Any:
    """A push consumer's Telemetry stream (its Settings register it with the proxy), open until ``stop``."""
    return telemetry_session(stub, client_id, group, RENEW_TOPIC, D.ClientType.PUSH_CONSUMER, stop, 120)


def auto_renewed_receive(stub: Any, broker: str, topic: str, group: str, client_id: str) -> list[Any]:
    request = receive_request(broker, topic=topic, group=group)
    request.auto_renew = True
    request.ClearField("invisible_duration")  # (a push consumer names none: the proxy picks it)
    return list(stub.ReceiveMessage(request, metadata=metadata(client_id), timeout=30))


def messages_of(responses: list[Any]) -> list[Any]:
    return [r.message for r in responses if r.WhichOneof("content") == "message"]


def handle_invisible_time(handle: str) -> int:
    """The invisible time a receipt handle was made with (the third field of the broker's POP_CK extra info)."""
    return int(handle.split(" ")[2])


def send_one(stub: Any, topic: str, message_id: str) -> None:
    sent = stub.SendMessage(S.SendMessageRequest(messages=[D.Message(
        topic=D.Resource(name=topic), body=b"renew me", system_properties=D.SystemProperties(
            message_id=message_id, message_type=D.MessageType.NORMAL, body_encoding=D.Encoding.IDENTITY))]),
        metadata=metadata(), timeout=30)
    assert sent.status.code == D.Code.OK, sent.status


def _renewal_runs_out(name: str, stub: Any) -> tuple[list[Any], Any, list[Any]]:
    """Both groups receive the topic's message with auto renewal and never ack it; the one of the short retry
    delay is received again until it comes back (acked then), the long one's is asked for once after that."""
    broker = stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=RENEW_TOPIC)), metadata=metadata(),
                             timeout=30).message_queues[0].broker.name
    stop = threading.Event()
    calls = [push_session(stub, f"renew-{g}@1", g, stop) for g in ("ParityRenewShortG", "ParityRenewLongG")]
    try:
        send_one(stub, RENEW_TOPIC, "0102FC0000000171190B1C3CCC0000AA01")
        first = [messages_of(auto_renewed_receive(stub, broker, RENEW_TOPIC, g, f"renew-{g}@1"))
                 for g in ("ParityRenewShortG", "ParityRenewLongG")]
        again: list[Any] = []
        deadline = time.monotonic() + 60
        answers: list[Any] = []
        while not again:
            assert time.monotonic() < deadline, (name, "the short group's message never came back", first, answers)
            answers.append(auto_renewed_receive(stub, broker, RENEW_TOPIC, "ParityRenewShortG",
                                                "renew-ParityRenewShortG@1"))
            again = messages_of(answers[-1])
        acked = stub.AckMessage(S.AckMessageRequest(
            group=D.Resource(name="ParityRenewShortG"), topic=D.Resource(name=RENEW_TOPIC), entries=[
                S.AckMessageEntry(message_id=m.system_properties.message_id,
                                  receipt_handle=m.system_properties.receipt_handle) for m in again]),
            metadata=metadata("renew-ParityRenewShortG@1"), timeout=30)
        assert acked.status.code == D.Code.OK, acked.status
        long_again = auto_renewed_receive(stub, broker, RENEW_TOPIC, "ParityRenewLongG", "renew-ParityRenewLongG@1")
        return first, again, long_again
    finally:
        stop.set()
        for call in calls:
            call.cancel()


def test_a_message_whose_auto_renewal_ran_out_comes_back_after_its_groups_retry_delay(both_servers):
    """Two push consumers of groups whose retry policies' first delays are 1 s and 1 hour: each receives the
    message with auto renewal (hidden for the proxy's default invisible time) and never acks it. Renewed until
    renewMaxTimeMillis, it is then nacked with its group's delay: the 1 s group's comes back (its second delivery
    attempt), the 1 hour group's not, though its renewal ran out at the same time and its default invisible time
    is long over by then."""
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_renewal_runs_out, name, stub) for name, stub in both_servers.items()}
        got = {name: future.result() for name, future in futures.items()}
    views = {name: ([[(m.system_properties.message_id, m.system_properties.delivery_attempt,
                       handle_invisible_time(m.system_properties.receipt_handle)) for m in msgs] for msgs in first],
                    [(m.system_properties.message_id, m.system_properties.delivery_attempt) for m in again],
                    shape(long_again))
             for name, (first, again, long_again) in got.items()}
    assert views["pocketmq"] == views["apache"], views
    once = [("0102FC0000000171190B1C3CCC0000AA01", 1, 3000)]
    assert views["apache"][:2] == ([once, once], [("0102FC0000000171190B1C3CCC0000AA01", 2)])
    assert views["apache"][2][0][0] == D.Code.MESSAGE_NOT_FOUND


def test_an_auto_renewed_receive_of_a_client_without_telemetry(both_servers):
    """A client that never opened a Telemetry stream receives with auto renewal: Apache 5.5.0 refuses it (its
    Settings are missing: a NullPointerException, an internal error); pocketmq serves the message unrenewed, hidden
    for the proxy's default invisible time, after which it comes back (its second delivery attempt) unacked."""
    brokers = {name: stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=GHOST_TOPIC)), metadata=metadata(),
                                     timeout=30).message_queues[0].broker.name for name, stub in both_servers.items()}
    message_id = "0102FC0000000171190B1C3CCC0000AA02"
    for stub in both_servers.values():
        send_one(stub, GHOST_TOPIC, message_id)
    answers = {name: auto_renewed_receive(stub, brokers[name], GHOST_TOPIC, "ParityGhostG", "ghost@1")
               for name, stub in both_servers.items()}
    refused = without_frame(answers["apache"][0].status)
    assert refused[0] == D.Code.INTERNAL_SERVER_ERROR and '"settings" is null' in refused[1], refused
    assert not messages_of(answers["apache"])
    [msg] = messages_of(answers["pocketmq"])
    assert (msg.system_properties.message_id, msg.system_properties.delivery_attempt) == (message_id, 1)
    assert handle_invisible_time(msg.system_properties.receipt_handle) == 3000
    stub = both_servers["pocketmq"]
    again: list[Any] = []
    deadline = time.monotonic() + 60
    while not again:
        assert time.monotonic() < deadline, "the message never came back"
        again = messages_of(auto_renewed_receive(stub, brokers["pocketmq"], GHOST_TOPIC, "ParityGhostG", "ghost@1"))
    assert [(m.system_properties.message_id, m.system_properties.delivery_attempt) for m in again] == \
        [(message_id, 2)]
