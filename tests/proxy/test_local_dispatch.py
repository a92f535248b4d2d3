"""The gRPC endpoint's local mode (ProxyConfig.proxy_mode): its requests to a broker of its own process are handed
to that broker's processors in-process (remoting/local_channel.py), with no socket between them, while a broker it
was not given (another process's, here a second broker of the cluster) is still reached over a socket. Raw gRPC
calls with Apache's own generated classes; the brokers' connections are read from their remoting servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.proxy.config import ProxyConfig, ProxyMode
from pocketmq.proxy.proxy_startup import GrpcProxy
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.local_channel import LocalChannel

from .acl_accounts import ACL, ADMIN
from .conftest import D, S, metadata
from .test_grpc_consumption import FAST, messages, receive, receive_request, received, send

GUARD = 15.0
HOLD = 600_000  # a long polling time no test waits out: only an arrival answers such a receive within the test


async def create_topic_on(broker: Any, topic: str, queues: int = 2) -> None:
    broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await broker.register_broker_all()


async def start_local_proxy(cluster: embedded.EmbeddedCluster, local: list[Any], **overrides: Any) -> GrpcProxy:
    config = ProxyConfig(cluster.namesrv_addr, grpc_server_port=0, **{**FAST, **overrides})
    return await GrpcProxy(config, {b.address: b.remoting_server for b in local}).start()


@pytest.fixture
async def two_brokers(tmp_path: Any) -> AsyncIterator[tuple[Any, Any, Any]]:
    """broker-a in local mode, broker-b as if in another process (not given to the proxy)."""
    async with embedded.EmbeddedCluster(tmp_path, brokers=2, revive_interval=0.05) as cluster:
        proxy = await start_local_proxy(cluster, [cluster.brokers[0]], consumer_max_long_polling_timeout_millis=HOLD)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                yield cluster, proxy, service_pb2_grpc.MessagingServiceStub(channel)
        finally:
            await proxy.stop()


async def ack(stub: Any, topic: str, group: str, received_messages: list[Any]) -> None:
    entries = [S.AckMessageEntry(message_id=m.system_properties.message_id,
                                 receipt_handle=m.system_properties.receipt_handle) for m in received_messages]
    r = await stub.AckMessage(S.AckMessageRequest(group=D.Resource(name=group), topic=D.Resource(name=topic),
                                                  entries=entries), metadata=metadata())
    assert r.status.code == D.Code.OK, r.status
    assert [e.status.code for e in r.entries] == [D.Code.OK] * len(entries)


def on_broker(request: Any, broker_name: str) -> Any:
    request.message_queue.broker.name = broker_name
    return request


async def test_the_colocated_broker_is_reached_in_process_and_the_other_over_a_socket(two_brokers):
    cluster, proxy, stub = two_brokers
    broker_a, broker_b = cluster.brokers
    await create_topic_on(broker_a, "OnA")
    await create_topic_on(broker_b, "OnB")
    for topic in ("OnA", "OnB"):
        for i in range(3):
            await send(stub, topic, f"{topic}-{i}".encode(), n=i)
    for topic, broker in (("OnA", "broker-a"), ("OnB", "broker-b")):
        got = await received(stub, on_broker(receive_request(topic, invisible_ms=1000), broker), 3)
        assert sorted(m.body for m in got) == [f"{topic}-{i}".encode() for i in range(3)]
        await ack(stub, topic, "G", got)
    # Acked in-process: nothing comes back after the invisible time.
    await asyncio.sleep(1.2)
    assert messages(await receive(stub, on_broker(receive_request("OnA"), "broker-a"))) == []
    # broker-a: one in-process connection from the proxy, whose processors saw it at the broker's host and the
    # gRPC port; not a single socket.
    (local,) = broker_a.remoting_server.channels
    assert isinstance(local, LocalChannel)
    assert local.remote_address == f"{broker_a.broker_config.broker_ip1}:{proxy.port}"
    # broker-b: the proxy's socket, and nothing in-process.
    assert broker_b.remoting_server.channels
    assert not any(isinstance(ch, LocalChannel) for ch in broker_b.remoting_server.channels)


@pytest.mark.parametrize(
    ("overrides", "mode"),
    [({}, ProxyMode.LOCAL), ({"proxy_mode": "cluster"}, ProxyMode.CLUSTER)],
    ids=["local-by-default", "cluster"],
)
async def test_the_embedded_clusters_endpoint_reaches_its_broker_as_its_mode_says(tmp_path, overrides, mode):
    async with embedded.EmbeddedCluster(tmp_path, grpc=True, proxy_overrides={**FAST, **overrides}) as c:
        assert c.proxy.config.proxy_mode is mode
        await create_topic_on(c.broker, "Modes")
        async with grpc.aio.insecure_channel(c.grpc_endpoint) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            await send(stub, "Modes", b"by mode")
            got = await received(stub, receive_request("Modes"), 1)
            assert got[0].body == b"by mode"
            await ack(stub, "Modes", "G", got)
        local = [isinstance(ch, LocalChannel) for ch in c.broker.remoting_server.channels]
        # Local: the endpoint's one channel to its broker, in process; cluster: sockets only.
        assert local == [True] if mode is ProxyMode.LOCAL else (local and not any(local))


async def test_a_long_polling_receive_is_answered_by_a_later_arrival(two_brokers):
    cluster, _, stub = two_brokers
    broker_a = cluster.brokers[0]
    await create_topic_on(broker_a, "Later", queues=1)
    polling = broker_a.pop_message_processor.long_polling
    # Polls for up to 10 minutes (no deadline on the call): the broker holds the POP until a message arrives.
    call = asyncio.ensure_future(receive(stub, receive_request("Later", polling_ms=HOLD), timeout=None))
    try:
        async with asyncio.timeout(GUARD):
            while not polling.waiting():
                assert not call.done(), call.result()
                await asyncio.sleep(0.005)
        await send(stub, "Later", b"woke it")
        async with asyncio.timeout(4 * GUARD):
            responses = await call
    finally:
        call.cancel()
    assert [m.body for m in messages(responses)] == [b"woke it"]
    assert responses[0].status.code == D.Code.OK


async def test_the_proxy_reconnects_in_process_when_the_broker_closes_its_end(two_brokers):
    cluster, _, stub = two_brokers
    broker_a = cluster.brokers[0]
    await create_topic_on(broker_a, "Again")
    await send(stub, "Again", b"first")
    (first,) = broker_a.remoting_server.channels
    first.close()
    await send(stub, "Again", b"second", n=1)
    (second,) = broker_a.remoting_server.channels
    assert isinstance(second, LocalChannel) and second is not first and first.closed
    got = await received(stub, receive_request("Again"), 2)
    assert sorted(m.body for m in got) == [b"first", b"second"]


async def test_the_brokers_acl_checks_in_process_requests(tmp_path):
    (tmp_path / "plain_acl.yml").write_text(ACL)
    acl = {"acl_enable": True, "acl_file": str(tmp_path / "plain_acl.yml"), "access_key": ADMIN[0],
           "secret_key": ADMIN[1]}
    async with embedded.EmbeddedCluster(tmp_path / "c", **acl) as cluster:
        await create_topic_on(cluster.broker, "Guarded")
        # The endpoint signs its requests to the broker with a key pair the broker does not accept: the broker's
        # own check refuses them, in-process as over a socket.
        for key in (("RocketMQAdmin", "wrong-secret"), ADMIN):
            proxy = await start_local_proxy(cluster, [cluster.broker], access_key=key[0], secret_key=key[1])
            try:
                async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                    stub = service_pb2_grpc.MessagingServiceStub(channel)
                    msg = D.Message(topic=D.Resource(name="Guarded"), body=b"b", system_properties=D.SystemProperties(
                        message_id="0102FC0000000171190B1C3CCC00000001", message_type=D.MessageType.NORMAL,
                        body_encoding=D.Encoding.IDENTITY))
                    r = await stub.SendMessage(S.SendMessageRequest(messages=[msg]), metadata=metadata())
                channels = cluster.broker.remoting_server.channels
                assert channels and all(isinstance(ch, LocalChannel) for ch in channels)
            finally:
                await proxy.stop()
            if key == ADMIN:
                assert r.status.code == D.Code.OK, r.status
            else:
                assert r.status.code != D.Code.OK
                assert "signature" in r.status.message.lower() or "permission" in r.status.message.lower(), r.status
        assert await asyncio.to_thread(cluster.store.wait_dispatched)  # a send is answered before its dispatch
        assert cluster.store.get_max_offset_in_queue("Guarded", 0) + cluster.store.get_max_offset_in_queue(
            "Guarded", 1) == 1
