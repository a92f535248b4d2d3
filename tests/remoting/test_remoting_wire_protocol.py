"""One port, two protocols: detect_protocol and SniffingDecoder."""

from __future__ import annotations

import ast
import struct
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import LanguageCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import FrameTooLarge, MalformedFrame
from pocketmq.remoting.native_codec import NativeFrameDecoder, encode_native
from pocketmq.remoting.wire_protocol import (
    Decision,
    SniffingDecoder,
    WireProtocol,
    decoder_for,
    detect_protocol,
    encoder_for,
)


def head(length: int, byte4: int) -> bytes:
    return struct.pack(">IB", length, byte4)


def sample(serialize_type: SerializeType = SerializeType.MSGPACK, opaque: int = 1) -> RemotingCommand:
    return RemotingCommand(code=105, language=LanguageCode.JAVA, opaque=opaque, ext_fields={"topic": "T"},
                           body=b"\x00body", serialize_type=serialize_type)  # fmt: skip


@pytest.mark.parametrize("n", range(5))
def test_fewer_than_five_bytes_need_more(n: int) -> None:
    detection = detect_protocol(head(40, 0x85)[:n])
    assert detection.decision is Decision.NEED_MORE and detection.protocol is None
    assert f"{n} of the 5" in detection.reason


@pytest.mark.parametrize("marker", [*range(0x80, 0x90), 0xDE, 0xDF])
def test_msgpack_map_markers(marker: int) -> None:
    detection = detect_protocol(head(1, marker))
    assert detection.decision is Decision.MSGPACK and detection.protocol is WireProtocol.MSGPACK
    assert f"0x{marker:02X}" in detection.reason


@pytest.mark.parametrize(("byte4", "name"), [(0, "JSON"), (1, "ROCKETMQ")])
def test_native_serialize_types(byte4: int, name: str) -> None:
    detection = detect_protocol(head(4, byte4) + b"\x00\x00\x00")
    assert detection.decision is Decision.NATIVE and detection.protocol is WireProtocol.NATIVE
    assert name in detection.reason


@pytest.mark.parametrize(
    ("first", "fragment"),
    [
        (head(0, 0x85), "empty"),  # byte 4 would belong to the next frame
        (b"\x00\x00\x00\x00", "empty"),  # decided at once: the peer may never send a fifth byte
        (head(3, 0x00), "no room for the native header word"),
        (head(2, 0x01), "no room for the native header word"),
        (head(10, 0x02), "0x02"),  # no such serialize type
        (head(10, 0x90), "0x90"),  # a msgpack array, not a map
        (head(10, 0xC0), "0xC0"),
        (head(10, 0x7F), "0x7F"),
        (b"GET / HTTP/1.1\r\n", "0x2F"),
        (b"\x16\x03\x01\x02\x00\x01", "0x00"),  # TLS: judged native by byte 4... (see the next test)
    ],
)
def test_neither(first: bytes, fragment: str) -> None:
    detection = detect_protocol(first)
    if first.startswith(b"\x16\x03"):
        assert detection.decision is Decision.NATIVE  # the native decoder then refuses its length (below)
        return
    assert detection.decision is Decision.NEITHER and detection.protocol is None
    assert fragment in detection.reason


def test_a_tls_hello_judged_native_is_refused_by_its_length() -> None:
    decoder = SniffingDecoder()
    decoder.receive_data(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    with pytest.raises(FrameTooLarge):
        decoder.next_event()


commands = st.builds(
    RemotingCommand,
    code=st.integers(0, 400),
    language=st.sampled_from(list(LanguageCode)),
    opaque=st.integers(0, 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | st.text(max_size=10),
    ext_fields=st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(-5, 5), max_size=3),
    body=st.none() | st.binary(max_size=20),
)


@settings(max_examples=200, deadline=None)
@given(cmd=commands, serialize_type=st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]))
def test_every_real_frame_is_recognised(cmd: RemotingCommand, serialize_type: SerializeType) -> None:
    assert detect_protocol(encode(cmd)).decision is Decision.MSGPACK
    cmd.serialize_type = serialize_type
    assert detect_protocol(encode_native(cmd)).decision is Decision.NATIVE


def test_a_msgpack_map_of_more_than_15_entries_is_still_msgpack() -> None:
    payload = msgpack.packb({str(i): i for i in range(16)})
    assert payload[0] == 0xDE
    assert detect_protocol(struct.pack(">I", len(payload)) + payload).protocol is WireProtocol.MSGPACK


@pytest.mark.parametrize(
    ("protocol", "frames"),
    [
        (WireProtocol.MSGPACK, [encode(sample(opaque=i)) for i in range(3)]),
        (WireProtocol.NATIVE, [encode_native(sample(st_, i)) for i, st_ in enumerate(
            [SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.JSON])]),
    ],
)  # fmt: skip
def test_sniffing_decoder_picks_the_codec_byte_by_byte(protocol: WireProtocol, frames: list[bytes]) -> None:
    decoder = SniffingDecoder()
    got = []
    data = b"".join(frames)
    for i in range(len(data)):
        decoder.receive_data(data[i : i + 1])
        got += list(decoder)
        if i < 4:
            assert decoder.protocol is None and decoder.buffered == i + 1
    assert decoder.protocol is protocol and decoder.buffered == 0
    assert [c.opaque for c in got] == [0, 1, 2]
    assert isinstance(decoder.decoder, FrameDecoder if protocol is WireProtocol.MSGPACK else NativeFrameDecoder)
    assert decoder.encode is encoder_for(protocol)
    # What the connection's encoder writes for a response, the connection's decoder reads.
    response = RemotingCommand.response_to(got[1], body=b"ok")
    again = decoder_for(protocol)
    again.receive_data(decoder.encode(response, None))
    echoed = again.next_event()
    assert echoed is not None and echoed.body == b"ok" and echoed.serialize_type is got[1].serialize_type


def test_unknown_first_bytes_are_malformed_for_good() -> None:
    decoder = SniffingDecoder()
    decoder.receive_data(b"GET / HTTP/1.1\r\n\r\n")
    for _ in range(2):
        with pytest.raises(MalformedFrame, match="unknown protocol: byte 4 is 0x2F") as e:
            decoder.next_event()
        assert e.value.opaque is None
    assert decoder.protocol is None


def test_the_other_protocol_later_on_the_connection_is_malformed() -> None:
    native = SniffingDecoder()
    native.receive_data(encode_native(sample(SerializeType.JSON)) + encode(sample()))
    assert native.next_event() is not None
    marker = encode(sample())[4]  # the msgpack frame's fixmap marker
    with pytest.raises(MalformedFrame, match=f"serialize type {marker} is neither"):
        native.next_event()
    packed = SniffingDecoder()
    packed.receive_data(encode(sample()) + encode_native(sample(SerializeType.JSON)))
    assert packed.next_event() is not None
    with pytest.raises(MalformedFrame, match="msgpack"):
        packed.next_event()


# The new remoting modules belong to the sans-IO core (tests/test_architecture.py's REMOTING_CORE names the
# older ones): they import no event loop and no sockets, nor the asyncio shell of remoting.
SANS_IO_MODULES = ("fastjson", "native_codec", "remoting_serializable", "remoting_serializable_reader",
                   "rocketmq_serializable", "wire_protocol")
FORBIDDEN = {"asyncio", "socket", "selectors", "ssl", "uvloop", "transport", "channel", "server", "client",
             "busy_poll", "tasks", "event_loop"}  # fmt: skip


@pytest.mark.parametrize("module", SANS_IO_MODULES)
def test_the_native_codec_is_sans_io(module: str) -> None:
    path = Path(__file__).resolve().parents[2] / "pocketmq" / "remoting" / f"{module}.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(part for alias in node.names for part in alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            names.update((node.module or "").split("."))
            names.update(alias.name for alias in node.names)
    assert names & FORBIDDEN == set()
