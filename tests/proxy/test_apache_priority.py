"""RocketMQ 5.5's priority messages and lite topics, asked of Apache RocketMQ 5.5.0 (broker and gRPC proxy) and of
pocketmq alike, answers compared.

A PRIORITY topic (``message.type=PRIORITY``) takes messages with a priority (SystemProperties.priority, the property
``_SYS_MSG_PRIORITY_``, an int >= 0): the broker puts one in the queue of its number (the topic's last past it), and
a pop reads the topic's queues from the highest down, so the highest priority is received first. pocketmq has no
lite topics: it refuses a LITE topic and lite consumers, and a lite send is refused as a type conflict on both.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.client import Message, Producer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import ResponseCode
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import V5, ApacheRocketMQ

from .apache_parity.calls import telemetry_session
from .conftest import D, S, metadata

PRIORITY_TOPIC = "PrioTopic"  # the gRPC sends' (refused or not)
RECEIVE_TOPIC = "PrioReceiveTopic"  # the receive case's alone
REMOTING_TOPIC = "PrioRemotingTopic"  # a 4.x producer's sends
UNTYPED_TOPIC = "PrioUntypedTopic"  # no message.type (NORMAL to Apache's proxy; its broker checks no type)
NORMAL_TOPIC = "PrioNormalTopic"
LITE_TOPIC = "PrioLiteTopic"
PRIORITY = {"+message.type": "PRIORITY"}
TOPICS = {PRIORITY_TOPIC: PRIORITY, RECEIVE_TOPIC: PRIORITY, REMOTING_TOPIC: PRIORITY, UNTYPED_TOPIC: {},
          NORMAL_TOPIC: {"+message.type": "NORMAL"}}
GROUP = "PrioGroup"


async def create_topics(namesrv: str) -> dict[str, Any]:
    """Each topic created over UPDATE_AND_CREATE_TOPIC, four queues; what each creation answered (LITE's too) and
    the attributes the broker keeps."""
    out: dict[str, Any] = {}
    async with MQAdminExt(namesrv, protocol="rocketmq", timeout=30.0) as admin:
        addr = next(iter((await admin.master_addrs()).values()))
        for topic, attributes in {**TOPICS, LITE_TOPIC: {"+message.type": "LITE"}}.items():
            try:
                await admin.create_and_update_topic_config(addr, TopicConfig(topic, 4, 4, 6, attributes=attributes))
                out[topic] = dict((await admin.examine_topic_config(addr, topic)).attributes or {})
            except MQBrokerException as e:
                out[topic] = (e.code, e.remark)
    return out


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str, dict[str, Any]]]]:
    """Per server: its gRPC endpoint, its name server, what the topics' creation answered."""
    with (ApacheRocketMQ(tmp_path_factory.mktemp("apache5"), V5).killed_at_exit() as rmq,
          ApacheProxy(rmq).killed_at_exit() as proxy,
          embedded.ThreadedCluster(tmp_path_factory.mktemp("pocketmq5"), grpc=True) as cluster):
        yield {"apache": (proxy.endpoint, rmq.namesrv_addr, asyncio.run(create_topics(rmq.namesrv_addr))),
               "pocketmq": (cluster.grpc_endpoint, cluster.namesrv_addr,
                            asyncio.run(create_topics(cluster.namesrv_addr)))}


@pytest.fixture(scope="module")
def stubs(servers: dict[str, tuple[str, str, dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    channels = {name: grpc.insecure_channel(endpoint) for name, (endpoint, _, _) in servers.items()}
    yield {name: service_pb2_grpc.MessagingServiceStub(ch) for name, ch in channels.items()}
    for ch in channels.values():
        ch.close()


def message(topic: str, body: bytes = b"x", message_id: str = "0102FC0000000171190B1C3CCC0000D001",
            **system: Any) -> Any:
    system = {"message_type": D.MessageType.PRIORITY, **system}
    return D.Message(topic=D.Resource(name=topic), body=body, system_properties=D.SystemProperties(
        message_id=message_id, body_encoding=D.Encoding.IDENTITY, **system))


def send(stubs: dict[str, Any], msg: Any) -> dict[str, tuple[int, str]]:
    answers = {name: stub.SendMessage(S.SendMessageRequest(messages=[msg]), metadata=metadata(), timeout=30)
               for name, stub in stubs.items()}
    return {name: (a.status.code, a.status.message) for name, a in answers.items()}


def test_a_priority_topic_is_made_and_a_lite_topic_refused(servers):
    apache, pocketmq = servers["apache"][2], servers["pocketmq"][2]
    for topic in TOPICS:
        assert pocketmq[topic] == apache[topic], topic
    assert apache[PRIORITY_TOPIC] == {"message.type": "PRIORITY"}
    # On purpose: 5.5.0 makes it; pocketmq could keep its messages but no lite consumer could read them.
    assert apache[LITE_TOPIC] == {"message.type": "LITE"}
    assert pocketmq[LITE_TOPIC] == (ResponseCode.INVALID_PARAMETER, "LITE message type is not supported.")


def test_the_route_of_a_priority_topic(stubs):
    routes = {name: stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=PRIORITY_TOPIC)),
                                    metadata=metadata(), timeout=30) for name, stub in stubs.items()}
    types = {name: {tuple(q.accept_message_types) for q in r.message_queues} for name, r in routes.items()}
    assert types["pocketmq"] == types["apache"] == {(D.MessageType.PRIORITY,)}


SENDS = {
    # the type is the properties' (a priority makes PRIORITY, below a message group, a delay or a transaction), not
    # the request's message_type
    "priority": lambda: message(PRIORITY_TOPIC, priority=2),
    "priority 0 typed NORMAL": lambda: message(PRIORITY_TOPIC, priority=0, message_type=D.MessageType.NORMAL),
    "no priority": lambda: message(PRIORITY_TOPIC),
    "priority and message group": lambda: message(PRIORITY_TOPIC, priority=1, message_group="g"),
    "priority to a NORMAL topic": lambda: message(NORMAL_TOPIC, priority=2),
    "lite topic to a NORMAL topic": lambda: message(NORMAL_TOPIC, lite_topic="lt1"),
    "blank lite topic": lambda: message(NORMAL_TOPIC, lite_topic=" "),
    "lite topic of odd characters": lambda: message(NORMAL_TOPIC, lite_topic="a b"),
    "lite topic too long": lambda: message(NORMAL_TOPIC, lite_topic="l" * 65),
    "LITE typed without lite topic": lambda: message(NORMAL_TOPIC, message_type=D.MessageType.LITE),
}


@pytest.mark.parametrize("case", sorted(SENDS))
def test_sends(stubs, case):
    got = send(stubs, SENDS[case]())
    assert got["pocketmq"] == got["apache"], got


@pytest.mark.parametrize("name", ["_SYS_MSG_PRIORITY_", "__LITE_TOPIC"])
def test_the_properties_are_no_user_properties(stubs, name):
    msg = message(PRIORITY_TOPIC, priority=1)
    msg.user_properties[name] = "1"
    got = send(stubs, msg)
    assert got["pocketmq"] == got["apache"] == (D.Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: "
                                                                                     f"{name}")


def test_a_negative_priority(stubs):
    """5.5.0's Message.setPriority throws: an internal error (its text then names the Java frame)."""
    got = send(stubs, message(PRIORITY_TOPIC, priority=-1))
    assert got["pocketmq"][0] == got["apache"][0] == D.Code.INTERNAL_SERVER_ERROR
    assert got["apache"][1].startswith(got["pocketmq"][1]), got


def test_lite_consumers_are_refused(stubs):
    """A lite push consumer needs a lite group (5.5.0: ILLEGAL_CONSUMER_GROUP, the stream ended INVALID_ARGUMENT);
    5.5.0 registers no lite simple consumer (an internal error)."""
    for client_type in (D.ClientType.LITE_PUSH_CONSUMER, D.ClientType.LITE_SIMPLE_CONSUMER):
        ended = {}
        for name, stub in stubs.items():
            settings = D.Settings(client_type=client_type, request_timeout=Duration(seconds=3), subscription=(
                D.Subscription(group=D.Resource(name=GROUP), subscriptions=[D.SubscriptionEntry(
                    topic=D.Resource(name=PRIORITY_TOPIC),
                    expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])))
            read = threading.Event()

            def commands() -> Iterator[Any]:
                yield S.TelemetryCommand(settings=settings)  # noqa: B023 (used while this iteration's call runs)
                read.wait(30)  # noqa: B023 (Apache's proxy ends a half-closed stream before it answers)

            call = stub.Telemetry(commands(), metadata=metadata(f"lite-{name}@1"), timeout=30)
            with pytest.raises(grpc.RpcError) as e:
                next(call)
            read.set()
            ended[name] = (e.value.code(), e.value.details())
        assert ended["pocketmq"] == ended["apache"], ended


def receive_all(stub: Any, count: int) -> list[Any]:
    """``count`` messages of RECEIVE_TOPIC received one at a time by a simple consumer."""
    stop = threading.Event()
    session = telemetry_session(stub, "prio-consumer@1", GROUP, RECEIVE_TOPIC, D.ClientType.SIMPLE_CONSUMER, stop, 60)
    route = stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=RECEIVE_TOPIC)), metadata=metadata(),
                            timeout=30)
    got: list[Any] = []
    try:
        for _ in range(count * 2):
            if len(got) == count:
                break
            request = S.ReceiveMessageRequest(
                group=D.Resource(name=GROUP), message_queue=D.MessageQueue(
                    topic=D.Resource(name=RECEIVE_TOPIC), broker=route.message_queues[0].broker),
                filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"), batch_size=1,
                invisible_duration=Duration(seconds=30), long_polling_timeout=Duration(seconds=1))
            got += [r.message for r in stub.ReceiveMessage(request, metadata=metadata("prio-consumer@1"), timeout=20)
                    if r.WhichOneof("content") == "message"]
    finally:
        stop.set()
        session.cancel()
    return got


def test_priority_messages_are_received_highest_priority_first(stubs):
    """Each message in the queue of its priority (7 in the last, 3); a pop from the highest queue down."""
    priorities = [0, 2, 1, 3, 7, 0, 2]
    for i, priority in enumerate(priorities):
        got = send(stubs, message(RECEIVE_TOPIC, f"p{priority}-{i}".encode(),
                                  message_id=f"0102FC0000000171190B1C3CCC0000E{i:03d}", priority=priority))
        assert got["pocketmq"] == got["apache"] == (D.Code.OK, "OK"), got
    received = {}
    for name, stub in stubs.items():
        received[name] = [(m.body.decode(), m.system_properties.queue_id, m.system_properties.priority,
                           m.system_properties.message_type, dict(m.user_properties))
                          for m in receive_all(stub, len(priorities))]
    assert received["pocketmq"] == received["apache"], received
    assert [(body, queue) for body, queue, *_ in received["apache"]] == [
        ("p3-3", 3), ("p7-4", 3), ("p2-1", 2), ("p2-6", 2), ("p1-2", 1), ("p0-0", 0), ("p0-5", 0)]


async def remoting_sends(namesrv: str) -> dict[tuple[str, str, str | None], Any]:
    """A 4.x producer's sends with the priority property straight to the broker: the queue each landed in (when
    that is not the producer's random choice) and the property the broker kept."""
    out: dict[tuple[str, str, str | None], Any] = {}
    cases = [(REMOTING_TOPIC, "2", None), (REMOTING_TOPIC, "9", None), (REMOTING_TOPIC, "+1", None),
             (REMOTING_TOPIC, "-1", None), (REMOTING_TOPIC, "abc", None), (UNTYPED_TOPIC, "2", None),
             (UNTYPED_TOPIC, "3", "g")]
    async with Producer("PrioRemotingGroup", namesrv, protocol="rocketmq") as producer, \
            MQAdminExt(namesrv, protocol="rocketmq", timeout=30.0) as admin:
        for topic, priority, sharding_key in cases:
            msg = Message(topic, b"r")
            msg.properties["_SYS_MSG_PRIORITY_"] = priority  # (a system property: no client API sets it)
            if sharding_key is not None:
                msg.properties["__SHARDINGKEY"] = sharding_key
            result = await producer.send(msg)
            stored = await admin.view_message_by_offset_id(result.offset_msg_id)
            assert stored is not None
            chosen = priority.lstrip("+").isdigit() and sharding_key is None
            out[(topic, priority, sharding_key)] = (result.message_queue.queue_id if chosen else None,
                                                    stored.queue_id if chosen else None,
                                                    stored.properties.get("_SYS_MSG_PRIORITY_"))
    return out


def test_a_remoting_send_with_a_priority(servers):
    """5.5.0's broker puts a message whose properties make it PRIORITY in the queue of its priority, whatever the
    topic's type and the queue the producer chose, and drops the property of a message of another type."""
    got = {name: asyncio.run(remoting_sends(namesrv)) for name, (_, namesrv, _) in servers.items()}
    assert got["pocketmq"] == got["apache"], got
    assert got["apache"][(REMOTING_TOPIC, "9", None)] == (3, 3, "9")
    assert got["apache"][(UNTYPED_TOPIC, "3", "g")] == (None, None, None)
