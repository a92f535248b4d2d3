"""ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue and auto renew, asked with
Apache's own generated classes: the stream's shape, every system property the SDKs read, the limits, and what
happens to a push consumer's messages while it holds them and when it goes away."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.remoting.client_body import SubscriptionGroupConfig

from .conftest import D, S, create_topic, metadata, start_proxy

# A proxy that polls a tenth of a second at least, takes invisible times from 1 s and renews a push consumer's
# message 1.7 s before its first 2 s run out, for 30 s at a time. (The first renewal must come within those 1.7 s:
# 700 ms of a first second did not always leave a loaded machine, and the message came back to another client.)
FAST = {"consumer_min_long_polling_timeout_millis": 100, "min_invisible_time_millis_for_recv": 1000,
        "default_invisible_time_millis": 2000, "renew_ahead_time_millis": 1700, "renew_schedule_period_millis": 50,
        "renew_next_millis": (30_000,)}


@contextlib.asynccontextmanager
async def cluster_and_proxy(root: Any, **proxy: Any) -> AsyncIterator[tuple[Any, Any, Any]]:
    async with embedded.EmbeddedCluster(root, revive_interval=0.05) as cluster:
        endpoint = await start_proxy(cluster, **FAST, **proxy)
        try:
            async with grpc.aio.insecure_channel(endpoint.endpoint) as channel:
                yield cluster, endpoint, service_pb2_grpc.MessagingServiceStub(channel)
        finally:
            await endpoint.stop()


@pytest.fixture
async def env(tmp_path: Any) -> AsyncIterator[tuple[Any, Any, Any]]:
    async with cluster_and_proxy(tmp_path) as parts:
        yield parts


@pytest.fixture
async def expiring_env(tmp_path: Any) -> AsyncIterator[tuple[Any, Any, Any]]:
    """A proxy that lets a client go after 1.5 s without a Heartbeat, looked for every 50 ms."""
    async with cluster_and_proxy(tmp_path, channel_expired_timeout_millis=1500, channel_scan_interval=0.05) as parts:
        yield parts


async def send(stub: Any, topic: str, body: bytes, n: int = 0, **system: Any) -> str:
    message_id = f"0102FC0000000171190B1C3CCC{n:08X}"
    msg = D.Message(topic=D.Resource(name=topic), body=body, system_properties=D.SystemProperties(
        message_id=message_id, message_type=D.MessageType.NORMAL, body_encoding=D.Encoding.IDENTITY, **system))
    msg.user_properties["color"] = "red"
    r = await stub.SendMessage(S.SendMessageRequest(messages=[msg]), metadata=metadata())
    assert r.status.code == D.Code.OK, r.status
    return message_id


def receive_request(topic: str, group: str = "G", batch: int = 32, invisible_ms: int = 10_000,
                    polling_ms: int = 200, auto_renew: bool = False, expression: str = "*") -> Any:
    request = S.ReceiveMessageRequest(
        group=D.Resource(name=group), message_queue=D.MessageQueue(topic=D.Resource(name=topic), id=0,
                                                                   broker=D.Broker(name="broker-a")),
        filter_expression=D.FilterExpression(type=D.FilterType.TAG, expression=expression), batch_size=batch,
        auto_renew=auto_renew)
    if not auto_renew:
        request.invisible_duration.FromMilliseconds(invisible_ms)
    request.long_polling_timeout.FromMilliseconds(polling_ms)
    return request


async def receive(stub: Any, request: Any, md: Any = None, timeout: float = 10) -> list[Any]:
    return [r async for r in stub.ReceiveMessage(request, metadata=md or metadata(), timeout=timeout)]


def messages(responses: list[Any]) -> list[Any]:
    return [r.message for r in responses if r.WhichOneof("content") == "message"]


async def received(stub: Any, request: Any, count: int, md: Any = None, timeout: float = 10) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} within {timeout}s"
        got.extend(messages(await receive(stub, request, md)))
    return got


async def test_the_stream_is_status_messages_then_delivery_time_with_what_the_sdks_read(env):
    cluster, _, stub = env
    await create_topic(cluster, "Shape")
    message_id = await send(stub, "Shape", b"shape", tag="TagS", keys=["k1", "k2"])
    responses: list[Any] = []
    for _ in range(50):
        responses = await receive(stub, receive_request("Shape"))
        if messages(responses):
            break
    kinds = [r.WhichOneof("content") for r in responses]
    assert kinds == ["status", "message", "delivery_timestamp"]
    assert (responses[0].status.code, responses[0].status.message) == (D.Code.OK, "OK")
    msg = responses[1].message
    sp = msg.system_properties
    assert (msg.topic.name, msg.body, dict(msg.user_properties)) == ("Shape", b"shape", {"color": "red"})
    assert (sp.message_id, sp.tag, list(sp.keys)) == (message_id, "TagS", ["k1", "k2"])
    assert (sp.body_digest.type, sp.body_digest.checksum) == (D.DigestType.MD5,
                                                                hashlib.md5(b"shape").hexdigest().upper())
    assert (sp.body_encoding, sp.message_type, sp.delivery_attempt) == (D.Encoding.IDENTITY, D.MessageType.NORMAL, 1)
    assert sp.receipt_handle and sp.queue_offset == 0 and 0 <= sp.queue_id < 4
    assert sp.born_timestamp.ToMilliseconds() > 0 and sp.store_timestamp.ToMilliseconds() > 0
    assert sp.store_host and sp.born_host
    # Nothing more: MESSAGE_NOT_FOUND, then the time.
    empty = await receive(stub, receive_request("Shape"))
    assert [r.WhichOneof("content") for r in empty] == ["status", "delivery_timestamp"]
    assert (empty[0].status.code, empty[0].status.message) == (D.Code.MESSAGE_NOT_FOUND, "no new message")


async def test_a_receive_takes_at_most_32_and_every_delivery_has_a_new_handle(env):
    cluster, _, stub = env
    await create_topic(cluster, "Many", queues=1)
    for i in range(40):
        await send(stub, "Many", f"m{i}".encode(), n=i)
    store = cluster.broker.store
    for _ in range(1500):  # (a receive before dispatch caught up would take fewer than 32)
        if store.get_max_offset_in_queue("Many", 0) == 40:
            break
        await asyncio.sleep(0.02)
    first = await received(stub, receive_request("Many", batch=100, invisible_ms=1000), 1)
    assert len(first) == 32
    rest = await received(stub, receive_request("Many", batch=100, invisible_ms=10_000), 8)
    again = await received(stub, receive_request("Many", batch=100, invisible_ms=10_000), 32)
    assert len(rest) == 8 and {m.system_properties.delivery_attempt for m in again} == {2}
    handles = {m.system_properties.message_id: m.system_properties.receipt_handle for m in first}
    assert all(handles[m.system_properties.message_id] != m.system_properties.receipt_handle for m in again)


async def test_ack_entries_one_status_each(env):
    cluster, _, stub = env
    await create_topic(cluster, "Acks")
    ids = [await send(stub, "Acks", b"a", n=i) for i in range(2)]
    got = await received(stub, receive_request("Acks"), 2)
    entries = [S.AckMessageEntry(message_id=m.system_properties.message_id,
                                 receipt_handle=m.system_properties.receipt_handle) for m in got]
    entries.append(S.AckMessageEntry(message_id="bad", receipt_handle="not a handle"))
    entries.append(S.AckMessageEntry(message_id="old", receipt_handle="0 1 2 3 0 broker-a 0 0 5"))
    r = await stub.AckMessage(S.AckMessageRequest(group=D.Resource(name="G"), topic=D.Resource(name="Acks"),
                                                  entries=entries), metadata=metadata())
    assert (r.status.code, r.status.message) == (D.Code.MULTIPLE_RESULTS, "MULTIPLE_RESULTS")
    assert [(e.message_id, e.status.code) for e in r.entries] == [
        (m.system_properties.message_id, D.Code.OK) for m in got] + [("bad", D.Code.INTERNAL_SERVER_ERROR),
                                                                     ("old", D.Code.INVALID_RECEIPT_HANDLE)]
    # (as RocketMQ's proxy: what does not parse is its Java exception, a handle past its time is "expired")
    assert (r.entries[2].status.message, r.entries[3].status.message) == (
        "Parse failed, dataList size 3. IllegalArgumentException",
        "org.apache.rocketmq.proxy.common.ProxyException: receipt handle is expired")
    assert sorted(e.message_id for e in r.entries[:2]) == sorted(ids)
    r = await stub.AckMessage(S.AckMessageRequest(group=D.Resource(name="G"), topic=D.Resource(name="Acks"),
                                                  entries=entries[:1]), metadata=metadata())
    assert (r.status.code, r.status.message) == (D.Code.OK, "OK")


async def test_forward_to_the_dead_letter_queue(env):
    cluster, _, stub = env
    await create_topic(cluster, "Fwd")
    message_id = await send(stub, "Fwd", b"give up")
    [msg] = await received(stub, receive_request("Fwd", group="FwdGroup"), 1)
    r = await stub.ForwardMessageToDeadLetterQueue(S.ForwardMessageToDeadLetterQueueRequest(
        group=D.Resource(name="FwdGroup"), topic=D.Resource(name="Fwd"), message_id=message_id,
        receipt_handle=msg.system_properties.receipt_handle, delivery_attempt=1, max_delivery_attempts=1),
        metadata=metadata())
    assert r.status.code == D.Code.OK
    store = cluster.broker.store
    for _ in range(1500):
        if store.get_max_offset_in_queue("%DLQ%FwdGroup", 0) > 0:
            break
        await asyncio.sleep(0.02)
    assert store.get_max_offset_in_queue("%DLQ%FwdGroup", 0) == 1
    # Acked in the topic: it does not come back.
    assert messages(await receive(stub, receive_request("Fwd", group="FwdGroup"))) == []


async def push_consumer_session(stub: Any, client_id: str, group: str, topic: str) -> Any:
    """A Telemetry stream with a push consumer's Settings, as the SDKs keep open."""
    call = stub.Telemetry(metadata=metadata(client_id))
    await call.write(S.TelemetryCommand(settings=D.Settings(
        client_type=D.ClientType.PUSH_CONSUMER, subscription=D.Subscription(
            group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name=topic), expression=D.FilterExpression(type=D.FilterType.TAG,
                                                                            expression="*"))]))))
    assert (await call.read()).status.code == D.Code.OK
    return call


async def test_auto_renew_keeps_a_held_message_invisible_and_the_original_handle_acks_it(env):
    cluster, proxy, stub = env
    await create_topic(cluster, "Renew")
    await send(stub, "Renew", b"held")
    session = await push_consumer_session(stub, "pusher@1", "RenewGroup", "Renew")
    try:
        [msg] = await received(stub, receive_request("Renew", group="RenewGroup", auto_renew=True), 1,
                               md=metadata("pusher@1"))
        # The proxy's invisible time is 2 s; renewed 1.7 s before it ends, the message stays away.
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            assert messages(await receive(stub, receive_request("Renew", group="RenewGroup"))) == []
        handle = msg.system_properties.receipt_handle
        r = await stub.AckMessage(S.AckMessageRequest(
            group=D.Resource(name="RenewGroup"), topic=D.Resource(name="Renew"),
            entries=[S.AckMessageEntry(message_id=msg.system_properties.message_id, receipt_handle=handle)]),
            metadata=metadata("pusher@1"))
        assert r.status.code == D.Code.OK
        assert await proxy.call(_count(proxy)) == 0  # renewed no more
    finally:
        session.cancel()


async def _count(proxy: Any) -> int:
    return len(proxy.handles)


async def test_a_push_consumer_that_terminates_gives_its_held_messages_back(env):
    cluster, proxy, stub = env
    await create_topic(cluster, "Leave")
    message_id = await send(stub, "Leave", b"left behind")
    session = await push_consumer_session(stub, "leaver@1", "LeaveGroup", "Leave")
    try:
        [msg] = await received(stub, receive_request("Leave", group="LeaveGroup", auto_renew=True), 1,
                               md=metadata("leaver@1"))
        await asyncio.sleep(0.5)  # renewed by now: invisible for 30 s
        r = await stub.NotifyClientTermination(S.NotifyClientTerminationRequest(group=D.Resource(name="LeaveGroup")),
                                               metadata=metadata("leaver@1"))
        assert r.status.code == D.Code.OK
    finally:
        session.cancel()
    # Visible again within a second or so, not after the 30 s it was renewed for.
    [again] = await received(stub, receive_request("Leave", group="LeaveGroup"), 1, timeout=8)
    assert again.system_properties.message_id == msg.system_properties.message_id == message_id
    assert again.system_properties.delivery_attempt == 2


async def ack(stub: Any, group: str, topic: str, msg: Any, client_id: str) -> Any:
    """AckMessage of one received message, by ``client_id``."""
    return await stub.AckMessage(S.AckMessageRequest(
        group=D.Resource(name=group), topic=D.Resource(name=topic),
        entries=[S.AckMessageEntry(message_id=msg.system_properties.message_id,
                                   receipt_handle=msg.system_properties.receipt_handle)]),
        metadata=metadata(client_id))


async def test_a_push_consumer_whose_telemetry_stream_ends_keeps_its_messages_while_it_heartbeats(expiring_env):
    # The SDKs reopen a stream that ended; until the client terminates or goes silent, what it holds stays its own.
    cluster, proxy, stub = expiring_env
    await create_topic(cluster, "Blip")
    await send(stub, "Blip", b"held through a blip")
    session = await push_consumer_session(stub, "blip@1", "BlipGroup", "Blip")
    # The client heartbeats all along, as an SDK does: the 1.5 s expiry counts from its Settings, and a loaded
    # machine took longer than that to receive the message, so that a first Heartbeat sent after it was too late.
    heartbeat = S.HeartbeatRequest(group=D.Resource(name="BlipGroup"), client_type=D.ClientType.PUSH_CONSUMER)
    codes: list[int] = []

    async def heartbeats() -> None:
        while True:
            codes.append((await stub.Heartbeat(heartbeat, metadata=metadata("blip@1"))).status.code)
            await asyncio.sleep(0.1)

    beating = asyncio.ensure_future(heartbeats())
    try:
        [msg] = await received(stub, receive_request("Blip", group="BlipGroup", auto_renew=True), 1,
                               md=metadata("blip@1"))
        session.cancel()
        deadline = time.monotonic() + 3  # twice the expiry time, and half again the message's invisible time
        while time.monotonic() < deadline:
            assert messages(await receive(stub, receive_request("Blip", group="BlipGroup"),
                                          md=metadata("other@1"))) == []
            assert set(codes) <= {D.Code.OK}
    finally:
        beating.cancel()
    assert codes and set(codes) == {D.Code.OK}
    r = await ack(stub, "BlipGroup", "Blip", msg, "blip@1")
    assert r.status.code == D.Code.OK
    assert await proxy.call(_count(proxy)) == 0


async def test_a_push_consumer_silent_past_the_expiry_time_gives_its_held_messages_back(expiring_env):
    cluster, proxy, stub = expiring_env
    await create_topic(cluster, "Silent")
    message_id = await send(stub, "Silent", b"left behind")
    session = await push_consumer_session(stub, "silent@1", "SilentGroup", "Silent")
    await received(stub, receive_request("Silent", group="SilentGroup", auto_renew=True), 1, md=metadata("silent@1"))
    session.cancel()
    [again] = await received(stub, receive_request("Silent", group="SilentGroup"), 1, timeout=8)
    assert (again.system_properties.message_id, again.system_properties.delivery_attempt) == (message_id, 2)
    assert await proxy.call(_registered(proxy, "silent@1")) is False


async def _registered(proxy: Any, client_id: str) -> bool:
    return proxy.channels.get_channel(client_id) is not None


async def test_an_auto_renew_receive_of_a_client_without_telemetry_gets_its_messages_unrenewed(env, caplog):
    # The Go SDK reopens a telemetry stream broken by a server restart only at its next settings sync (5 minutes)
    # and receives meanwhile: its messages were taken, refused and given back, each time a delivery attempt, until
    # the dead-letter queue took them unseen. Now they are served, without renewal.
    cluster, _, stub = env
    await create_topic(cluster, "NoSession")
    await send(stub, "NoSession", b"x")
    with caplog.at_level(logging.WARNING, logger="pocketmq.proxy"):
        [msg] = await received(stub, receive_request("NoSession", group="NsGroup", auto_renew=True), 1,
                               md=metadata("ghost@1"), timeout=8)
    assert (msg.body, msg.system_properties.delivery_attempt) == (b"x", 1)
    assert "client ghost@1 receives with auto-renewal but is not registered" in caplog.text
    r = await ack(stub, "NsGroup", "NoSession", msg, "ghost@1")
    assert r.status.code == D.Code.OK


@pytest.mark.parametrize("case", ["too small", "too large", "polling past the deadline"])
async def test_receive_limits(env, case):
    cluster, _, stub = env
    await create_topic(cluster, "Limits")
    if case == "too small":
        request = receive_request("Limits", invisible_ms=999)
        expected = (D.Code.ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small. min is 1000")
    elif case == "too large":
        request = receive_request("Limits", invisible_ms=12 * 3600 * 1000 + 1)
        expected = (D.Code.ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large. max is 43200000")
    else:
        # With RocketMQ's minimum polling time (5 s), a call with 3 s to live cannot poll.
        request = receive_request("Limits", polling_ms=10_000)
        expected = (D.Code.ILLEGAL_POLLING_TIME,
                    "The deadline time remaining is not enough for polling, please check network condition")
        proxy = await start_proxy(cluster)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                stub5 = service_pb2_grpc.MessagingServiceStub(channel)
                responses = await receive(stub5, request, timeout=3)
        finally:
            await proxy.stop()
        assert (responses[0].status.code, responses[0].status.message) == expected
        return
    responses = await receive(stub, request)
    assert [r.WhichOneof("content") for r in responses] == ["status", "delivery_timestamp"]
    assert (responses[0].status.code, responses[0].status.message) == expected


async def test_a_sql92_filter_that_does_not_compile_is_refused_by_the_proxy(env):
    cluster, _, stub = env
    await create_topic(cluster, "Sql")
    request = receive_request("Sql")
    request.filter_expression.CopyFrom(D.FilterExpression(type=D.FilterType.SQL, expression="a >"))
    responses = await receive(stub, request)
    assert responses[0].status.code == D.Code.ILLEGAL_FILTER_EXPRESSION
    assert responses[-1].WhichOneof("content") == "delivery_timestamp"


async def test_a_fifo_group_is_assigned_every_queue(env):
    cluster, _, stub = env
    await create_topic(cluster, "FifoAssign", queues=3)
    cluster.broker.subscription_group_manager.update_subscription_group_config(
        SubscriptionGroupConfig("FifoAssignGroup", consume_message_orderly=True))
    answers = {}
    for group in ("FifoAssignGroup", "PlainAssignGroup"):
        r = await stub.QueryAssignment(S.QueryAssignmentRequest(topic=D.Resource(name="FifoAssign"),
                                                                group=D.Resource(name=group)), metadata=metadata())
        answers[group] = [a.message_queue.id for a in r.assignments]
    assert answers == {"FifoAssignGroup": [0, 1, 2], "PlainAssignGroup": [-1]}


async def test_an_expired_handle_is_invalid_for_a_client_without_telemetry_too(env):
    cluster, _, stub = env
    await create_topic(cluster, "Expired")
    r = await stub.ChangeInvisibleDuration(S.ChangeInvisibleDurationRequest(
        group=D.Resource(name="G"), topic=D.Resource(name="Expired"), receipt_handle="0 1 2 3 0 broker-a 0 0 5",
        message_id="m", invisible_duration=Duration(seconds=10)), metadata=metadata("no-telemetry@1"))
    assert (r.status.code, r.status.message) == (
        D.Code.INVALID_RECEIPT_HANDLE, "org.apache.rocketmq.proxy.common.ProxyException: receipt handle is expired")


async def test_a_receive_cancelled_mid_poll_gives_back_what_its_pop_takes_afterwards(env):
    # A consumer shutting down cancels its long poll; the broker's pop goes on and takes the next message sent.
    # Apache's proxy makes it visible again at once (its write to the gone stream fails); here it stayed hidden for
    # the cancelled call's whole invisible time.
    cluster, proxy, stub = env
    await create_topic(cluster, "Cancelled", 1)
    call = stub.ReceiveMessage(receive_request("Cancelled", "CG", invisible_ms=60_000, polling_ms=20_000),
                               metadata=metadata(), timeout=30)
    parked = cluster.broker.pop_message_processor.long_polling
    deadline = time.monotonic() + 10
    while parked.parked < 1:
        assert time.monotonic() < deadline, "the pop never parked"
        await asyncio.sleep(0.01)
    call.cancel()
    await asyncio.sleep(0.5)  # the cancellation reaches the endpoint
    sent = await send(stub, "Cancelled", b"late", 7)
    [again] = await received(stub, receive_request("Cancelled", "CG", invisible_ms=60_000, polling_ms=2_000), 1)
    assert again.system_properties.message_id == sent
    assert again.system_properties.delivery_attempt == 2  # the cancelled call's pop took it first
