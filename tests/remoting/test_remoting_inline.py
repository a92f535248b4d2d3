"""Inline processors: plain functions called as the request is read; what they return to wait for runs in a
task (both loops)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingSendRequestError, RemotingTimeoutError
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel, parse_address

NOW, BOOM, WRONG, LATER, WAIT, SLOW, RECORD, SPLIT, BIG = 2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008, 2009
GUARD = 5.0


class App:
    def __init__(self) -> None:
        self.calls: list[tuple[int, object, bool]] = []  # (code, the "i" field, ran inside a task)
        self.release = asyncio.Event()
        self.waiting = 0

    def _seen(self, req: RemotingCommand) -> None:
        self.calls.append((req.code, req.ext_fields.get("i"), asyncio.current_task() is not None))

    def install(self, srv: RemotingServer) -> None:
        for code in (NOW, BOOM, WRONG, LATER, WAIT, RECORD, SPLIT, BIG):
            srv.register_inline_processor(code, getattr(self, f"on_{code}"))
        srv.register_processor(SLOW, self.slow)

    def on_2001(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # NOW: plain function
        self._seen(req)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="now", ext_fields=req.ext_fields)

    def on_2002(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # BOOM
        raise RuntimeError("inline on fire")

    def on_2003(self, ch: Channel, req: RemotingCommand) -> object:  # WRONG: neither a command nor awaitable
        return 42

    async def on_2004(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # LATER: async, never waits
        self._seen(req)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="later")

    async def on_2005(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # WAIT: waits, then fails
        self.waiting += 1
        await self.release.wait()
        self._seen(req)
        if req.ext_fields.get("fail"):
            raise ValueError("failed after waiting")
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="waited")

    async def slow(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # a task-based processor
        self._seen(req)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS)

    def on_2007(self, ch: Channel, req: RemotingCommand) -> None:  # RECORD: oneway-style
        self._seen(req)
        return None

    def on_2008(self, ch: Channel, req: RemotingCommand) -> Awaitable[RemotingCommand]:  # SPLIT: checks, then waits
        self._seen(req)  # the plain part, as the request is read
        return self._rest_of_split(req)

    async def _rest_of_split(self, req: RemotingCommand) -> RemotingCommand:
        self.waiting += 1
        await self.release.wait()
        self._seen(req)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="split")

    def on_2009(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:  # BIG: a large answer
        self._seen(req)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, body=b"b" * (1 << 20))


@pytest.fixture
def app() -> App:
    return App()


async def read_commands(reader: asyncio.StreamReader, n: int) -> list[RemotingCommand]:
    out: list[RemotingCommand] = []
    while len(out) < n:
        prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
        (size,) = struct.unpack(">I", prefix)
        out += decode_frames(prefix + await asyncio.wait_for(reader.readexactly(size), GUARD))
    return out


async def test_a_plain_processor_answers_without_a_task_and_a_coroutine_runs_in_one(
    app: App, server: RemotingServer, client: RemotingClient
) -> None:
    now = await client.invoke(server.address, RemotingCommand.request(NOW, {"i": 1}), GUARD)
    later = await client.invoke(server.address, RemotingCommand.request(LATER, {"i": 2}), GUARD)
    assert (now.code, now.remark, now.ext_fields) == (ResponseCode.SUCCESS, "now", {"i": 1})
    assert (later.code, later.remark) == (ResponseCode.SUCCESS, "later")
    # The plain function ran in data_received; the coroutine an async def handler returns is not stepped by
    # hand there: all of it runs in a task, although it never waits.
    assert app.calls == [(NOW, 1, False), (LATER, 2, True)]


async def test_the_plain_part_runs_as_the_request_is_read_and_the_awaitable_in_a_task(
    app: App, server: RemotingServer, poll: Callable
) -> None:
    # One write: SPLIT (checks at once, then waits), then NOW. The request SPLIT waits for has started, so NOW
    # does not queue behind its task: it is answered inline while SPLIT still waits.
    reader, writer = await asyncio.open_connection(*parse_address(server.address))
    split, now = RemotingCommand.request(SPLIT, {"i": 1}), RemotingCommand.request(NOW, {"i": 2})
    writer.write(encode(split) + encode(now))
    (first,) = await read_commands(reader, 1)
    assert (first.opaque, first.remark) == (now.opaque, "now")
    await poll(lambda: app.waiting == 1)
    assert app.calls == [(SPLIT, 1, False), (NOW, 2, False)]
    app.release.set()
    (second,) = await read_commands(reader, 1)
    assert (second.opaque, second.remark) == (split.opaque, "split")
    assert app.calls[-1] == (SPLIT, 1, True)
    writer.close()


async def test_inline_requests_run_in_tasks_that_wait_while_the_peer_does_not_read(
    app: App, server: RemotingServer, poll: Callable
) -> None:
    # A peer that sends and does not read: 1 MiB answers fill the socket buffers until the transport pauses
    # writing. From then on the server reads no more of the connection's requests, and those already read run
    # in tasks that wait for the buffer to drain before their processor runs, so no answer piles up.
    reader, writer = await asyncio.open_connection(*parse_address(server.address))
    bigs = [RemotingCommand.request(BIG, {"i": i}) for i in range(64)]
    late = RemotingCommand.request(NOW, {"i": "late"})
    writer.write(b"".join(encode(c) for c in [*bigs, late]))  # one write: one read on the server
    await poll(lambda: any(ch._write_paused for ch in server.channels))
    (channel,) = server.channels
    assert channel._reading_paused
    ran = len(app.calls)
    assert 0 < ran < len(bigs), "every answer was made though the peer reads none"
    assert channel.unwritten_bytes < 3 << 20  # about one flush and the answer that passed the mark
    answers = await read_commands(reader, len(bigs) + 1)  # reading drains the buffer; the rest run in order
    assert [a.opaque for a in answers] == [c.opaque for c in [*bigs, late]]
    assert app.calls[-1] == (NOW, "late", True)  # in a task, not in data_received
    assert not channel._reading_paused
    writer.close()


async def test_errors_are_answered_and_the_connection_stays(server: RemotingServer, client: RemotingClient) -> None:
    boom = await client.invoke(server.address, RemotingCommand.request(BOOM), GUARD)
    assert boom.code == ResponseCode.SYSTEM_ERROR and "inline on fire" in boom.remark
    wrong = await client.invoke(server.address, RemotingCommand.request(WRONG), GUARD)
    assert wrong.code == ResponseCode.SYSTEM_ERROR
    unknown = await client.invoke(server.address, RemotingCommand.request(4242), GUARD)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert (await client.invoke(server.address, RemotingCommand.request(NOW), GUARD)).code == ResponseCode.SUCCESS
    assert len(server.channels) == 1


async def test_a_processor_that_waits_goes_on_in_a_task_and_the_connection_keeps_serving(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    ok = asyncio.create_task(client.invoke(server.address, RemotingCommand.request(WAIT, {"i": 1}), GUARD))
    failing = asyncio.create_task(
        client.invoke(server.address, RemotingCommand.request(WAIT, {"i": 2, "fail": True}), GUARD)
    )
    await poll(lambda: app.waiting == 2)
    served = await client.invoke(server.address, RemotingCommand.request(NOW, {"i": 3}), GUARD)
    assert served.code == ResponseCode.SUCCESS and not ok.done() and not failing.done()
    app.release.set()
    assert (await ok).remark == "waited"
    assert (await failing).code == ResponseCode.SYSTEM_ERROR and "failed after waiting" in (await failing).remark
    # The coroutines ran in tasks of their own.
    assert sorted(c for c in app.calls if c[0] == WAIT) == [(WAIT, 1, True), (WAIT, 2, True)]


async def test_requests_of_one_connection_start_in_the_order_they_came(app: App, server: RemotingServer) -> None:
    # One write, three frames: a task-based request, then two inline ones. The inline ones must not overtake
    # the first, whose task has not started yet when they are read.
    reader, writer = await asyncio.open_connection(*parse_address(server.address))
    frames = [RemotingCommand.request(SLOW, {"i": 0}), RemotingCommand.request(NOW, {"i": 1}),
              RemotingCommand.request(RECORD, {"i": 2}, oneway=True), RemotingCommand.request(NOW, {"i": 3})]
    writer.write(b"".join(encode(f) for f in frames))
    answers = await read_commands(reader, 3)  # the one-way request is not answered
    assert sorted(a.opaque for a in answers) == sorted(f.opaque for f in frames if not f.is_oneway)
    assert [c[1] for c in app.calls] == [0, 1, 2, 3]
    writer.close()


async def test_stopping_the_server_ends_a_processor_still_waiting(
    app: App, server: RemotingServer, client: RemotingClient, poll: Callable
) -> None:
    waiting = asyncio.create_task(client.invoke(server.address, RemotingCommand.request(WAIT), 60))
    await poll(lambda: app.waiting == 1)
    await asyncio.wait_for(server.stop(), GUARD)  # cancels the task running the coroutine
    with pytest.raises(RemotingSendRequestError):
        await asyncio.wait_for(waiting, GUARD)
    assert app.calls == []  # it never got past its wait


async def test_register_processor_replaces_an_inline_one(server: RemotingServer, client: RemotingClient) -> None:
    async def plain(ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, remark="in a task")

    server.register_processor(NOW, plain)
    resp = await client.invoke(server.address, RemotingCommand.request(NOW), GUARD)
    assert resp.remark == "in a task"


async def test_invoke_times_out_while_waiting_for_a_peer_that_does_not_read(poll: Callable) -> None:
    # A peer that accepts and never reads: the socket buffers fill, the transport pauses writing, and invoke's
    # timeout (a timer now, not a timeout scope) must still cover the wait for the buffer to drain.
    accepted: list[asyncio.StreamWriter] = []

    async def never_read(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    deaf = await asyncio.start_server(never_read, "127.0.0.1", 0)
    addr = f"127.0.0.1:{deaf.sockets[0].getsockname()[1]}"
    try:
        async with RemotingClient() as c:
            channel = await c.get_channel(addr)
            filling = [
                asyncio.create_task(channel.invoke(RemotingCommand.request(NOW, body=b"x" * (1 << 20)), 30))
                for _ in range(64)
            ]
            await poll(lambda: channel._write_paused)
            with pytest.raises(RemotingTimeoutError):
                await asyncio.wait_for(channel.invoke(RemotingCommand.request(NOW), 0.1), GUARD)
            for task in filling:
                task.cancel()
            await asyncio.gather(*filling, return_exceptions=True)
            assert channel._pending == {}
            for w in accepted:
                w.close()  # the peer goes away: our side can close without flushing what it never read
            await poll(lambda: channel.closed)
    finally:
        for w in accepted:
            w.close()
        deaf.close()
