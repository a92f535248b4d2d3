"""pocketmq's msgpack frames: the fast writer and reader (``codec.encode``, ``codec._to_command``) agree with their
readable twins (``encode_reference``, ``to_command_reference``) on the same bytes, commands and errors, for what
clients send and for what no client should (odd types, None values, bodies of every size class, frame limits)."""

from __future__ import annotations

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting import codec
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import FrameTooLarge, MalformedFrame
from tests.remoting.test_remoting_fast_paths import commands

bodies = st.none() | st.binary(max_size=300) | st.sampled_from([b"", bytearray(b"ba"), b"x" * 70_000, "text", 7])
limits = st.none() | st.integers(0, 400)


def _outcome(fn, *args: object) -> object:
    try:
        return fn(*args)
    except (TypeError, ValueError, OverflowError, FrameTooLarge, MalformedFrame) as e:
        return type(e), str(e)


@settings(max_examples=400, deadline=None)
@given(cmd=commands(), body=bodies, limit=limits)
def test_the_frame_writer_agrees_with_its_reference(cmd: RemotingCommand, body: object, limit: int | None) -> None:
    cmd.body = body  # type: ignore[assignment]
    assert _outcome(codec.encode, cmd, limit) == _outcome(codec.encode_reference, cmd, limit)


scalars = st.one_of(st.integers(-(2**63), 2**64 - 1), st.booleans(), st.none(), st.floats(allow_nan=False),
                    st.text(max_size=5), st.binary(max_size=5))  # fmt: skip
keys = st.text(max_size=4) | st.integers(-(2**63), 2**63 - 1)  # what msgpack can pack as a map key
values = scalars | st.lists(scalars, max_size=2) | st.dictionaries(keys, scalars, max_size=2)
names = st.sampled_from(["code", "opaque", "flag", "language", "version", "remark", "body", "extFields", "other"])


@st.composite
def payloads(draw: st.DrawFn) -> object:
    """Mostly a frame's map with each field right, some fields of another type, missing or None."""
    if draw(st.integers(0, 20)) == 0:
        return draw(values)
    good = {"code": draw(st.integers(0, 400)), "opaque": draw(st.integers(0, 2**31)), "flag": draw(st.integers(0, 3)),
            "language": 6, "version": 1, "remark": draw(st.none() | st.text(max_size=5)),
            "body": draw(st.none() | st.binary(max_size=5)),
            "extFields": draw(st.dictionaries(keys, scalars, max_size=4))}  # fmt: skip
    for name in draw(st.lists(names, max_size=3)):
        if draw(st.booleans()):
            good.pop(name, None)
        else:
            good[name] = draw(values)
    return good


@settings(max_examples=400, deadline=None)
@given(obj=payloads())
def test_the_frame_reader_agrees_with_its_reference(obj: object) -> None:
    # Each gets its own copy of what msgpack would hand it (the fast reader drops None values in place).
    data = msgpack.packb(obj, use_bin_type=True)
    fast = _outcome(codec._to_command, msgpack.unpackb(data, raw=False, strict_map_key=False))
    assert fast == _outcome(codec.to_command_reference, msgpack.unpackb(data, raw=False, strict_map_key=False))


def test_a_written_frame_reads_back_through_both() -> None:
    cmd = RemotingCommand(code=10, opaque=5, remark="r", ext_fields={"a": "1", "b": 2, "gone": None}, body=b"x")
    frame = codec.encode(cmd)
    assert frame == codec.encode_reference(cmd)
    payload = msgpack.unpackb(frame[4:], raw=False)
    read = codec.to_command_reference(payload)
    assert (read.code, read.opaque, read.remark, read.ext_fields, read.body) == (10, 5, "r", {"a": "1", "b": 2}, b"x")
