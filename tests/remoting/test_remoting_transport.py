"""RemotingServer / RemotingClient / Channel over real sockets on 127.0.0.1 (both event loops); how connections
fail, close and open again is in test_remoting_transport_connections.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from transport_app import (
    BIG,
    BOOM,
    ECHO,
    GATE,
    GUARD,
    PARK,
    RECORD,
    WRONG,
    App,
    app_fixture,  # noqa: F401 (the fixture app)
    assert_serving,
    raw_connect,
    read_command,
    small_frames_fixture,  # noqa: F401 (the fixture server_options)
)

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import (
    FrameTooLarge,
    RemotingTimeoutError,
)
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel


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
