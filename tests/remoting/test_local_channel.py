"""In-process connections (remoting/local_channel.py): a RemotingClient reaching a RemotingServer of its own process
without a socket, the server on an event loop of its own in another thread (as the broker and the gRPC endpoint
run), and requests served exactly as a socket's: processors, inline processors, the request validator, errors as
response codes, parked requests answered later, one-way requests, requests the server sends back, timeouts and
closes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import FLAG_RESPONSE, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeoutError
from pocketmq.remoting.local_channel import LocalChannel
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

ECHO, BOOM, PARK, ONEWAY, INLINE, MUTATE, CALL_BACK, SECRET = 2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008
ASK_CLIENT = 2100
GUARD = 10.0
CLIENT_ADDRESS = "127.0.0.1:8081"


class ServerSide:
    """A RemotingServer on a loop of its own in a thread, with processors whose effects the test reads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server = RemotingServer("127.0.0.1", 0)
        self.parked: list[tuple[Channel, RemotingCommand]] = []
        self.oneways: list[tuple[str, RemotingCommand]] = []
        self.got_oneway = threading.Event()
        self.mutated: RemotingCommand | None = None
        self.answers_from_client: list[RemotingCommand] = []
        s = self.server
        s.register_processor(ECHO, self.echo)
        s.register_processor(BOOM, self.boom)
        s.register_processor(PARK, self.park)
        s.register_processor(ONEWAY, self.oneway)
        s.register_inline_processor(INLINE,
                                    lambda ch, req: RemotingCommand.response(remark=f"inline {ch.remote_address}"))
        s.register_processor(MUTATE, self.mutate)
        s.register_processor(CALL_BACK, self.call_back)
        s.register_processor(SECRET, self.echo)
        s.request_validator = lambda addr, req: "no secrets" if req.code == SECRET else None

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(GUARD)

    async def echo(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(remark=ch.remote_address, ext_fields=req.ext_fields, body=req.body)

    async def boom(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("disk on fire")

    async def park(self, ch: Channel, req: RemotingCommand) -> None:
        self.parked.append((ch, req))
        return None

    async def oneway(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        self.oneways.append((ch.remote_address, req))
        self.got_oneway.set()
        return RemotingCommand.response(remark="nobody reads this")

    async def mutate(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        req.ext_fields["seen"] = "by the server"
        response = RemotingCommand.response(ext_fields={"a": "1"})
        self.mutated = response
        return response

    async def call_back(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        answer = await ch.invoke(RemotingCommand.request(ASK_CLIENT, {"q": "state?"}), GUARD)
        self.answers_from_client.append(answer)
        await ch.invoke_oneway(RemotingCommand.request(ASK_CLIENT, {"q": "fyi"}))
        return RemotingCommand.response(remark=answer.remark)


@pytest.fixture
def side() -> Iterator[ServerSide]:
    s = ServerSide()
    s.thread.start()
    s.run(s.server.start())
    yield s
    try:
        s.run(s.server.stop())
    finally:
        s.loop.call_soon_threadsafe(s.loop.stop)
        s.thread.join(GUARD)
        s.loop.close()


@pytest.fixture
async def client(side: ServerSide) -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    c.add_local_server(side.server.address, side.server, CLIENT_ADDRESS)
    yield c
    await c.close()


def server_channels(side: ServerSide) -> list[Channel]:
    async def read() -> list[Channel]:
        return list(side.server.channels)

    return side.run(read())


async def test_a_request_reaches_the_server_without_a_socket(side: ServerSide, client: RemotingClient) -> None:
    response = await client.invoke(side.server.address, RemotingCommand.request(ECHO, {"k": "v", "n": 3}, b"body"),
                                   GUARD)
    assert response.code == ResponseCode.SUCCESS and response.is_response
    assert response.ext_fields == {"k": "v", "n": 3} and response.body == b"body"
    assert response.remark == CLIENT_ADDRESS  # what the server's processor saw as the client's address
    (channel,) = server_channels(side)
    assert isinstance(channel, LocalChannel) and channel.remote_address == CLIENT_ADDRESS
    assert channel.local_address == side.server.address
    (client_end,) = client.channels
    assert isinstance(client_end, LocalChannel) and client_end.remote_address == side.server.address
    # Many in flight at once, each answered with its own.
    results = await asyncio.gather(*(client.invoke(side.server.address, RemotingCommand.request(ECHO, {"i": i}),
                                                   GUARD) for i in range(200)))
    assert [r.ext_fields["i"] for r in results] == list(range(200))
    assert len(server_channels(side)) == 1


async def test_errors_inline_processors_and_the_validator_answer_as_over_a_socket(side: ServerSide,
                                                                               client: RemotingClient) -> None:
    addr = side.server.address
    boom = await client.invoke(addr, RemotingCommand.request(BOOM), GUARD)
    assert (boom.code, boom.remark) == (ResponseCode.SYSTEM_ERROR, "disk on fire")
    unknown = await client.invoke(addr, RemotingCommand.request(4242), GUARD)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    inline = await client.invoke(addr, RemotingCommand.request(INLINE), GUARD)
    assert inline.remark == f"inline {CLIENT_ADDRESS}"
    refused = await client.invoke(addr, RemotingCommand.request(SECRET), GUARD)
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "no secrets")


async def test_commands_are_copies_on_each_side(side: ServerSide, client: RemotingClient) -> None:
    request = RemotingCommand.request(MUTATE, {"mine": "yes"})
    response = await client.invoke(side.server.address, request, GUARD)
    assert request.ext_fields == {"mine": "yes"}  # the server's change to its request is its own
    assert side.mutated is not None and side.mutated is not response
    side.mutated.ext_fields["a"] = "changed later"
    assert response.ext_fields == {"a": "1"}


async def test_a_parked_request_is_answered_later_and_a_oneway_gets_no_answer(side: ServerSide,
                                                                             client: RemotingClient) -> None:
    addr = side.server.address
    pending = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(PARK, {"wait": 1}), GUARD))
    await client.invoke_oneway(addr, RemotingCommand.request(ONEWAY, {"x": "y"}))
    assert await asyncio.to_thread(side.got_oneway.wait, GUARD)
    assert side.oneways[0][0] == CLIENT_ADDRESS and side.oneways[0][1].is_oneway
    assert not pending.done()

    async def answer_parked() -> None:
        ch, req = side.parked[0]
        ch.send_response(RemotingCommand.response_to(req, remark="later"))
        ch.flush()

    await asyncio.to_thread(side.run, answer_parked())
    response = await pending
    assert response.remark == "later" and response.flag & FLAG_RESPONSE


async def test_the_server_invokes_the_client_on_the_same_connection(side: ServerSide, client: RemotingClient) -> None:
    asked: list[RemotingCommand] = []

    def answer(ch: Channel, req: RemotingCommand) -> RemotingCommand:
        asked.append(req)
        return RemotingCommand.response(remark=f"client says {req.ext_fields['q']}")

    client.register_inline_processor(ASK_CLIENT, answer)
    response = await client.invoke(side.server.address, RemotingCommand.request(CALL_BACK), GUARD)
    assert response.remark == "client says state?"
    async with asyncio.timeout(GUARD):
        while len(asked) < 2:
            await asyncio.sleep(0.001)
    assert [r.ext_fields["q"] for r in asked] == ["state?", "fyi"] and asked[1].is_oneway


async def test_a_timeout_and_a_close_fail_the_waiting_invokes(side: ServerSide, client: RemotingClient) -> None:
    addr = side.server.address
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(addr, RemotingCommand.request(PARK), 0.05)
    pending = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(PARK), GUARD))
    async with asyncio.timeout(GUARD):
        while len(side.parked) < 2:
            await asyncio.sleep(0.001)

    async def close_server_end() -> None:
        side.parked[1][0].close()

    await asyncio.to_thread(side.run, close_server_end())
    with pytest.raises(RemotingSendRequestError):
        await pending
    assert server_channels(side) == []
    # The next request opens a new in-process connection.
    response = await client.invoke(addr, RemotingCommand.request(ECHO), GUARD)
    assert response.remark == CLIENT_ADDRESS and len(server_channels(side)) == 1


async def test_a_stopped_server_is_not_reachable(side: ServerSide, client: RemotingClient) -> None:
    addr = side.server.address
    await client.invoke(addr, RemotingCommand.request(ECHO), GUARD)
    await asyncio.to_thread(side.run, side.server.stop())
    with pytest.raises((RemotingConnectError, RemotingSendRequestError)):
        await client.invoke(addr, RemotingCommand.request(ECHO), GUARD)
    with pytest.raises(RemotingConnectError):
        await client.invoke(addr, RemotingCommand.request(ECHO), GUARD)


async def test_other_addresses_are_still_reached_over_sockets(side: ServerSide, client: RemotingClient) -> None:
    other = RemotingServer("127.0.0.1", 0)
    other.register_processor(ECHO, side.echo)
    await other.start()
    try:
        response = await client.invoke(other.address, RemotingCommand.request(ECHO), GUARD)
        (channel,) = other.channels
        assert not isinstance(channel, LocalChannel)
        assert response.remark == channel.remote_address != CLIENT_ADDRESS
    finally:
        await other.stop()


async def test_a_server_on_the_clients_own_loop(side: ServerSide) -> None:
    here = RemotingServer("127.0.0.1", 0)
    here.register_processor(ECHO, side.echo)
    here.register_processor(PARK, side.park)
    await here.start()
    c = RemotingClient()
    c.add_local_server(here.address, here, CLIENT_ADDRESS)
    try:
        response = await c.invoke(here.address, RemotingCommand.request(ECHO, body=b"x"), GUARD)
        assert (response.remark, response.body) == (CLIENT_ADDRESS, b"x")
        (channel,) = here.channels
        assert isinstance(channel, LocalChannel)
        pending = asyncio.ensure_future(c.invoke(here.address, RemotingCommand.request(PARK), GUARD))
        async with asyncio.timeout(GUARD):
            while not side.parked:
                await asyncio.sleep(0.001)
        await here.stop()  # closes its end: the parked request's caller learns at once
        with pytest.raises(RemotingSendRequestError):
            await pending
    finally:
        await c.close()
        await here.stop()
