"""RemotingServer / RemotingClient / Channel over real sockets on 127.0.0.1 (both event loops)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgpack
import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import (
    FrameTooLarge,
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel, parse_address

ECHO, BOOM, PARK, RECORD, GATE, BIG, WRONG = 1001, 1002, 1003, 1004, 1005, 1006, 1007
GUARD = 5.0  # upper bound for things that should happen promptly; a hang fails instead of blocking CI


class App:
    """Processors with observable side effects."""

    def __init__(self) -> None:
        self.parked: list[tuple[Channel, RemotingCommand]] = []
        self.recorded: list[tuple[Channel, RemotingCommand]] = []
        self.gate_count = 0
        self.gate_target = 0
        self.gate_open = asyncio.Event()

    def install(self, endpoint: RemotingServer) -> None:
        endpoint.register_processor(ECHO, self.echo)
        endpoint.register_processor(BOOM, self.boom)
        endpoint.register_processor(PARK, self.park)
        endpoint.register_processor(RECORD, self.record)
        endpoint.register_processor(GATE, self.gate)
        endpoint.register_processor(BIG, self.big)
        endpoint.register_processor(WRONG, self.wrong)

    async def echo(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(ResponseCode.SUCCESS, req.remark, req.ext_fields, req.body)

    async def boom(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("disk on fire")

    async def park(self, ch: Channel, req: RemotingCommand) -> None:
        self.parked.append((ch, req))
        return None

    async def record(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        self.recorded.append((ch, req))
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="recorded")

    async def gate(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        # Every request waits until all of them are running: passes only if they run concurrently.
        self.gate_count += 1
        if self.gate_count >= self.gate_target:
            self.gate_open.set()
        await self.gate_open.wait()
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, ext_fields=req.ext_fields)

    async def big(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, body=b"x" * 10_000)

    async def wrong(self, ch: Channel, req: RemotingCommand) -> object:
        return {"not": "a command"}


@pytest.fixture
def app() -> App:
    return App()


@pytest.fixture
def server_options() -> dict[str, Any]:
    return {"max_frame_size": 8192}  # small, so the size limits are cheap to hit


async def raw_connect(addr: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(*parse_address(addr))


async def read_command(reader: asyncio.StreamReader) -> RemotingCommand:
    prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
    (n,) = struct.unpack(">I", prefix)
    (cmd,) = decode_frames(prefix + await asyncio.wait_for(reader.readexactly(n), GUARD))
    return cmd


async def read_eof(reader: asyncio.StreamReader) -> bytes:
    """Everything the peer sends until it closes (fails if it does not close)."""
    return await asyncio.wait_for(reader.read(), GUARD)


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


async def assert_serving(client: RemotingClient, addr: str) -> None:
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"ping": 1}), GUARD)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields == {"ping": 1}


async def test_port_zero_binds_a_real_port(server: RemotingServer) -> None:
    assert server.port != 0
    assert server.address == f"127.0.0.1:{server.port}"


async def test_request_response_round_trip(server: RemotingServer, client: RemotingClient) -> None:
    req = RemotingCommand.request(
        ECHO, {"topic": "T", "queueId": 3, "ok": True, "f": 0.25}, b"\x00\x01payload"
    )
    req.remark = "hi"
    resp = await client.invoke(server.address, req, GUARD)
    assert resp.is_response
    assert resp.opaque == req.opaque
    assert (resp.code, resp.remark, resp.ext_fields, resp.body) == (0, "hi", req.ext_fields, req.body)


async def test_many_in_flight_requests_are_processed_concurrently(
    app: App, server: RemotingServer, client: RemotingClient
) -> None:
    app.gate_target = 200
    reqs = [RemotingCommand.request(GATE, {"i": i}) for i in range(200)]
    resps = await asyncio.gather(*(client.invoke(server.address, r, GUARD) for r in reqs))
    assert [r.ext_fields["i"] for r in resps] == list(range(200))
    assert [r.opaque for r in resps] == [r.opaque for r in reqs]
    assert len(server.channels) == 1  # all on one pooled connection


async def test_parked_request_does_not_block_the_connection(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    parked = asyncio.create_task(client.invoke(server.address, RemotingCommand.request(PARK), GUARD))
    await poll(lambda: app.parked)
    await assert_serving(client, server.address)  # same connection, answered while the other is parked
    assert not parked.done()
    channel, request = app.parked[0]
    assert channel.send_response(RemotingCommand.response_to(request, ResponseCode.PULL_NOT_FOUND))
    assert (await parked).code == ResponseCode.PULL_NOT_FOUND


async def test_invoke_times_out_and_a_late_answer_is_ignored(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    with pytest.raises(RemotingTimeoutError) as e:
        await client.invoke(server.address, RemotingCommand.request(PARK), 0.05)
    assert isinstance(e.value, TimeoutError)
    await poll(lambda: app.parked)
    channel, request = app.parked[0]
    channel.send_response(RemotingCommand.response_to(request))
    await assert_serving(client, server.address)
    client_channel = await client.get_channel(server.address)
    assert client_channel._pending == {}


async def test_short_timeout_expires_behind_a_long_one_and_each_on_its_own(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    # Timeouts share one scan per channel, timed for the earliest deadline: a short invoke sent after a
    # long one must still expire on time, and the long one must stay pending until answered.
    long_wait = asyncio.create_task(client.invoke(server.address, RemotingCommand.request(PARK), GUARD * 4))
    await poll(lambda: len(app.parked) == 1)
    for _ in range(3):
        await assert_serving(client, server.address)  # answered invokes leave nothing to expire
    with pytest.raises(RemotingTimeoutError, match="within 0.05s"):  # GUARD: long before the 20 s one's deadline
        await asyncio.wait_for(client.invoke(server.address, RemotingCommand.request(PARK), 0.05), GUARD)
    with pytest.raises(RemotingTimeoutError):
        await asyncio.wait_for(client.invoke(server.address, RemotingCommand.request(PARK), 0.02), GUARD)
    assert not long_wait.done()
    channel, request = app.parked[0]
    channel.send_response(RemotingCommand.response_to(request, ResponseCode.PULL_NOT_FOUND))
    assert (await long_wait).code == ResponseCode.PULL_NOT_FOUND
    client_channel = await client.get_channel(server.address)
    assert client_channel._pending == {}


async def test_oneway_requests_get_no_response(app: App, server: RemotingServer, poll: Callable) -> None:
    reader, writer = await raw_connect(server.address)
    oneway = RemotingCommand.request(
        RECORD, oneway=True
    )  # the processor returns a response: it must be dropped
    unknown = RemotingCommand.request(4242, oneway=True)  # no REQUEST_CODE_NOT_SUPPORTED either
    echo = RemotingCommand.request(ECHO)
    writer.write(encode(oneway) + encode(unknown) + encode(echo))
    first = await read_command(reader)
    assert first.opaque == echo.opaque
    await poll(lambda: app.recorded)
    assert app.recorded[0][1].opaque == oneway.opaque
    writer.close()


async def test_client_invoke_oneway_reaches_the_processor(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    await client.invoke_oneway(server.address, RemotingCommand.request(RECORD, {"k": "v"}))
    await poll(lambda: app.recorded)
    assert app.recorded[0][1].is_oneway and app.recorded[0][1].ext_fields == {"k": "v"}


async def test_server_initiated_requests_to_a_client(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    notified: list[RemotingCommand] = []

    async def on_notify(ch: Channel, req: RemotingCommand) -> RemotingCommand:
        notified.append(req)
        return RemotingCommand.response_to(
            req, ResponseCode.SUCCESS, ext_fields={"seen": req.ext_fields["g"]}
        )

    client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    await client.invoke(server.address, RemotingCommand.request(RECORD), GUARD)  # a "heartbeat"
    server_side, _ = app.recorded[0]
    resp = await server_side.invoke(
        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"g": "CG"}), GUARD
    )
    assert resp.ext_fields == {"seen": "CG"}
    await server_side.invoke_oneway(
        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"g": "X"})
    )
    await poll(lambda: len(notified) == 2)
    assert notified[1].is_oneway
    # A code the client does not handle is refused, in this direction too.
    refused = await server_side.invoke(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), GUARD)
    assert refused.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_unknown_code_is_not_supported(server: RemotingServer, client: RemotingClient) -> None:
    resp = await client.invoke(server.address, RemotingCommand.request(999), GUARD)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 999 not supported"


async def test_default_processor_takes_unregistered_codes(
    server: RemotingServer, client: RemotingClient
) -> None:
    async def fallback(ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(ResponseCode.SUCCESS, remark=f"default {req.code}")

    server.register_default_processor(fallback)
    resp = await client.invoke(server.address, RemotingCommand.request(999), GUARD)
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, "default 999")


async def test_handler_exception_becomes_system_error(server: RemotingServer, client: RemotingClient) -> None:
    resp = await client.invoke(server.address, RemotingCommand.request(BOOM), GUARD)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "disk on fire" in resp.remark
    wrong = await client.invoke(server.address, RemotingCommand.request(WRONG), GUARD)
    assert wrong.code == ResponseCode.SYSTEM_ERROR and "dict" in wrong.remark
    await assert_serving(client, server.address)  # same connection still serves


async def test_unencodable_response_becomes_system_error(
    server: RemotingServer, client: RemotingClient
) -> None:
    resp = await client.invoke(server.address, RemotingCommand.request(BIG), GUARD)  # 10 kB > 8 kB limit
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "exceeds" in resp.remark


async def test_too_large_request_is_refused_before_sending(server: RemotingServer) -> None:
    async with RemotingClient(max_frame_size=1024) as small:
        with pytest.raises(FrameTooLarge):
            await small.invoke(server.address, RemotingCommand.request(ECHO, body=b"x" * 2000), GUARD)
        await assert_serving(small, server.address)


async def test_large_frames_cross_many_reads() -> None:
    app = App()
    async with RemotingServer() as srv, RemotingClient() as c:
        app.install(srv)
        body = bytes(range(256)) * (4 * 4096)  # 4 MiB
        resp = await c.invoke(srv.address, RemotingCommand.request(ECHO, body=body), GUARD)
        assert resp.body == body


async def test_malformed_frame_with_opaque_is_answered_then_closed(
    server: RemotingServer, client: RemotingClient
) -> None:
    await assert_serving(client, server.address)
    reader, writer = await raw_connect(server.address)
    bad = {"code": "not-an-int", "opaque": 77, "flag": 0, "language": 3, "version": 409}
    writer.write(frame(msgpack.packb(bad)))
    resp = await read_command(reader)
    assert (resp.code, resp.opaque, resp.is_response) == (ResponseCode.SYSTEM_ERROR, 77, True)
    assert "code" in resp.remark
    assert await read_eof(reader) == b""
    writer.close()
    await assert_serving(client, server.address)


@pytest.mark.parametrize("payload", [b"\xc1garbage", msgpack.packb([1, 2, 3])], ids=["garbage", "array"])
async def test_unreadable_frame_closes_without_answer(
    server: RemotingServer, client: RemotingClient, payload: bytes
) -> None:
    await assert_serving(client, server.address)
    reader, writer = await raw_connect(server.address)
    writer.write(frame(payload))
    assert await read_eof(reader) == b""
    writer.close()
    await assert_serving(client, server.address)


async def test_oversized_frame_closes_only_that_connection(
    server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    await assert_serving(client, server.address)
    reader, writer = await raw_connect(server.address)
    await poll(lambda: len(server.channels) == 2)
    writer.write(struct.pack(">I", 8193))  # limit is 8192; the body never needs to arrive
    assert await read_eof(reader) == b""
    writer.close()
    await poll(lambda: len(server.channels) == 1)
    await assert_serving(client, server.address)


async def test_pending_invokes_fail_fast_when_the_server_dies(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    waiting = [
        asyncio.create_task(client.invoke(server.address, RemotingCommand.request(PARK), 60))
        for _ in range(3)
    ]
    await poll(lambda: len(app.parked) == 3)
    await server.stop()
    for task in waiting:
        with pytest.raises(RemotingSendRequestError):
            await asyncio.wait_for(task, GUARD)  # far below the 60 s invoke timeout
    with pytest.raises(RemotingConnectError):
        await client.invoke(server.address, RemotingCommand.request(ECHO), GUARD)


async def test_close_listener_and_reconnect_on_next_use(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    closed: list[Channel] = []
    server.on_channel_close(closed.append)
    await client.invoke(server.address, RemotingCommand.request(RECORD), GUARD)
    server_side, _ = app.recorded[0]
    first = await client.get_channel(server.address)
    assert server_side.remote_address == first.local_address
    server_side.close()
    await poll(lambda: closed == [server_side] and first.closed)
    with pytest.raises(RemotingConnectError):
        await first.invoke(RemotingCommand.request(ECHO), GUARD)
    await assert_serving(client, server.address)
    second = await client.get_channel(server.address)
    assert second is not first and not second.closed


async def test_async_close_listener_runs(
    server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    seen: list[str] = []

    async def listener(ch: Channel) -> None:
        await asyncio.sleep(0)
        seen.append(ch.remote_address)

    server.on_channel_close(listener)
    await assert_serving(client, server.address)
    local = (await client.get_channel(server.address)).local_address
    client.close_channel(server.address)
    await poll(lambda: seen == [local])


async def test_concurrent_first_use_opens_one_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    await asyncio.gather(*(assert_serving(client, server.address) for _ in range(20)))
    assert len(server.channels) == 1


async def test_connect_failures_raise_connect_error() -> None:
    srv = RemotingServer()
    await srv.start()
    addr = srv.address
    await srv.stop()  # nothing listens there any more
    async with RemotingClient(connect_timeout=GUARD) as c:
        with pytest.raises(RemotingConnectError):
            await c.invoke(addr, RemotingCommand.request(ECHO), GUARD)
    with pytest.raises(RemotingConnectError):
        await c.invoke(addr, RemotingCommand.request(ECHO), GUARD)  # closed client


async def test_a_connect_closed_while_its_lookup_runs_leaves_no_unread_error() -> None:
    # close() cancels the connect attempts in flight. uvloop's create_connection looks the host up in a future it
    # does not cancel with the connect: the lookup's failure landed after, unread, and asyncio logged "Future
    # exception was never retrieved" from a client that merely shut down (a CLI's one-line error got a traceback).
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    client = RemotingClient()
    # A name longer than DNS allows (253): the resolver fails it on this host without a query, so the test does not
    # wait out a slow name server (40 s on one CI machine), and the failure still arrives after the close.
    unresolvable = ".".join(["a" * 60] * 5)
    attempt = asyncio.ensure_future(client.get_channel(f"{unresolvable}:9876"))
    await asyncio.sleep(0)  # the attempt starts its connect ...
    await asyncio.sleep(0)  # ... and the connect its lookup, which cannot have answered yet
    await client.close()
    with pytest.raises(RemotingConnectError):
        await attempt
    del attempt  # (its error's traceback holds what would keep an unread failure from being collected)
    with pytest.raises(socket.gaierror):  # a lookup of the same name, started after
        await loop.getaddrinfo(unresolvable, 9876)
    # The first lookup may end a little later; an unread failure shows when its future is collected. One collection
    # at the end: each is a large process's whole heap when the suite runs (50 of them took 20 s).
    for _ in range(20):
        await asyncio.sleep(0.01)
    gc.collect()
    assert reported == []


@contextlib.asynccontextmanager
async def never_reading_peer() -> AsyncIterator[str]:
    """The address of a server that accepts and never reads: a hung peer, or one behind a partition after the
    connection was made. Its connections are reset at the end (a client's close would wait for it to read)."""
    held: list[asyncio.StreamWriter] = []
    hung = await asyncio.start_server(lambda _r, w: held.append(w), "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{hung.sockets[0].getsockname()[1]}"
    finally:
        for w in held:
            w.transport.abort()
        hung.close()


async def test_a_one_way_request_to_a_peer_that_stops_reading_times_out() -> None:
    # Once the socket's buffers were full, invoke_oneway waited for room for ever (RocketMQ's gives up after
    # its timeout, waiting for a permit).
    body = bytes(range(256)) * 4096  # 1 MiB a request
    c = RemotingClient(connect_timeout=GUARD)
    async with never_reading_peer() as addr:
        with pytest.raises(RemotingTimeoutError, match="not written within 0.3s"):
            for _ in range(1000):  # (the buffers hold a few of them)
                request = RemotingCommand.request(ECHO, body=body, oneway=True)
                await asyncio.wait_for(c.invoke_oneway(addr, request, timeout=0.3), GUARD)
    await c.close()


async def test_a_request_on_a_new_connection_waits_for_on_connected_no_longer_than_its_timeout() -> None:
    # A client's on_connected (its heartbeat) waits for an answer the hung peer never gives, for the heartbeat's
    # own timeout: a send on that new connection overran its timeout by as much.
    c = RemotingClient(connect_timeout=GUARD)
    async with never_reading_peer() as addr:
        c.on_connected = lambda a: c.invoke(a, RemotingCommand.request(ECHO), 60.0)  # (never answered)
        with pytest.raises(RemotingTimeoutError, match="took more than the 0.3s timeout"):
            await asyncio.wait_for(c.invoke(addr, RemotingCommand.request(ECHO), 0.3), GUARD)
    await c.close()


async def test_invoke_rejects_responses_and_oneway(server: RemotingServer, client: RemotingClient) -> None:
    channel = await client.get_channel(server.address)
    with pytest.raises(ValueError):
        await channel.invoke(RemotingCommand.response(), GUARD)
    with pytest.raises(ValueError):
        await channel.invoke(RemotingCommand.request(ECHO, oneway=True), GUARD)


async def test_loop_under_test_is_the_parametrized_one(request: pytest.FixtureRequest) -> None:
    is_uvloop = type(asyncio.get_running_loop()).__module__.startswith("uvloop")
    assert is_uvloop == request.node.name.endswith("[uvloop]")


async def test_reading_pauses_while_too_many_requests_are_in_flight(poll: Callable) -> None:
    started: list[int] = []
    release = asyncio.Event()

    async def hold(ch: Channel, req: RemotingCommand) -> RemotingCommand:
        started.append(req.ext_fields["i"])
        await release.wait()
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, ext_fields=req.ext_fields)

    async with RemotingServer(max_inflight=2) as srv, RemotingClient() as c:
        srv.register_processor(ECHO, hold)
        calls = []
        for i in range(2):
            calls.append(
                asyncio.create_task(c.invoke(srv.address, RemotingCommand.request(ECHO, {"i": i}), GUARD))
            )
            await poll(lambda n=i: len(started) == n + 1)
        calls.append(
            asyncio.create_task(c.invoke(srv.address, RemotingCommand.request(ECHO, {"i": 2}), GUARD))
        )
        await asyncio.sleep(0.05)  # only gives the third request a chance to (wrongly) start
        assert started == [0, 1]
        release.set()
        resps = await asyncio.gather(*calls)
        assert [r.ext_fields["i"] for r in resps] == [0, 1, 2] and started == [0, 1, 2]
