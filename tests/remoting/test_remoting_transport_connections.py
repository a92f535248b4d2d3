"""RemotingServer / RemotingClient connections over real sockets on 127.0.0.1 (both event loops): a bad or oversized
frame closes only its own connection, a server that dies fails what waits on it at once, a closed connection is
opened again on next use, and connects that fail, hang or outlive their lookup end as they should."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import struct
from collections.abc import AsyncIterator, Callable

import msgpack
import pytest
from transport_app import (
    ECHO,
    GUARD,
    PARK,
    RECORD,
    App,
    app_fixture,  # noqa: F401 (the fixture app)
    assert_serving,
    frame,
    raw_connect,
    read_command,
    read_eof,
    small_frames_fixture,  # noqa: F401 (the fixture server_options)
)

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import (
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel


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
