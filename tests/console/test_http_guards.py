"""What the console's HTTP server refuses before any page runs: a Host name it is not (DNS rebinding), connections
that never finish a request, and connections beyond its limit. Raw sockets, to send exactly the bytes an attacker
or a stalled client would."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

from pocketmq.console import ConsoleServer  # noqa: E402
from pocketmq.remoting.body import TopicConfig  # noqa: E402

BOUND = 10.0  # a deadline for a failing test, never a measured figure

# `pocketmq dev` serves the console on uvloop, whose transports are not asyncio's classes.
pytestmark = pytest.mark.both_loops


async def exchange(port: int, raw: bytes) -> tuple[int, bytes]:
    """Send ``raw`` on a fresh connection, read until the console closes it: (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), BOUND)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def request(method: str, path: str, host: str, body: Any = None, origin: str | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
    if origin:
        head += f"Origin: {origin}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


async def test_a_rebound_name_is_refused_for_reads_and_actions(cluster, console):
    port = console.port
    evil = f"attacker.example:{port}"
    for method, path, body in (("GET", "/api/topics", None), ("GET", "/", None),
                               ("POST", "/api/topic", {"topic": "Rebound"}),
                               ("POST", "/api/send", {"topic": "Rebound", "body": "x"})):
        status, answer = await exchange(port, request(method, path, evil, body, origin=f"http://{evil}"))
        assert status == 403, (path, answer)
        assert b"DNS rebinding" in answer
    assert "Rebound" not in await console.admin.fetch_all_topic_list()
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        status, answer = await exchange(port, request("GET", "/api/info", host))
        assert status == 200, (host, answer)
    status, _ = await exchange(port, b"GET /api/info HTTP/1.0\r\n\r\n")  # no Host at all
    assert status == 403


async def test_an_extra_name_is_answered_when_allowed(cluster):
    async with ConsoleServer(cluster.namesrv_addr, port=0, allowed_hosts=["console.lan"]) as console:
        status, _ = await exchange(console.port, request("GET", "/api/info", f"console.lan:{console.port}"))
        assert status == 200
        status, _ = await exchange(console.port, request("GET", "/api/info", f"other.lan:{console.port}"))
        assert status == 403


async def closed_by_console(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), BOUND)


async def test_connections_that_finish_no_request_are_closed(cluster):
    async with ConsoleServer(cluster.namesrv_addr, port=0, idle_timeout=0.05) as console:
        port = console.port
        stalls = [b"", b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                  b"POST /api/topic HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{"]
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in stalls]
        for (_reader, writer), sent in zip(streams, stalls, strict=True):
            writer.write(sent)
        # The half-sent body may get a response before the close; the others nothing: each ends in EOF.
        for reader, _writer in streams:
            await closed_by_console(reader)
        # A keep-alive connection that answered a request is closed once it idles as long.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = await closed_by_console(reader)
        assert answer.startswith(b"HTTP/1.1 200")
        for _reader, w in [*streams, (reader, writer)]:
            w.close()
        assert console.connection_count == 0


async def test_connections_beyond_the_limit_are_refused_at_once(cluster, poll):
    async with ConsoleServer(cluster.namesrv_addr, port=0, max_connections=2, idle_timeout=600) as console:
        port = console.port
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await poll(lambda: console.connection_count == 2)
        status, body = await exchange(port, request("GET", "/api/info", "127.0.0.1"))
        assert status == 503 and b"2 connections" in body
        held[0][1].close()
        await poll(lambda: console.connection_count == 1)
        status, _ = await exchange(port, request("GET", "/api/info", "127.0.0.1"))
        assert status == 200
        held[1][1].close()


async def test_a_client_that_never_reads_its_answers_is_cut_off(cluster, poll):
    async with ConsoleServer(cluster.namesrv_addr, port=0, idle_timeout=0.2, max_connections=1) as console:
        # The page of a topic of 1024 queues: about 100 KB of JSON, written through the transport on either loop (a
        # static file goes by sendfile on asyncio's, past the buffer whose bytes the guard counts).
        await console.admin.create_topic(TopicConfig("WideT", read_queue_nums=1024, write_queue_nums=1024),
                                         cluster="DefaultCluster")
        loop = asyncio.get_running_loop()
        # Complete requests, pipelined, on a socket with a small receive buffer that is never read: the answers fill
        # both sides' buffers, and then the console's handler waits to write the rest.
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.setblocking(False)
        try:
            await loop.sock_connect(stuck, ("127.0.0.1", console.port))
            await loop.sock_sendall(stuck, b"GET /api/topic?topic=WideT HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 200)
            await poll(lambda: console.connection_count == 0, timeout=60)
            status, body = await exchange(console.port, request("GET", "/api/topic?topic=WideT", "127.0.0.1"))
            assert status == 200 and len(json.loads(body)["queues"]) == 1024
        finally:
            stuck.close()
