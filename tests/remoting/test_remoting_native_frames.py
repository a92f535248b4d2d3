"""NativeFrameDecoder on a stream (native-protocol.md §1): the same commands at every split point and byte by byte,
malformed frames reported with the stream kept in sync, the frame size limits, and what the encoder refuses that a
Java peer would drop."""

from __future__ import annotations

import struct

import pytest
from native_frame_vectors import JAVA_JSON_HEADER, JSON, ROCKETMQ, ROCKETMQ_FRAME, native_frame, topic_request

from pocketmq.remoting.codes import FLAG_RESPONSE, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import FrameError, FrameTooLarge, MalformedFrame
from pocketmq.remoting.native_codec import NativeFrameDecoder, encode_native
from pocketmq.remoting.remoting_serializable import (
    decode_json_header,
    decode_json_header_fast,
    encode_json_header,
)
from pocketmq.remoting.rocketmq_serializable import decode_rocketmq_header, encode_rocketmq_header

# --- incremental decoding --------------------------------------------------------------------------------------


def stream() -> tuple[bytes, list[RemotingCommand]]:
    cmds = [
        topic_request(JSON),
        RemotingCommand(code=11, opaque=8, remark="é", ext_fields={"k": "v"}, body=b"\x00\x01body",
                        serialize_type=ROCKETMQ),  # fmt: skip
        RemotingCommand(code=0, opaque=9, flag=FLAG_RESPONSE, body=b"x" * 40, serialize_type=JSON),
    ]
    return b"".join(encode_native(c) for c in cmds), cmds


def test_every_split_point_decodes_the_same_commands() -> None:
    data, cmds = stream()
    for cut in range(len(data) + 1):
        decoder = NativeFrameDecoder()
        decoder.receive_data(data[:cut])
        got = list(decoder)
        decoder.receive_data(data[cut:])
        got += list(decoder)
        assert got == cmds, cut
        assert decoder.buffered == 0


def test_byte_by_byte() -> None:
    data, cmds = stream()
    decoder = NativeFrameDecoder()
    got = []
    for i in range(len(data)):
        decoder.receive_data(data[i : i + 1])
        got += list(decoder)
    assert got == cmds


# --- malformed frames ------------------------------------------------------------------------------------------


def good() -> bytes:
    return encode_native(RemotingCommand(code=34, opaque=99, serialize_type=JSON))


def binary_header(remark_len: int = 0, remark: bytes = b"", ext: bytes = b"", ext_len: int | None = None) -> bytes:
    fixed = struct.pack(">hBhii", 34, 0, 409, 5, 0)  # code, language, version, opaque 5, flag
    ext_length = struct.pack(">i", len(ext) if ext_len is None else ext_len)
    return fixed + struct.pack(">i", remark_len) + remark + ext_length + ext


@pytest.mark.parametrize(
    ("frame", "fragment", "opaque"),
    [
        (native_frame(b'{"code":1,"opaque":1}', serialize_type=2), "serialize type 2", None),
        (native_frame(b"{}", serialize_type=0x8A), "serialize type 138", None),
        (struct.pack(">II", 4 + 2, 40) + b"{}", "header length 40 runs past", None),
        (struct.pack(">I", 3) + b"\x00\x00\x00", "no room for its header word", None),
        (struct.pack(">I", 0), "no room for its header word", None),
        (native_frame(b'{"code":1,"opaque":1', ), "undecodable JSON header", None),
        (native_frame(b""), "undecodable JSON header", None),
        (native_frame(b"\xff\xfe"), "undecodable JSON header", None),
        (native_frame(b"[1,2]"), "not an object", None),
        (native_frame(b'{"code":1,"opaque":[4]}'), "'opaque'", None),
        (native_frame(b'{"code":1,"opaque":4,"flag":"x"}'), "'flag'", 4),
        (native_frame(b'{"code":2147483648,"opaque":4}'), "'code'", 4),
        (native_frame(b'{"code":1,"opaque":4,"language":[0]}'), "'language'", 4),
        (native_frame(b'{"code":1,"opaque":4,"language":99}'), "'language'", 4),
        (native_frame(b'{"code":1,"opaque":4,"body":true}'), "'body'", 4),
        (native_frame(b'{"code":1,"opaque":4,"extFields":"x","extFields":{}}'), "'extFields'", 4),
        (native_frame(b'{"code":1,"opaque":4,"extFields":[1]}'), "'extFields'", 4),
        (native_frame(b"\x00\x22\x00\x01\x99\x00\x00\x00\x05", 1), "shorter than the minimum 21", 5),
        (native_frame(b"\x00\x22\x00", 1), "shorter than the minimum 21", None),
        (native_frame(binary_header(remark_len=100), 1), "remark length 100", 5),
        (native_frame(binary_header(remark_len=-1), 1), "remark length -1", 5),
        (native_frame(binary_header(ext_len=7), 1), "inside a key length", 5),
        (native_frame(binary_header(ext_len=22), 1), "ext fields length 22", 5),
        (native_frame(binary_header(ext=b"\x00"), 1), "inside a key length", 5),
        (native_frame(binary_header(ext=b"\x00\x09key"), 1), "ext key length 9", 5),
        (native_frame(binary_header(ext=b"\xff\xffkey"), 1), "ext key length -1", 5),
        (native_frame(binary_header(ext=b"\x00\x01k\x00\x00\x00\x09v"), 1), "ext value length 9", 5),
    ],
)
def test_malformed_frames_are_reported_and_the_stream_stays_in_sync(
    frame: bytes, fragment: str, opaque: int | None
) -> None:
    decoder = NativeFrameDecoder()
    decoder.receive_data(frame + good() + good()[:5])
    with pytest.raises(MalformedFrame, match=fragment) as e:
        decoder.next_event()
    assert e.value.opaque == opaque
    # The bad frame was consumed: the next one decodes, and the partial one after it waits (the receive buffer
    # can be trimmed: no view of it outlived the error).
    cmd = decoder.next_event()
    assert cmd is not None and cmd.opaque == 99
    assert decoder.next_event() is None
    assert decoder.buffered == 5


def test_an_oversized_length_is_fatal() -> None:
    decoder = NativeFrameDecoder(max_frame_size=1024)
    decoder.receive_data(struct.pack(">I", 1025))
    with pytest.raises(FrameTooLarge) as e:
        decoder.next_event()
    assert isinstance(e.value, FrameError)
    decoder.receive_data(good())
    with pytest.raises(FrameTooLarge):  # the stream cannot be resynchronised
        decoder.next_event()
    limit = NativeFrameDecoder(max_frame_size=len(good()) - 4)  # a length equal to the limit is allowed
    limit.receive_data(good())
    assert limit.next_event() is not None


def test_the_default_limit_is_16_mib() -> None:
    decoder = NativeFrameDecoder()
    decoder.receive_data(struct.pack(">I", 16 * 1024 * 1024 + 1))
    with pytest.raises(FrameTooLarge):
        decoder.next_event()


def test_encoding_refuses_what_a_java_peer_would_drop() -> None:
    cmd = RemotingCommand(code=0, opaque=1, body=b"x" * 100, serialize_type=JSON)
    size = len(encode_native(cmd))
    assert len(encode_native(cmd, max_frame_size=size)) == size
    with pytest.raises(FrameTooLarge):  # Netty counts the length word too
        encode_native(cmd, max_frame_size=size - 1)
    with pytest.raises(ValueError, match="short"):
        encode_native(RemotingCommand(code=40000, opaque=1, serialize_type=ROCKETMQ))
    with pytest.raises(ValueError, match="byte"):
        encode_native(RemotingCommand(code=1, language=300, opaque=1, serialize_type=ROCKETMQ))
    with pytest.raises(ValueError, match="Java int"):
        encode_native(RemotingCommand(code=1, opaque=2**31, serialize_type=JSON))
    with pytest.raises(TypeError, match="'k'"):
        encode_native(RemotingCommand(code=1, opaque=1, ext_fields={"k": [1]}))
    with pytest.raises(TypeError, match="body"):
        encode_native(RemotingCommand(code=1, opaque=1, body="text"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a native serialize type"):
        encode_native(RemotingCommand(code=1, opaque=1), default_serialize_type=SerializeType.MSGPACK)


def test_header_functions_alone() -> None:
    cmd = topic_request(JSON)
    assert encode_json_header(cmd) == JAVA_JSON_HEADER
    assert decode_json_header(JAVA_JSON_HEADER) == cmd
    binary = encode_rocketmq_header(topic_request(ROCKETMQ))
    assert binary == ROCKETMQ_FRAME[8:]
    assert decode_rocketmq_header(binary) == topic_request(ROCKETMQ)
    # Bytes after the ext block are ignored, as Java ignores them.
    assert decode_rocketmq_header(binary + b"\x00\x01") == topic_request(ROCKETMQ)


_ODD = '{"code":%s,"extFields":%s,"flag":0,"language":"JAVA","opaque":%s,"version":409}'


@pytest.mark.parametrize("header", [
    _ODD % ("105", '{"topic":1e9999999999999999999}', "7"),  # past Decimal's exponent: InvalidOperation
    _ODD % ("1e9999999999999999999", '{"topic":"T"}', "7"),
    _ODD % ('"' + "1" * 5000 + '"', '{"topic":"T"}', "7"),  # past int()'s 4,300 digits: ValueError
    _ODD % ("105", '{"topic":"T"}', '"' + "1" * 5000 + '"'),
    _ODD % ("105", '{"a":' + "[" * 500 + "]" * 500 + "}", "7"),  # nested past what an ext value's text takes
])
def test_a_header_past_what_javas_numbers_or_nesting_take_is_a_malformed_frame(header: str) -> None:
    # Other exceptions got through: the transport logged a traceback for what is only bad input.
    data = header.encode()
    for decode in (decode_json_header, decode_json_header_fast):
        with pytest.raises(MalformedFrame, match="undecodable JSON header"):
            decode(data)
    decoder = NativeFrameDecoder()
    decoder.receive_data(struct.pack(">II", 4 + len(data), len(data)) + data)
    with pytest.raises(MalformedFrame):
        decoder.next_event()
