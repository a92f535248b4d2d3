"""RocketMQ's native frames and pocketmq's msgpack frames on the same ports, over real sockets: a real name server
and broker (EmbeddedCluster), and a bare RemotingServer for the server-initiated requests."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, RequestCode, ResponseCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import decode_native_frames, encode_native
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel, parse_address

GUARD = 5.0
NATIVE_TYPES = [SerializeType.JSON, SerializeType.ROCKETMQ]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path / "store") as c:
        yield c


class NativePeer:
    """A raw socket speaking RocketMQ's native frames, as a Java client would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.opaque = 0

    @classmethod
    async def connect(cls, addr: str) -> NativePeer:
        return cls(*await asyncio.open_connection(*parse_address(addr)))

    def send(
        self, code: int, ext: dict[str, object], serialize_type: SerializeType, flag: int = 0, version: int = 409
    ) -> int:
        self.opaque += 1
        cmd = RemotingCommand(code, language=int(LanguageCode.JAVA), version=version, opaque=self.opaque, flag=flag,
                              ext_fields=ext, serialize_type=serialize_type)
        self.writer.write(encode_native(cmd))
        return self.opaque

    async def read(self) -> tuple[int, RemotingCommand]:
        """The next frame: its serialize-type byte and the command."""
        prefix = await asyncio.wait_for(self.reader.readexactly(4), GUARD)
        (n,) = struct.unpack(">I", prefix)
        data = prefix + await asyncio.wait_for(self.reader.readexactly(n), GUARD)
        (cmd,) = decode_native_frames(data)
        return data[4], cmd

    async def call(
        self, code: int, ext: dict[str, object], serialize_type: SerializeType, version: int = 409
    ) -> RemotingCommand:
        opaque = self.send(code, ext, serialize_type, version=version)
        type_byte, response = await self.read()
        assert type_byte == serialize_type  # answered in the request's form
        assert response.opaque == opaque and response.flag & FLAG_RESPONSE
        return response

    async def closed_by_peer(self) -> bool:
        return await asyncio.wait_for(self.reader.read(), GUARD) == b""

    def close(self) -> None:
        self.writer.close()


@pytest.mark.parametrize("serialize_type", NATIVE_TYPES)
async def test_name_server_answers_native_frames_in_their_form(
    cluster: EmbeddedCluster, serialize_type: SerializeType
) -> None:
    peer = await NativePeer.connect(cluster.namesrv_addr)
    try:
        missing = await peer.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchTopic"}, serialize_type)
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        assert missing.remark is not None and "NoSuchTopic" in missing.remark
        unknown = await peer.call(9999, {}, serialize_type)
        assert (unknown.code, unknown.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                  " request type 9999 not supported")
    finally:
        peer.close()


@pytest.mark.parametrize(
    ("version", "ext", "brokers_addrs"),
    [
        pytest.param(63, {}, b'"brokerAddrs":{0:"', id="C++ (63): fastjson's bare key"),
        pytest.param(121, {}, b'"brokerAddrs":{0:"', id="ali-ons (121): fastjson's bare key"),
        pytest.param(121, {"acceptStandardJsonOnly": "true"}, b'"brokerAddrs":{"0":"', id="asked for standard"),
        pytest.param(409, {}, b'"brokerAddrs":{"0":"', id="4.9.8 (409): standard JSON"),
    ],
)
async def test_route_bodies_are_in_the_dialect_the_client_reads(
    cluster: EmbeddedCluster, version: int, ext: dict[str, object], brokers_addrs: bytes
) -> None:
    assert await cluster.wait_routed("TBW102")
    peer = await NativePeer.connect(cluster.namesrv_addr)
    try:
        resp = await peer.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102", **ext}, SerializeType.JSON,
                               version=version)
        assert resp.code == ResponseCode.SUCCESS and resp.body is not None
        assert brokers_addrs + cluster.broker_addr.encode() in resp.body
        assert b'"queueDatas":[{' in resp.body and b'"topicSysFlag":' in resp.body
    finally:
        peer.close()


@pytest.mark.parametrize("serialize_type", NATIVE_TYPES)
async def test_broker_answers_native_frames_in_their_form(
    cluster: EmbeddedCluster, serialize_type: SerializeType
) -> None:
    peer = await NativePeer.connect(cluster.broker_addr)
    try:
        # Java ext values are text; the answer's are too.
        resp = await peer.call(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"}, serialize_type)
        assert resp.code == ResponseCode.SUCCESS
        assert resp.ext_fields == {"offset": "0"}
        unknown = await peer.call(9999, {}, serialize_type)
        assert (unknown.code, unknown.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                  " request type 9999 not supported")
        # A one-way request gets no answer, not even for an unknown code: the next answer is the next request's.
        peer.send(9999, {}, serialize_type, flag=FLAG_ONEWAY)
        assert (await peer.call(9998, {}, serialize_type)).remark == " request type 9998 not supported"
    finally:
        peer.close()


async def test_msgpack_and_native_connections_are_served_at_once(cluster: EmbeddedCluster) -> None:
    native = await NativePeer.connect(cluster.broker_addr)
    client = RemotingClient()
    try:
        for i in range(3):
            ours = await client.invoke(
                cluster.broker_addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102",
                                                                                          "queueId": i}), GUARD)
            assert ours.serialize_type == SerializeType.MSGPACK and ours.ext_fields == {"offset": 0}
            theirs = await native.call(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": str(i)},
                                       SerializeType.JSON)
            assert theirs.ext_fields == {"offset": "0"}
    finally:
        native.close()
        await client.close()


@pytest.mark.parametrize(
    "bad_frame",
    [
        pytest.param(struct.pack(">II", 10, 6) + b'{"code', id="json header that does not parse"),
        pytest.param(struct.pack(">II", 6, 0x02000002) + b"{}", id="serialize type 2"),
        pytest.param(struct.pack(">I", 2) + b"\x81\xa0", id="msgpack frame on a native connection"),
    ],
)
async def test_a_malformed_frame_closes_only_its_native_connection(cluster: EmbeddedCluster, bad_frame: bytes) -> None:
    bad = await NativePeer.connect(cluster.broker_addr)
    good = await NativePeer.connect(cluster.broker_addr)
    try:
        await bad.call(9999, {}, SerializeType.JSON)
        await good.call(9999, {}, SerializeType.ROCKETMQ)
        bad.writer.write(bad_frame)
        assert await bad.closed_by_peer()
        assert (await good.call(9999, {}, SerializeType.ROCKETMQ)).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        bad.close()
        good.close()


async def test_a_native_frame_on_a_msgpack_connection_closes_it(cluster: EmbeddedCluster) -> None:
    reader, writer = await asyncio.open_connection(*parse_address(cluster.broker_addr))
    client = RemotingClient()
    try:
        writer.write(encode(RemotingCommand.request(9999)))
        prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
        (answer,) = decode_frames(prefix + await asyncio.wait_for(reader.readexactly(int.from_bytes(prefix)), GUARD))
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        writer.write(encode_native(RemotingCommand(9999, opaque=5, serialize_type=SerializeType.JSON)))
        assert await asyncio.wait_for(reader.read(), GUARD) == b""
        resp = await client.invoke(cluster.broker_addr, RemotingCommand.request(9999), GUARD)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        writer.close()
        await client.close()


# ---- server-initiated requests go out in the connection's protocol ------------------------------------------

NOTIFY = int(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
SUBSCRIBE = 1001


class Notifier:
    def __init__(self) -> None:
        self.channels: list[Channel] = []

    def install(self, server: RemotingServer) -> None:
        server.register_processor(SUBSCRIBE, self.subscribe)

    async def subscribe(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.channels.append(channel)
        return RemotingCommand.response_to(request)


@pytest.fixture
def app() -> Notifier:
    return Notifier()


@pytest.mark.parametrize("serialize_type", NATIVE_TYPES)
async def test_server_initiated_requests_use_the_native_codec_json_by_default(
    server: RemotingServer, app: Notifier, serialize_type: SerializeType, poll: Callable[..., Any]
) -> None:
    peer = await NativePeer.connect(server.address)
    try:
        await peer.call(SUBSCRIBE, {}, serialize_type)
        (channel,) = app.channels
        await channel.invoke_oneway(RemotingCommand.request(NOTIFY, {"consumerGroup": "g"}))
        type_byte, notify = await peer.read()
        # As Java's server: a request it starts itself takes its configured type, JSON.
        assert type_byte == SerializeType.JSON
        assert (notify.code, notify.ext_fields, notify.flag & FLAG_ONEWAY) == (NOTIFY, {"consumerGroup": "g"},
                                                                            FLAG_ONEWAY)
    finally:
        peer.close()


# ---- every request the real clients were seen sending is understood ---------------------------------------

VECTORS = Path(__file__).parent / "vectors"
_NAMESRV_CODES = {int(RequestCode.GET_ROUTEINFO_BY_TOPIC)}


def _recorded_requests() -> list[Any]:
    return [pytest.param(p.name, id=p.stem) for p in sorted(VECTORS.glob("*.bin"))]


@pytest.mark.parametrize("name", _recorded_requests())
async def test_every_recorded_client_request_is_understood(cluster: EmbeddedCluster, name: str) -> None:
    """The frames the C++ client and ali-ons sent (tests/remoting/vectors) replayed byte for byte: each gets an
    answer in JSON with its opaque, and none is refused as a bad header or body, nor as an unknown code."""
    data = (VECTORS / name).read_bytes()
    (request,) = decode_native_frames(data)
    addr = cluster.namesrv_addr if request.code in _NAMESRV_CODES else cluster.broker_addr
    peer = await NativePeer.connect(addr)
    try:
        peer.writer.write(data)
        type_byte, resp = await peer.read()
        assert type_byte == SerializeType.JSON and resp.opaque == request.opaque and resp.flag & FLAG_RESPONSE
        assert resp.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert not (resp.remark or "").startswith("bad request"), resp.remark
        assert all(isinstance(v, str) for v in resp.ext_fields.values())  # Java's HashMap<String,String>
        if request.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= set(resp.ext_fields)
            assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
        if request.code == RequestCode.PULL_MESSAGE and resp.code != ResponseCode.TOPIC_NOT_EXIST:
            assert {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"} <= set(resp.ext_fields)
    finally:
        peer.close()
