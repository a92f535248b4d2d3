"""RemotingServer's second port, RocketMQ's VIP channel (the broker's listenPort - 2), over real sockets: served
like the main port (same processors, validator, connection limits), except the codes it refuses; a port that
cannot be bound is warned about while the main port serves on; stop() closes both."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.connection_limits import ConnectionLimits
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

ECHO, PULL, INLINE_PULL = 1001, 1002, 1003
GUARD = 5.0


class App:
    async def echo(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark=ch.local_address)

    def inline(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="inline")

    def install(self, server: RemotingServer) -> None:
        server.register_processor(ECHO, self.echo)
        server.register_processor(PULL, self.echo)
        server.register_inline_processor(INLINE_PULL, self.inline)


@pytest.fixture
def app() -> App:
    return App()


@pytest.fixture
async def both(app: App) -> AsyncIterator[RemotingServer]:
    """A server with a VIP port of the system's choice, refusing PULL and INLINE_PULL there."""
    server = RemotingServer(vip_port=0, vip_refused=(PULL, INLINE_PULL))
    app.install(server)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another socket listens on."""
    with socket.create_server(("127.0.0.1", 0)) as holder:
        yield holder.getsockname()[1]


async def ask(client: RemotingClient, addr: str, code: int) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, {}), GUARD)


async def test_a_request_on_the_vip_port_is_answered_by_the_same_processors(
    both: RemotingServer, client: RemotingClient
) -> None:
    vip = both.vip_address
    assert vip is not None and vip != both.address and both.vip_error is None
    assert (await ask(client, vip, ECHO)).remark == vip  # (the connection came in on the VIP port)
    assert (await ask(client, both.address, ECHO)).remark == both.address
    assert {ch.local_address for ch in both.channels} == {vip, both.address}


async def test_the_refused_codes_are_not_supported_on_the_vip_port_only(
    both: RemotingServer, client: RemotingClient
) -> None:
    vip = both.vip_address
    assert vip is not None
    for code in (PULL, INLINE_PULL):
        refused = await ask(client, vip, code)
        assert (refused.code, refused.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                  f" request type {code} not supported")
        assert (await ask(client, both.address, code)).code == ResponseCode.SUCCESS
    assert (await ask(client, vip, ECHO)).code == ResponseCode.SUCCESS  # (the refusal left the connection open)


async def test_the_main_port_runs_the_refused_codes_handlers_as_registered(both: RemotingServer, app: App) -> None:
    # The refusal is the VIP connections' dispatch: a wrapper around the handler cost every main-port pull a check.
    assert both._processors[PULL] == app.echo
    assert both._inline_processors[INLINE_PULL] == app.inline


async def test_the_request_validator_checks_the_vip_port_too(both: RemotingServer, client: RemotingClient) -> None:
    both.request_validator = lambda addr, req: "no one passes"
    resp = await ask(client, vip_address_of(both), ECHO)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "no one passes")


def vip_address_of(server: RemotingServer) -> str:
    assert server.vip_address is not None
    return server.vip_address


async def test_an_idle_vip_connection_is_closed_as_a_main_one_is(app: App, client: RemotingClient) -> None:
    server = RemotingServer(vip_port=0, limits=ConnectionLimits(max_idle_time=0.05))
    app.install(server)
    async with server:
        await ask(client, vip_address_of(server), ECHO)
        (channel,) = server.channels
        await asyncio.wait_for(channel.wait_closed(), GUARD)
        assert server.channels == frozenset()


async def test_a_busy_vip_port_is_warned_about_and_the_main_port_serves(
    app: App, client: RemotingClient, taken_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    server = RemotingServer(vip_port=taken_port)
    app.install(server)
    with caplog.at_level(logging.WARNING, logger="pocketmq.remoting.server"):
        await server.start()
    try:
        assert server.vip_address is None
        assert server.vip_error == os.strerror(errno.EADDRINUSE)
        (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert f"127.0.0.1:{taken_port} not bound (Address already in use)" in record.getMessage()
        assert (await ask(client, server.address, ECHO)).code == ResponseCode.SUCCESS
    finally:
        await server.stop()


async def test_stop_closes_both_ports_and_their_connections(both: RemotingServer, client: RemotingClient) -> None:
    main, vip = both.address, vip_address_of(both)
    await ask(client, main, ECHO)
    await ask(client, vip, ECHO)
    channels = both.channels
    assert len(channels) == 2
    await both.stop()
    assert all(ch.closed for ch in channels)
    assert both.vip_address is None
    assert not accepts(port_of(main)) and not accepts(port_of(vip))
    await both.start()  # (started again: both ports anew)
    assert (await ask(client, vip_address_of(both), ECHO)).code == ResponseCode.SUCCESS


def port_of(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("steps", range(5))
async def test_a_start_cancelled_part_way_leaves_neither_port_listening_after_stop(app: App, steps: int) -> None:
    main, vip = free_port(), free_port()
    server = RemotingServer(port=main, vip_port=vip)
    app.install(server)
    start = asyncio.ensure_future(server.start())
    for _ in range(steps):
        await asyncio.sleep(0)
    start.cancel()
    try:
        await start
    except asyncio.CancelledError:
        pass
    await server.stop()
    assert not accepts(main) and not accepts(vip)
