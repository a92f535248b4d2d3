"""FrameDecoder / encode: bytes in, commands out."""

from __future__ import annotations

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting.codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, decode_frames, encode
from pocketmq.remoting.codes import FLAG_ONEWAY, FLAG_RESPONSE, VERSION, LanguageCode, RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import FrameTooLarge, MalformedFrame


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def raw(obj: object) -> bytes:
    return frame(msgpack.packb(obj, use_bin_type=True))


def sample(i: int = 1) -> RemotingCommand:
    return RemotingCommand(
        code=RequestCode.SEND_MESSAGE_V2,
        opaque=i,
        remark="hello",
        ext_fields={"a": "group", "e": i, "k": True, "ratio": 0.5},
        body=b"body-%d" % i,
    )


def test_frame_layout_is_length_prefix_plus_msgpack_map() -> None:
    cmd = sample(7)
    data = encode(cmd)
    (length,) = struct.unpack(">I", data[:4])
    assert length == len(data) - 4
    m = msgpack.unpackb(data[4:], raw=False)
    assert m == {
        "code": 310,
        "language": LanguageCode.PYTHON,
        "version": VERSION,
        "opaque": 7,
        "flag": 0,
        "remark": "hello",
        "extFields": {"a": "group", "e": 7, "k": True, "ratio": 0.5},
        "body": b"body-7",
    }
    assert type(m["body"]) is bytes  # msgpack bin, not str


def test_empty_optional_parts_are_left_out() -> None:
    cmd = RemotingCommand(code=11, opaque=3, ext_fields={"x": None})
    m = msgpack.unpackb(encode(cmd)[4:], raw=False)
    assert set(m) == {"code", "language", "version", "opaque", "flag"}


def test_round_trip_keeps_every_field() -> None:
    cmd = RemotingCommand.response(17, remark="no route", ext_fields={"q": 1}, body=b"", opaque=99)
    (out,) = decode_frames(encode(cmd))
    assert out == cmd
    assert out.is_response and not out.is_oneway
    assert out.body == b""


def test_large_body_round_trip_uses_each_bin_width() -> None:
    for size in (0, 255, 256, 65535, 65536, 300_000):
        cmd = RemotingCommand(
            code=10, opaque=size, body=bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        )
        (out,) = decode_frames(encode(cmd))
        assert out.body == cmd.body


def test_every_split_of_a_stream_yields_the_same_commands() -> None:
    cmds = [sample(i) for i in range(3)]
    stream = b"".join(encode(c) for c in cmds)
    for cut in range(len(stream) + 1):
        d = FrameDecoder()
        d.receive_data(stream[:cut])
        got = list(d)
        d.receive_data(stream[cut:])
        got += list(d)
        assert got == cmds, cut
        assert d.buffered == 0


def test_one_byte_at_a_time() -> None:
    cmds = [sample(i) for i in range(5)]
    stream = b"".join(encode(c) for c in cmds)
    d = FrameDecoder()
    got = []
    for i in range(len(stream)):
        d.receive_data(stream[i : i + 1])
        while (cmd := d.next_event()) is not None:
            got.append(cmd)
    assert got == cmds


def test_many_frames_in_one_chunk_come_out_in_order() -> None:
    cmds = [RemotingCommand(code=34, opaque=i, ext_fields={"i": i}) for i in range(2000)]
    d = FrameDecoder()
    d.receive_data(b"".join(encode(c) for c in cmds))
    assert [c.opaque for c in d] == list(range(2000))
    assert d.next_event() is None and d.buffered == 0


def test_partial_frame_waits_for_more_data() -> None:
    data = encode(sample())
    d = FrameDecoder()
    d.receive_data(data[:3])
    assert d.next_event() is None
    d.receive_data(data[3:-1])
    assert d.next_event() is None
    assert d.buffered == len(data) - 1
    d.receive_data(data[-1:])
    assert d.next_event() == sample()


def test_oversized_length_is_fatal_as_soon_as_the_prefix_arrives() -> None:
    d = FrameDecoder(max_frame_size=1024)
    d.receive_data(struct.pack(">I", 1025))
    with pytest.raises(FrameTooLarge) as e:
        d.next_event()
    assert (e.value.length, e.value.max_frame_size) == (1025, 1024)
    d.receive_data(encode(sample()))
    with pytest.raises(FrameTooLarge):  # the stream cannot be trusted any more
        d.next_event()


def test_default_limit_is_16_mib_and_inclusive() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 16_777_216
    cmd = RemotingCommand(code=10, opaque=1, body=b"")
    size = len(encode(cmd)) - 4
    d = FrameDecoder(max_frame_size=size)
    d.receive_data(encode(cmd))
    assert d.next_event() == cmd
    with pytest.raises(FrameTooLarge):
        encode(RemotingCommand(code=10, opaque=1, body=b"x"), max_frame_size=size)


@pytest.mark.parametrize(
    "payload",
    [b"\xc1", b"", b"\x92\x01\x02", msgpack.packb(5), msgpack.packb({"code": 1, "opaque": 1}) + b"\x00"],
    ids=["reserved-byte", "empty", "array", "int", "trailing-bytes"],
)
def test_unreadable_payload_is_malformed_without_opaque(payload: bytes) -> None:
    d = FrameDecoder()
    d.receive_data(frame(payload))
    with pytest.raises(MalformedFrame) as e:
        d.next_event()
    assert e.value.opaque is None


@pytest.mark.parametrize(
    "fields",
    [
        {"code": "10"},
        {"code": True},
        {"code": None},
        {"flag": "0"},
        {"language": "PYTHON"},
        {"version": 1.5},
        {"remark": 12},
        {"body": "text, not bin"},
        {"extFields": ["a", 1]},
        {"extFields": {"a": [1, 2]}},
        {"extFields": {"a": {"nested": 1}}},
        {"extFields": {1: "int key"}},
        {"extFields": {"a": b"bytes"}},
    ],
)
def test_wrong_types_are_malformed_and_keep_the_opaque(fields: dict[str, object]) -> None:
    obj = {"code": 10, "language": 3, "version": 409, "opaque": 4242, "flag": 0, **fields}
    d = FrameDecoder()
    d.receive_data(raw(obj))
    with pytest.raises(MalformedFrame) as e:
        d.next_event()
    assert e.value.opaque == 4242
    if "flag" not in fields:
        assert e.value.flag == 0


def test_missing_opaque_is_malformed_without_opaque() -> None:
    with pytest.raises(MalformedFrame) as e:
        decode_frames(raw({"code": 10, "flag": 0}))
    assert e.value.opaque is None


def test_malformed_frame_is_consumed_and_the_stream_stays_in_sync() -> None:
    d = FrameDecoder()
    d.receive_data(raw({"code": "bad", "opaque": 1}) + encode(sample(2)))
    with pytest.raises(MalformedFrame):
        d.next_event()
    assert d.next_event() == sample(2)


def test_lenient_decode_defaults_ignores_unknown_keys_and_drops_nil_ext_values() -> None:
    (cmd,) = decode_frames(
        raw({"code": 105, "opaque": 9, "extFields": {"topic": "T", "x": None}, "future": [1]})
    )
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.version) == (105, 9, 0, 0)
    assert cmd.language == LanguageCode.OTHER
    assert cmd.ext_fields == {"topic": "T"}
    assert cmd.remark is None and cmd.body is None


@pytest.mark.parametrize(
    "cmd",
    [
        RemotingCommand(code=10, ext_fields={"a": [1]}),
        RemotingCommand(code=10, ext_fields={"a": b"x"}),
        RemotingCommand(code=10, ext_fields={1: "x"}),  # type: ignore[dict-item]
        RemotingCommand(code=10, body="str body"),  # type: ignore[arg-type]
        RemotingCommand(code=10, remark=5),  # type: ignore[arg-type]
    ],
)
def test_encode_rejects_values_the_peer_would_refuse(cmd: RemotingCommand) -> None:
    with pytest.raises(TypeError):
        encode(cmd)


def test_request_constructors_and_flags() -> None:
    a = RemotingCommand.request(RequestCode.HEART_BEAT, {"x": 1, "y": None})
    b = RemotingCommand.request(RequestCode.HEART_BEAT, oneway=True)
    assert a.opaque != b.opaque and a.opaque > 0
    assert a.ext_fields == {"x": 1}
    assert not a.is_response and not a.is_oneway
    assert b.is_oneway and b.flag == FLAG_ONEWAY
    resp = RemotingCommand.response_to(a, 0, remark="ok")
    assert resp.opaque == a.opaque and resp.flag == FLAG_RESPONSE and resp.is_response
    assert "body=None" in repr(resp)
    assert "<3 bytes>" in repr(RemotingCommand(code=1, body=b"abc"))


scalars = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.booleans(),
    st.floats(allow_nan=False),
)
int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
commands = st.builds(
    RemotingCommand,
    code=int32,
    language=st.integers(min_value=0, max_value=12),
    version=st.integers(min_value=0, max_value=2**15),
    opaque=int32,
    flag=st.integers(min_value=0, max_value=3),
    remark=st.none() | st.text(max_size=40),
    ext_fields=st.dictionaries(st.text(max_size=12), scalars, max_size=8),
    body=st.none() | st.binary(max_size=600),
)


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(commands, min_size=1, max_size=5), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_hypothesis_round_trip_under_any_chunking(cmds: list[RemotingCommand], cuts: list[int]) -> None:
    stream = b"".join(encode(c) for c in cmds)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    d = FrameDecoder()
    got = []
    for start, end in zip(points, points[1:], strict=False):
        d.receive_data(stream[start:end])
        got.extend(d)
    assert got == cmds
