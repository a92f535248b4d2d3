"""test_differential_fuzz*.py's idea for the gRPC endpoint, with Apache RocketMQ 5.5.0's own proxy as the oracle:
hypothesis builds MessagingService requests, valid and not (grpc_fuzz_requests.py: QueryRoute, Heartbeat,
SendMessage, QueryAssignment, ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue,
EndTransaction, NotifyClientTermination, RecallMessage; odd names, properties, times, sizes and handles, real
handles too; metadata without a client id or with odd ones), sends each to the proxy (cluster mode, on the
session's Apache broker) and to pocketmq's endpoint, and asserts the two answer in the same class of code
(code_class).

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_proxy import ApacheProxy
from tests.apache.apache_rocketmq import ApacheRocketMQ
from tests.apache.differential import call, request

from .conftest import D, S
from .conftest import metadata as sdk_metadata
from .grpc_fuzz_requests import (
    CONSUMER,
    DELAY,
    FIFO_GROUP,
    GROUP,
    HANDLED_IDS,
    HANDLES,
    HOUR,
    NORMAL,
    PRODUCER,
    RECALL,
    TERMINATING,
    TOPIC_TYPES,
    TXN,
    TXN_ID,
    TXN_MESSAGE_ID,
    calls,
    duration_ms,
    for_side,
    now_ms,
    resource,
)

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
# Short long polls on both (each receive that finds nothing waits the minimum): the bounds are the proxies' own
# settings, the same on both.
MIN_POLL, MAX_POLL = 500, 800
APACHE_PROXY: dict[str, Any] = {"grpcClientConsumerMinLongPollingTimeoutMillis": MIN_POLL,
                "grpcClientConsumerMaxLongPollingTimeoutMillis": MAX_POLL}
POCKETMQ_PROXY = {"consumer_min_long_polling_timeout_millis": MIN_POLL,
                  "consumer_max_long_polling_timeout_millis": MAX_POLL}
# A receive's deadline: ample, or shorter than the minimum poll (refused as ILLEGAL_POLLING_TIME, at once). None:
# Apache 5.5.0 fails every receive without one, which pocketmq serves (test_a_receive_without_a_deadline).
RECEIVE_DEADLINES = st.sampled_from([30.0, 30.0, MIN_POLL / 2000])
# Whether a receive finds messages depends on what earlier examples sent and took, and when each broker gives back
# what a receive of a short invisible time took: found and not found are one class.
ANSWERED = {D.Code.OK, D.Code.MESSAGE_NOT_FOUND}


def code_class(method: str, code: int) -> str:
    if method == "ReceiveMessage" and code in ANSWERED:
        return "answered"
    return D.Code.Name(code) if code in D.Code.values() else str(code)


def view(method: str, answer: Any) -> Any:
    """What both servers must agree on: the classes of the status and of the entries' statuses (of a receive, of
    each status in its stream), or the gRPC status of a call that failed."""
    if isinstance(answer, grpc.RpcError):
        return "grpc", answer.code().name
    if method == "ReceiveMessage":
        return [code_class(method, r.status.code) for r in answer if r.WhichOneof("content") == "status"]
    # The entries' classes as a set: Apache 5.5.0's cluster mode answers a batch with one entry, pocketmq one per
    # message (docs/compatibility.md).
    entries = sorted({code_class(method, e.status.code) for e in getattr(answer, "entries", ())})
    return code_class(method, answer.status.code), entries


@dataclass
class Side:
    stub: Any
    values: dict[str, str]  # the stand-ins' values (grpc_fuzz_requests.STAND_INS)


def create_topic(topic: str, message_type: str) -> Any:
    return request(R.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
        "attributes": f"+message.type={message_type}"})


def prepare_broker(broker: str) -> None:
    for topic, message_type in TOPIC_TYPES.items():
        assert call(broker, create_topic(topic, message_type)).code == C.SUCCESS
    for body in ({"groupName": GROUP}, {"groupName": FIFO_GROUP, "consumeMessageOrderly": True}):
        answer = call(broker, request(R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(body).encode()))
        assert answer.code == C.SUCCESS, answer


def set_recall(broker: str, enabled: bool) -> None:
    body = f"recallMessageEnable={str(enabled).lower()}\n".encode()
    assert call(broker, request(R.UPDATE_BROKER_CONFIG, None, body)).code == C.SUCCESS


def open_session(stub: Any, client_id: str, settings_: Any, stop: threading.Event) -> Any:
    """A client's Telemetry stream: its Settings register it, and it stays open until ``stop``."""
    def commands() -> Iterator[Any]:
        yield S.TelemetryCommand(settings=settings_)
        stop.wait(600)

    session = stub.Telemetry(commands(), metadata=sdk_metadata(client_id), timeout=600)
    reply = next(session)
    assert reply.status.code == D.Code.OK, reply
    return session


def consumer_settings(client_type: Any) -> Any:
    return D.Settings(client_type=client_type, request_timeout=duration_ms(3000), subscription=D.Subscription(
        group=resource(GROUP), subscriptions=[D.SubscriptionEntry(
            topic=resource(NORMAL), expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))]))


def producer_settings() -> Any:
    return D.Settings(client_type=D.ClientType.PRODUCER, request_timeout=duration_ms(3000),
                      publishing=D.Publishing(topics=[resource(t) for t in TOPIC_TYPES]))


def send(stub: Any, topic: str, message_id: str, message_type: Any, deliver_ms: int | None = None) -> Any:
    sp = D.SystemProperties(message_id=message_id, message_type=message_type, body_encoding=D.Encoding.IDENTITY,
                            tag="TagH")
    if deliver_ms is not None:
        sp.delivery_timestamp.FromMilliseconds(deliver_ms)
    answer = stub.SendMessage(S.SendMessageRequest(messages=[D.Message(
        topic=resource(topic), body=b"handled", system_properties=sp)]), metadata=sdk_metadata(PRODUCER), timeout=30)
    assert answer.status.code == D.Code.OK, answer
    return answer.entries[0]


def stand_ins(stub: Any) -> dict[str, str]:
    """Each stand-in's value on this side: the handles of the NORMAL topic's messages, received for an hour; the
    transaction id of a half message; the recall handle of a message due in an hour."""
    for message_id in HANDLED_IDS:
        send(stub, NORMAL, message_id, D.MessageType.NORMAL)
    values = {TXN_ID: send(stub, TXN, TXN_MESSAGE_ID, D.MessageType.TRANSACTION).transaction_id,
              RECALL: send(stub, DELAY, HANDLED_IDS[0], D.MessageType.DELAY, now_ms() + HOUR).recall_handle}
    found: dict[str, str] = {}
    deadline = time.monotonic() + 60
    while len(found) < len(HANDLED_IDS):
        assert time.monotonic() < deadline, found
        receive = S.ReceiveMessageRequest(
            group=resource(GROUP), message_queue=D.MessageQueue(topic=resource(NORMAL)), batch_size=32,
            filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"),
            invisible_duration=duration_ms(HOUR), long_polling_timeout=duration_ms(MIN_POLL))
        for r in stub.ReceiveMessage(receive, metadata=sdk_metadata(CONSUMER), timeout=30):
            if r.WhichOneof("content") == "message":
                found[r.message.system_properties.message_id] = r.message.system_properties.receipt_handle
    values.update(zip(HANDLES, (found[m] for m in HANDLED_IDS), strict=True))
    return values


@pytest.fixture(scope="module")
def sides(apache_rocketmq5: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    # recallMessageEnable: RocketMQ's default is off, pocketmq's on (docs/compatibility.md); the session's broker
    # gets its default back at the end.
    set_recall(apache_rocketmq5.broker_addr, True)
    stop = threading.Event()
    channels: list[grpc.Channel] = []
    sessions: list[Any] = []
    proxy = ApacheProxy(apache_rocketmq5, **APACHE_PROXY)
    try:
        with ThreadedCluster(tmp_path_factory.mktemp("grpc-fuzz"), grpc=True,
                             proxy_overrides=POCKETMQ_PROXY) as pocket, ThreadPoolExecutor(1) as pool:
            prepare_broker(apache_rocketmq5.broker_addr)
            started = pool.submit(proxy.start)  # (the JVM starts while pocketmq's broker is prepared)
            prepare_broker(pocket.broker_addr)
            started.result()
            out = {}
            for name, endpoint in (("apache", proxy.endpoint), ("pocketmq", pocket.grpc_endpoint)):
                channels.append(grpc.insecure_channel(endpoint))
                stub = service_pb2_grpc.MessagingServiceStub(channels[-1])
                for client_id, client_settings in (
                        (CONSUMER, consumer_settings(D.ClientType.SIMPLE_CONSUMER)), (PRODUCER, producer_settings()),
                        (TERMINATING[0], consumer_settings(D.ClientType.PUSH_CONSUMER)),
                        (TERMINATING[1], producer_settings())):
                    sessions.append(open_session(stub, client_id, client_settings, stop))
                out[name] = Side(stub, stand_ins(stub))
            yield out
    finally:
        stop.set()
        for session in sessions:
            session.cancel()
        for channel in channels:
            channel.close()
        if proxy.process is not None:
            proxy.stop(signal.SIGKILL)
        set_recall(apache_rocketmq5.broker_addr, False)


def ask(side: Side, method: str, req: Any, md: tuple[tuple[str, str], ...], timeout: float | None) -> Any:
    try:
        answer = getattr(side.stub, method)(for_side(req, side.values), metadata=md, timeout=timeout)
        return list(answer) if method == "ReceiveMessage" else answer
    except grpc.RpcError as e:
        return e


POOL = ThreadPoolExecutor(2)  # (both asked at once: a receive's long poll costs its time once)


def with_language(client_id: str, language: str | None) -> tuple[tuple[str, str], ...]:
    return tuple(kv for kv in sdk_metadata(client_id) if kv[0] != "x-mq-language") + (
        (("x-mq-language", language),) if language is not None else ())


def invalid_durations(method: str, duration: Any) -> tuple[str, Any, tuple[tuple[str, str], ...]]:
    if method == "ChangeInvisibleDuration":
        return method, S.ChangeInvisibleDurationRequest(
            group=resource(GROUP), topic=resource(NORMAL), receipt_handle=HANDLES[0], message_id=HANDLED_IDS[0],
            invisible_duration=duration), sdk_metadata(CONSUMER)
    return method, S.ReceiveMessageRequest(
        group=resource(GROUP), message_queue=D.MessageQueue(topic=resource(NORMAL)), batch_size=1, auto_renew=True,
        filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"),
        invisible_duration=duration), sdk_metadata(CONSUMER)


def delivered_at(nanos: int) -> Any:
    m = D.Message(topic=resource(DELAY), body=b"x", system_properties=D.SystemProperties(
        message_id="0102FC0000000171190B1C3CCC0000EEEE", message_type=D.MessageType.DELAY))
    m.system_properties.delivery_timestamp.FromMilliseconds(now_ms() + 60_000)
    m.system_properties.delivery_timestamp.nanos = nanos
    return S.SendMessageRequest(messages=[m])


# The differences the fuzz found, each answered as Apache's since: x-mq-language read as RocketMQ's LanguageCode
# where a client is registered or unregistered; TOOLS_CONSUMER and the other predefined groups no system group;
# Durations and Timestamps outside protobuf's range refused (an invisible time also when auto-renewed); a recall
# of a topic the name server does not know a type conflict; a handle's broker found by its name, whatever the topic;
# the broker's refusal of an ack or a change of invisible time an internal error ("status is abnormal").
@example(("Heartbeat", S.HeartbeatRequest(group=resource(GROUP), client_type=D.ClientType.SIMPLE_CONSUMER),
          with_language(CONSUMER, "GOLANG")), 30.0)
@example(("AckMessage", S.AckMessageRequest(group=resource(GROUP), topic=resource("NoSuchTopicToAck"), entries=[
    S.AckMessageEntry(message_id=HANDLED_IDS[2], receipt_handle=HANDLES[2])]), sdk_metadata(CONSUMER)), 30.0)
@example(("ChangeInvisibleDuration", S.ChangeInvisibleDurationRequest(
    group=resource(GROUP), topic=resource("NoSuchTopicToChange"), receipt_handle=HANDLES[0],
    message_id=HANDLED_IDS[0], invisible_duration=Duration()), sdk_metadata(CONSUMER)), 30.0)
@example(("NotifyClientTermination", S.NotifyClientTerminationRequest(group=resource(GROUP)),
          with_language(TERMINATING[0], None)), 30.0)
@example(("QueryAssignment", S.QueryAssignmentRequest(topic=resource(NORMAL), group=resource("TOOLS_CONSUMER")),
          sdk_metadata(CONSUMER)), 30.0)
@example(invalid_durations("ChangeInvisibleDuration", Duration(seconds=1, nanos=-1)), 30.0)
@example(invalid_durations("ReceiveMessage", Duration(seconds=2**40)), 30.0)
@example(("SendMessage", delivered_at(-1), sdk_metadata(PRODUCER)), 30.0)
@example(("RecallMessage", S.RecallMessageRequest(topic=resource("NoSuchTopicToRecall"), recall_handle=RECALL),
          sdk_metadata(PRODUCER)), 30.0)
@example(("AckMessage", S.AckMessageRequest(group=resource(GROUP), topic=resource(NORMAL), entries=[
    S.AckMessageEntry(message_id="m", receipt_handle=f"0 {now_ms()} {HOUR} 0 0 no-such-broker 0 0 0")]),
    sdk_metadata(CONSUMER)), 30.0)
@example(("ForwardMessageToDeadLetterQueue", S.ForwardMessageToDeadLetterQueueRequest(
    group=resource(GROUP), topic=resource("NoSuchTopicToForward"), receipt_handle=HANDLES[3],
    message_id=HANDLED_IDS[3], delivery_attempt=16, max_delivery_attempts=16), sdk_metadata(CONSUMER)), 30.0)
@settings(max_examples=EXAMPLES or 50, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(calls(), RECEIVE_DEADLINES)
def test_same_class_of_answer_as_apache_5s_proxy(sides: dict[str, Side],
                                                 case: tuple[str, Any, tuple[tuple[str, str], ...]],
                                                 receive_deadline: float | None) -> None:
    method, req, md = case
    timeout = receive_deadline if method == "ReceiveMessage" else 30.0
    futures = {name: POOL.submit(ask, side, method, req, md, timeout) for name, side in sides.items()}
    answers = {name: f.result() for name, f in futures.items()}
    views = {name: view(method, a) for name, a in answers.items()}
    assert views["pocketmq"] == views["apache"], (method, brief(req), md, timeout, brief(answers))


def deliberate_receive(sides: dict[str, Side], batch_size: int, deadline: float | None) -> dict[str, Any]:
    req = S.ReceiveMessageRequest(
        group=resource(GROUP), message_queue=D.MessageQueue(topic=resource(NORMAL)), batch_size=batch_size,
        filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"),
        invisible_duration=duration_ms(HOUR), long_polling_timeout=duration_ms(MIN_POLL))
    return {name: ask(side, "ReceiveMessage", req, sdk_metadata(CONSUMER), deadline) for name, side in sides.items()}


def test_a_receive_without_a_deadline(sides: dict[str, Side]) -> None:
    """Apache 5.5.0 compares the polling time with the call's remaining time, which is null without a deadline: a
    NullPointerException, an internal error, for any receive. pocketmq serves it, polling for the request's time
    (docs/compatibility.md)."""
    answers = deliberate_receive(sides, 32, None)
    [refused] = [r.status for r in answers["apache"] if r.WhichOneof("content") == "status"]
    assert refused.code == D.Code.INTERNAL_SERVER_ERROR and '"timeRemaining" is null' in refused.message, refused
    assert view("ReceiveMessage", answers["pocketmq"]) == ["answered"], answers["pocketmq"]


def test_a_receive_of_batch_size_0(sides: dict[str, Side]) -> None:
    """Apache 5.5.0's broker parks a pop of maxMsgNums 0 for its polling time and finds nothing; pocketmq's refuses
    it, INVALID_PARAMETER, which the endpoint answers as an internal error (docs/compatibility.md)."""
    answers = deliberate_receive(sides, 0, 30.0)
    assert view("ReceiveMessage", answers["apache"]) == ["answered"], answers["apache"]
    assert view("ReceiveMessage", answers["pocketmq"]) == ["INTERNAL_SERVER_ERROR"], answers["pocketmq"]


def test_a_forward_from_a_client_without_telemetry(sides: dict[str, Side]) -> None:
    """Apache 5.5.0 looks the handle up by the client's channel, which a client without a Telemetry stream has not:
    a NullPointerException, an internal error, whatever the handle. pocketmq answers as for any client (here: the
    handle names a broker there is none of) (docs/compatibility.md)."""
    req = S.ForwardMessageToDeadLetterQueueRequest(
        group=resource(GROUP), topic=resource(NORMAL), message_id="m", delivery_attempt=16, max_delivery_attempts=16,
        receipt_handle=f"0 {now_ms()} {HOUR} 0 0 no-such-broker 0 0 0")
    answers = {name: ask(side, "ForwardMessageToDeadLetterQueue", req, sdk_metadata(f"gf-stranger-{GROUP}@1"), 30.0)
               for name, side in sides.items()}
    assert answers["apache"].status.code == D.Code.INTERNAL_SERVER_ERROR, answers["apache"]
    assert "NullPointerException" in answers["apache"].status.message, answers["apache"]
    assert answers["pocketmq"].status.code == D.Code.INVALID_RECEIPT_HANDLE, answers["pocketmq"]


def brief(value: Any) -> str:
    return str(value)[:4000]  # (a 4 MiB body is no help in a failure's text)
