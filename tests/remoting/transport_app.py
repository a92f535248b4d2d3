"""The processors and raw-socket helpers test_remoting_transport.py and test_remoting_transport_connections.py
serve and speak with, and their ``app`` and ``server_options`` fixtures (named fixtures those two import: other
modules here have an ``app`` of their own, so not in conftest.py)."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel, parse_address

ECHO, BOOM, PARK, RECORD, GATE, BIG, WRONG = 1001, 1002, 1003, 1004, 1005, 1006, 1007
GUARD = 5.0  # upper bound for things that should happen promptly; a hang fails instead of blocking CI


@pytest.fixture(name="app")
def app_fixture() -> App:
    return App()


@pytest.fixture(name="server_options")
def small_frames_fixture() -> dict[str, Any]:
    return {"max_frame_size": 8192}  # small, so the size limits are cheap to hit


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
