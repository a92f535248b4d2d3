"""Bounded inflation (common.compression) and what the record decoders do with a body that does not inflate."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import decode_all, encode, pack_host
from pocketmq.common.codec import BodyInflateError, decode
from pocketmq.common.compression import DEFAULT_INFLATE_LIMIT, InflateError, inflate
from pocketmq.common.constants import COMPRESSED_FLAG
from pocketmq.remoting.codec import DEFAULT_MAX_FRAME_SIZE

HOST = pack_host("127.0.0.1", 10911)


def zeros_deflated(size: int) -> bytes:
    """``size`` zero bytes deflated at level 9, made a MiB at a time (the test never holds ``size`` bytes)."""
    deflater = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [deflater.compress(chunk) for _ in range(size >> 20)]
    return b"".join([*parts, deflater.compress(bytes(size & ((1 << 20) - 1))), deflater.flush()])


def test_the_default_limit_is_the_frame_limit() -> None:
    assert DEFAULT_INFLATE_LIMIT == DEFAULT_MAX_FRAME_SIZE


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=5000), st.integers(0, 9))
def test_property_inflate_agrees_with_zlib_decompress_within_the_limit(data: bytes, level: int) -> None:
    deflated = zlib.compress(data, level)
    assert inflate(deflated) == zlib.decompress(deflated) == data
    assert inflate(deflated, len(data)) == data  # exactly at the limit is allowed
    if data:
        with pytest.raises(InflateError, match="inflates to more than"):
            inflate(deflated, len(data) - 1)


def test_a_bomb_stops_at_the_limit() -> None:
    bomb = zeros_deflated(64 << 20)  # 64 MiB of zeros in ~64 KB
    assert len(bomb) < 100_000
    with pytest.raises(InflateError, match=f"inflates to more than {1 << 20} bytes"):
        inflate(bomb, 1 << 20)


def test_bad_and_truncated_data_are_refused_and_trailing_bytes_ignored() -> None:
    with pytest.raises(InflateError, match="not zlib data"):
        inflate(b"not deflated")
    with pytest.raises(InflateError, match="truncated"):
        inflate(zlib.compress(b"x" * 1000)[:-6])
    assert inflate(zlib.compress(b"abc") + b"trailing") == b"abc"  # as zlib.decompress and Java's Inflater


def _record(body: bytes, sys_flag: int = 0, queue_offset: int = 0) -> bytes:
    return encode(topic="T", body=body, sys_flag=sys_flag, queue_offset=queue_offset, born_host=HOST,
                  store_host=HOST, properties="TAGS\x01a\x02")


def test_decode_refuses_a_body_past_its_inflate_limit() -> None:
    rec = _record(zlib.compress(b"y" * 2000), COMPRESSED_FLAG)
    assert decode(rec, decompress=True, inflate_limit=2000).body == b"y" * 2000
    with pytest.raises(BodyInflateError, match="inflates to more than 1999 bytes"):
        decode(rec, decompress=True, inflate_limit=1999)


def test_a_pulled_bomb_is_delivered_as_stored_and_marked_the_others_inflate() -> None:
    bomb = zeros_deflated(DEFAULT_INFLATE_LIMIT + 1)
    buf = b"".join([
        _record(zlib.compress(b"first"), COMPRESSED_FLAG, 0),
        _record(bomb, COMPRESSED_FLAG, 1),
        _record(b"not zlib", COMPRESSED_FLAG, 2),
        _record(b"plain", 0, 3),
    ])
    msgs = decode_all(buf, decompress=True, extra_properties="MIN_OFFSET\x010\x02")
    assert [m.queue_offset for m in msgs] == [0, 1, 2, 3]
    assert msgs[0].body == b"first" and msgs[3].body == b"plain"
    assert msgs[1].body == bomb and msgs[2].body == b"not zlib"  # the stored bytes, COMPRESSED_FLAG still set
    assert "inflates to more than" in (msgs[1].body_inflate_error or "")
    assert "not zlib data" in (msgs[2].body_inflate_error or "")
    assert all(m.sys_flag & COMPRESSED_FLAG for m in msgs[1:3])
    assert all(m.properties["MIN_OFFSET"] == "0" for m in msgs)
    assert msgs[0].body_inflate_error is None and msgs[3].body_inflate_error is None
    # The mark is not a property: a consumer's properties are the producer's (and the pull's marks) only.
    assert all("BODY_INFLATE_ERROR" not in m.properties for m in msgs)


@pytest.mark.parametrize(("sys_flag", "name"), [(0x101, "LZ4"), (0x201, "ZSTD"), (0x401, "compression type 0x400")])
def test_a_body_of_another_codec_is_named_not_tried_as_zlib(sys_flag: int, name: str) -> None:
    # (zlib bytes under the LZ4 bits: were they tried as zlib, they would inflate into what they are not)
    stored = zlib.compress(b"not for zlib")
    [msg] = decode_all(_record(stored, sys_flag), decompress=True)
    assert (msg.body, msg.sys_flag) == (stored, sys_flag)
    assert msg.body_inflate_error == (f"compressed body at 0 does not inflate: {name}-compressed (sysFlag "
                                      f"compression type {sys_flag & 0x700:#x}); pocketmq inflates zlib only")
    assert decode_all(_record(stored, COMPRESSED_FLAG | 0x300), decompress=True)[0].body == b"not for zlib"
