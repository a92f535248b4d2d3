"""Per-connection limits of a RemotingServer over real sockets, with millisecond settings (both loops): a peer
that does not read its responses, a frame that never finishes, an idle connection; everyone else unaffected."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable

import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.connection_limits import ConnectionLimits
from pocketmq.remoting.native_codec import encode_native
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel, parse_address

ANSWER, ECHO = 3001, 3002
GUARD = 5.0
ANSWER_SIZE = 32 * 1024
HIGH, LOW = 64 * 1024, 16 * 1024
PATIENT_FRAME_TIMEOUT = 0.25


class App:
    def __init__(self) -> None:
        self.answered = 0

    def install(self, srv: RemotingServer) -> None:
        srv.register_processor(ANSWER, self.answer)  # in a task, as a pull read from disk would be
        srv.register_inline_processor(ECHO, self.echo)

    async def answer(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        self.answered += 1
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, body=b"a" * ANSWER_SIZE)

    def echo(self, ch: Channel, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, ext_fields=req.ext_fields)


@pytest.fixture
def app() -> App:
    return App()


async def started(app: App, **limits: float) -> RemotingServer:
    srv = RemotingServer(limits=ConnectionLimits(write_buffer_high_water_mark=HIGH, write_buffer_low_water_mark=LOW,
                                                 **limits))
    app.install(srv)
    await srv.start()
    return srv


@pytest.fixture
async def server(app: App) -> AsyncIterator[RemotingServer]:
    srv = await started(app, frame_read_timeout=0.05, max_idle_time=0.2)
    yield srv
    await srv.stop()


async def connect(addr: str, rcvbuf: int | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = parse_address(addr)
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # small: the kernel absorbs little
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return await asyncio.open_connection(sock=sock)


def peer_address(writer: asyncio.StreamWriter) -> str:
    host, port = writer.get_extra_info("sockname")[:2]
    return f"{host}:{port}"


async def read_commands(reader: asyncio.StreamReader, n: int) -> list[RemotingCommand]:
    out = []
    for _ in range(n):
        prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
        body = await asyncio.wait_for(reader.readexactly(struct.unpack(">I", prefix)[0]), GUARD)
        out += decode_frames(prefix + body)
    return out


async def assert_serving(addr: str) -> None:
    async with RemotingClient() as other:
        resp = await other.invoke(addr, RemotingCommand.request(ECHO, {"ping": 1}), GUARD)
        assert resp.code == ResponseCode.SUCCESS and resp.ext_fields == {"ping": 1}


@pytest.fixture
async def patient_server(app: App) -> AsyncIterator[RemotingServer]:
    # No idle timeout (the peer below stops reading for a while); a frame left half-read while the server itself
    # does not read must not count against the frame timeout. The frame timeout is a quarter second, not 50 ms:
    # once the peer reads, each time the server reads again the rest of its half-read frame comes only after the
    # peer's end (on this test's loop) writes more, and a loaded machine held that loop 76 ms.
    srv = await started(app, frame_read_timeout=PATIENT_FRAME_TIMEOUT, max_idle_time=0)
    yield srv
    await srv.stop()


async def test_a_peer_that_does_not_read_stops_being_read_and_costs_a_bounded_buffer(
    app: App, patient_server: RemotingServer, poll: Callable
) -> None:
    # 2,000 requests whose answers (32 KiB each, 62.5 MiB in all) the peer does not read for a while.
    server = patient_server
    reader, writer = await connect(server.address, rcvbuf=16 * 1024)
    requests = [RemotingCommand.request(ANSWER, {"i": i}) for i in range(2000)]
    writer.write(b"".join(encode(r) for r in requests))
    ch = await _wait_for_channel(server, writer, poll)
    await poll(lambda: ch._reading_paused and ch._write_paused)
    made, held = app.answered, ch.unwritten_bytes
    # The answers made are those the kernel's socket buffers took (a few MiB on loopback), then those of
    # processors already running when the buffer passed its mark; the rest of the requests wait unread, or read
    # and not started.
    assert made < len(requests) // 4, made
    assert held < HIGH + 256 * 1024 + 2 * ANSWER_SIZE, held
    # Other connections are served meanwhile, and nothing more is made for this one, for two frame timeouts.
    loop = asyncio.get_running_loop()
    end = loop.time() + 2 * PATIENT_FRAME_TIMEOUT
    while loop.time() < end:
        await assert_serving(server.address)
    assert app.answered == made and ch._reading_paused and not ch.closed
    # Once the peer reads, everything is answered, in order, and reading goes on.
    answers = await read_commands(reader, len(requests))
    assert [a.opaque for a in answers] == [r.opaque for r in requests]
    assert all(len(a.body or b"") == ANSWER_SIZE for a in answers)
    assert not ch._reading_paused and ch.unwritten_bytes == 0
    writer.write(encode(RemotingCommand.request(ECHO, {"i": "after"})))
    (after,) = await read_commands(reader, 1)
    assert after.ext_fields == {"i": "after"}
    writer.close()


async def _wait_for_channel(srv: RemotingServer, writer: asyncio.StreamWriter, poll: Callable) -> Channel:
    """The server's end of the connection ``writer`` writes to."""
    local = peer_address(writer)
    await poll(lambda: any(c.remote_address == local for c in srv.channels))
    (ch,) = [c for c in srv.channels if c.remote_address == local]
    return ch


@pytest.mark.parametrize("protocol", ["msgpack", "native", "undecided"])
async def test_a_frame_that_never_finishes_closes_its_connection(
    server: RemotingServer, caplog: pytest.LogCaptureFixture, protocol: str
) -> None:
    whole = {"msgpack": encode, "native": encode_native}.get(protocol, encode)(
        RemotingCommand.request(ECHO, {"pad": "x" * 1000})
    )
    reader, writer = await connect(server.address)
    with caplog.at_level(logging.WARNING, logger="pocketmq.remoting.server"):
        writer.write(whole[:2] if protocol == "undecided" else whole[:600])  # then nothing more
        assert await asyncio.wait_for(reader.read(), GUARD) == b""  # closed by the server
    assert "still incomplete" in caplog.text
    await assert_serving(server.address)


async def test_a_frame_trickled_in_slower_than_the_timeout_is_closed(server: RemotingServer) -> None:
    # Bytes keep coming, but the frame they belong to began longer ago than the timeout.
    whole = encode(RemotingCommand.request(ECHO, {"pad": "x" * 1000}))
    reader, writer = await connect(server.address)
    closed = asyncio.ensure_future(reader.read())
    sent = 0
    while not closed.done():
        assert sent < len(whole) - 1, "the trickled frame was never timed out"
        writer.write(whole[sent:sent + 1])
        sent += 1
        await asyncio.wait([closed], timeout=0.01)
    try:
        assert closed.result() == b""
    except ConnectionResetError:
        # Closed by the server all the same: a byte still on its way when it closed reached a socket no longer
        # read, which the kernel answers with a reset instead of the end of the stream.
        pass


async def test_frames_that_complete_keep_a_busy_connection_open(app: App) -> None:
    # Frames split across reads, each finished within the timeout, for several timeouts in a row. (Timeouts of a
    # quarter second: a loaded machine's stall between a frame's two halves must not pass for a slow frame.)
    server = await started(app, frame_read_timeout=0.25, max_idle_time=0.5)
    try:
        reader, writer = await connect(server.address)
        loop = asyncio.get_running_loop()
        end = loop.time() + 0.8  # three frame timeouts, more than one idle timeout
        n = 0
        while loop.time() < end:
            frame = encode(RemotingCommand.request(ECHO, {"i": n}))
            writer.write(frame[:10])
            await asyncio.sleep(0.005)
            writer.write(frame[10:])
            (resp,) = await read_commands(reader, 1)
            assert resp.ext_fields == {"i": n}
            n += 1
        writer.close()
    finally:
        await server.stop()


async def test_an_idle_connection_is_closed_and_a_used_one_is_not(
    server: RemotingServer, caplog: pytest.LogCaptureFixture
) -> None:
    idle_reader, idle_writer = await connect(server.address)
    async with RemotingClient() as busy:
        with caplog.at_level(logging.INFO, logger="pocketmq.remoting.server"):
            closed = asyncio.ensure_future(idle_reader.read())
            while not closed.done():  # the busy client talks every 20 ms meanwhile (idle timeout: 200 ms)
                resp = await busy.invoke(server.address, RemotingCommand.request(ECHO, {"i": 1}), GUARD)
                assert resp.code == ResponseCode.SUCCESS
                await asyncio.wait([closed], timeout=0.02)
        assert closed.result() == b""
        assert "idle for" in caplog.text
        assert len(server.channels) == 1  # the busy one
        resp = await busy.invoke(server.address, RemotingCommand.request(ECHO, {"i": 2}), GUARD)
        assert resp.code == ResponseCode.SUCCESS


async def test_a_stuck_non_reading_peer_is_closed_when_idle(app: App, poll: Callable) -> None:
    # Reading paused and the buffer not draining: nothing moves, so the idle timeout ends it (aborted: a graceful
    # close would wait for the unread answers forever).
    srv = await started(app, frame_read_timeout=0, max_idle_time=0.1)
    try:
        reader, writer = await connect(srv.address, rcvbuf=16 * 1024)
        writer.write(b"".join(encode(RemotingCommand.request(ANSWER, {"i": i})) for i in range(500)))
        await poll(lambda: not srv.channels and app.answered > 0)
        await assert_serving(srv.address)
        writer.close()
    finally:
        await srv.stop()


async def test_a_graceful_close_that_its_peer_never_takes_is_dropped_when_idle(app: App, poll: Callable) -> None:
    # The server closes a connection gracefully (the broker's housekeeping, a malformed frame): its answers so far
    # still go out. This peer never reads them, so the close waits; the connection, its buffer and its socket
    # stayed until the peer left.
    srv = await started(app, frame_read_timeout=0, max_idle_time=0.1)
    try:
        reader, writer = await connect(srv.address, rcvbuf=4 * 1024)
        writer.write(b"".join(encode(RemotingCommand.request(ANSWER, {"i": i})) for i in range(200)))
        await poll(lambda: any(ch.write_paused for ch in srv.channels))
        [channel] = srv.channels
        channel.close()
        await poll(lambda: not srv.channels)
        await assert_serving(srv.address)
        writer.close()
    finally:
        await srv.stop()


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="water marks"):
        ConnectionLimits(write_buffer_high_water_mark=10, write_buffer_low_water_mark=20)
    with pytest.raises(ValueError, match=">= 0"):
        ConnectionLimits(max_idle_time=-1)
