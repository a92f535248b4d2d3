"""The topics and groups the package's fixtures (conftest.py) set up alike on Apache RocketMQ 5's proxy and on
pocketmq's gRPC endpoint, and the requests and Telemetry sessions its cases send to both."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from google.protobuf.duration_pb2 import Duration

from pocketmq.client import Message, Producer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.remoting.codes import RequestCode

from ..conftest import D, S, metadata

TOPIC = "ParityTopic"
TXN_TOPIC = "ParityTxnTopic"  # message.type=TRANSACTION at Apache's (pocketmq's untyped topics take every type)
RECV_TOPIC = "ParityRecvTopic"  # consumed by the receive cases only
DELAY_TOPIC = "ParityDelayTopic"  # message.type=DELAY on both
CONV_TOPIC = "ParityConvTopic"  # a 4.x producer's messages, received over gRPC
RENEW_TOPIC = "ParityRenewTopic"  # auto-renewed receives of push consumers, one queue
GHOST_TOPIC = "ParityGhostTopic"  # an auto-renewed receive of a client without Telemetry, one queue
PROGRESS_TOPIC = "ParityProgressTopic"  # one message received and acked, then read by mqadmin, one queue
NODE_TOPICS = ("ParityNodeA", "ParityNodeB", "ParityNodeC")  # a Node SDK producer's sends to three topics
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


async def stored_retry_policies(namesrv: str) -> dict[str, Any]:
    """Each RETRY_GROUPS group's groupRetryPolicy as the broker lists it (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, JSON)."""
    async with MQAdminExt(namesrv, protocol="rocketmq", timeout=30.0) as admin:
        addr = next(iter((await admin.master_addrs()).values()))
        listed = admin._ok(await admin._broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), addr)
    table = listed.decode_body()["subscriptionGroupTable"]
    return {group: dict(table[group]["groupRetryPolicy"]) for group in RETRY_GROUPS}


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


def without_frame(status: Any) -> tuple[int, str]:
    """(code, message) without the Java stack frame RocketMQ's proxy appends to an internal error's text."""
    return status.code, ". ".join(status.message.split(". ")[:2])


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


async def produce_4x(namesrv: str, run: str) -> None:
    async with Producer("ParityConvProducer", namesrv, protocol="rocketmq") as producer:
        await producer.send(Message(CONV_TOPIC, b"keys", tags="K" + run, keys="k1 k2 "))
        delayed = Message(CONV_TOPIC, b"delayed", tags="S" + run)
        delayed.delay_time_sec = 1
        await producer.send(delayed)


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


def renewal_runs_out(name: str, stub: Any) -> tuple[list[Any], Any, list[Any]]:
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
