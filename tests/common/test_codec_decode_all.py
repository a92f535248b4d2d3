"""The record codec's decode_all (runs of one shape decoded together, extra properties, version 2 records) held to
decode record by record, and damaged or arbitrary input refused by both with CorruptRecordError alone."""

from __future__ import annotations

import struct
import zlib

import pytest
from codec_test_records import V6_HOST, _record
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import (
    decode,
    decode_all,
    iter_records,
    properties_to_string,
)
from pocketmq.common.codec import BodyInflateError, CorruptRecordError

# -- corrupt input: decode fails cleanly ---------------------------------------------------------

_VALID = _record(body=b"some body", properties=properties_to_string({"TAGS": "A", "KEYS": "k"}))


def _decode_or_corrupt(buf: bytes, check_crc: bool) -> None:
    try:
        m = decode(buf, check_crc=check_crc, decompress=True)
    except CorruptRecordError:
        return
    assert m.store_size <= len(buf)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=400), st.booleans())
def test_property_decode_of_arbitrary_bytes_raises_only_corrupt_record_error(buf, check_crc):
    _decode_or_corrupt(buf, check_crc)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(8, len(_VALID)), st.booleans())
def test_property_decode_of_damaged_records_raises_only_corrupt_record_error(edits, cut, check_crc):
    buf = bytearray(_VALID)
    for pos, value in edits:
        buf[pos] = value
    _decode_or_corrupt(bytes(buf[:cut]), check_crc)


def test_decode_rejects_a_body_length_that_runs_past_the_record():
    buf = bytearray(_VALID)
    struct.pack_into(">i", buf, 84, 10_000)
    with pytest.raises(CorruptRecordError):
        decode(bytes(buf))
    bad_topic = bytearray(_VALID)
    bad_topic[88 + len(b"some body") + 1] = 0xFF  # not UTF-8
    with pytest.raises(CorruptRecordError):
        decode(bytes(bad_topic))
    not_zlib = _record(body=b"not deflated", sys_flag=0x1)
    assert decode(not_zlib).body == b"not deflated"  # left alone unless asked to inflate
    with pytest.raises(CorruptRecordError):
        decode(not_zlib, decompress=True)
    deflated = _record(body=zlib.compress(b"inflate me"), sys_flag=0x1)
    assert decode(deflated, decompress=True).body == b"inflate me"


def _one_by_one(buf: bytes) -> list[object]:
    """What decode() gives record by record: the messages, then the error's text if one is damaged. A whole
    record whose body does not inflate comes as stored, marked with the reason."""
    expected: list[object] = []
    offset = 0
    while offset + 8 <= len(buf) and struct.unpack_from(">I", buf, offset + 4)[0] != 0xCBD43194:
        try:
            m = decode(buf, offset, decompress=True)
        except BodyInflateError as e:
            m = decode(buf, offset)
            m.body_inflate_error = str(e)
        except CorruptRecordError as e:
            expected.append(str(e))
            break
        expected.append(m)
        offset += m.store_size
    return expected


def _assert_decode_all_gives(buf: bytes, expected: list[object]) -> None:
    """decode_all has a loop of its own for bytes: all the records, or the same error."""
    if expected and isinstance(expected[-1], str):
        with pytest.raises(CorruptRecordError) as raised:
            decode_all(buf, decompress=True)
        assert str(raised.value) == expected[-1]
    else:
        assert decode_all(buf, decompress=True) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), max_size=3),
       st.booleans(), st.booleans())
def test_property_decode_all_agrees_with_decode_record_by_record(edits, compressed, v6):
    # decode_all takes a shortcut for IPv4 records in a bytes buffer; it must give what decode() gives,
    # record by record, and fail where decode() fails, with the same error.
    body = zlib.compress(b"payload") if compressed else b"payload"
    first = _record(body=body, sys_flag=0x1 if compressed else 0, properties="TAGS\x01A\x02KEYS\x01k\x02")
    second = bytearray(_VALID if not v6 else _record(born_host=V6_HOST, store_host=V6_HOST))
    for pos, value in edits:
        second[pos % len(second)] = value
    buf = first + bytes(second)
    expected = _one_by_one(buf)
    got: list[object] = []
    try:
        got.extend(iter_records(buf, decompress=True))
    except CorruptRecordError as e:
        got.append(str(e))
    assert got == expected
    _assert_decode_all_gives(buf, expected)
    if not (expected and isinstance(expected[-1], str)):
        assert decode_all(bytearray(buf), decompress=True) == expected


# Records of one size but other shapes or flags, to sit inside a run: one whose body is one byte longer and
# properties one byte shorter; a compressed one and one with an IPv6 host, both of the run's size.
_RUN = "TAGS\x01AB\x02"
_DEFLATED = zlib.compress(b"payload")
_RUN_BODY = b"p" * len(_DEFLATED)
_SAME_SIZE_OTHER_SHAPE = dict(body=_RUN_BODY + b"!", properties="TAGS\x01A\x02")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["run", "other shape", "compressed", "v6", "not UTF-8", "v2"]), min_size=1,
                max_size=6),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=2))
def test_property_decode_all_runs_of_one_shape_agree_with_decode(kinds, edits):
    # decode_all unpacks records of one shape as a run, checking each against the shape: whatever sits
    # inside a run (another shape of the same size, a flag it must not take, bad text, damage anywhere)
    # must come out as decode() gives it, record by record.
    recs = []
    for i, kind in enumerate(kinds):
        if kind == "other shape":
            recs.append(_record(queue_offset=i, **_SAME_SIZE_OTHER_SHAPE))
        elif kind == "compressed":
            recs.append(_record(body=_DEFLATED, sys_flag=0x1, queue_offset=i, properties=_RUN))
        elif kind == "v6":
            recs.append(_record(body=_RUN_BODY[12:], born_host=V6_HOST, queue_offset=i, properties=_RUN))
        elif kind == "v2":  # (message version 2: a 2-byte topic length)
            recs.append(_record(topic=LONG_RETRY_TOPIC, body=_RUN_BODY, queue_offset=i, properties=_RUN))
        else:
            rec = bytearray(_record(body=_RUN_BODY, queue_offset=i, properties=_RUN))
            if kind == "not UTF-8":
                rec[-3] = 0xFF
            recs.append(bytes(rec))
    buf = bytearray(b"".join(recs))
    for pos, value in edits:
        buf[pos % len(buf)] = value
    _assert_decode_all_gives(bytes(buf), _one_by_one(bytes(buf)))


LONG_RETRY_TOPIC = "%RETRY%" + "g" * 60 + "_" + "t" * 100


def test_a_version_2_record_has_a_two_byte_topic_length_and_its_fields_one_byte_on():
    v1 = _record(topic="t" * 127, body=b"xyz", properties=_RUN)
    v2 = _record(topic="%RETRY%" + "t" * 121, body=b"xyz", properties=_RUN)
    assert (len(v1), len(v2)) == (91 + 3 + 127 + len(_RUN), 92 + 3 + 128 + len(_RUN))
    assert struct.unpack_from(">I", v2, 4)[0] == 0xDAA320AB
    assert v2[88 + 3:88 + 5] == (128).to_bytes(2, "big") and v2[93:93 + 128] == b"%RETRY%" + b"t" * 121
    assert struct.unpack_from(">h", v2, 93 + 128)[0] == len(_RUN)
    [m] = decode_all(v2)
    assert (m.topic, m.body, m.properties_string, m.store_size) == ("%RETRY%" + "t" * 121, b"xyz", _RUN, len(v2))
    assert decode(v2, check_crc=True) == m
    # A version 1 magic on a version 2 record (or the other way round) does not add up.
    with pytest.raises(CorruptRecordError):
        decode(v2[:4] + v1[4:8] + v2[8:])


_MARKS = "MIN_OFFSET\x010\x02MAX_OFFSET\x0112\x02"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["run", "no last separator", "no properties", "compressed", "v6"]), min_size=1,
                max_size=8))
def test_property_decode_all_extra_properties_as_put_encoded_properties(kinds):
    # A pull marks every message with the queue's offset range; decode_all adds the marks as it decodes. That
    # must give each record what put_encoded_properties gives it, in a run or not, whether the stored string
    # ends with its separator or not (a record without one has the run's shape), or is empty.
    props = {"run": _RUN, "no last separator": "TAGS\x01ABC", "no properties": "", "compressed": _RUN, "v6": _RUN}
    recs = []
    for i, kind in enumerate(kinds):
        extra = {"compressed": dict(body=_DEFLATED, sys_flag=0x1), "v6": dict(body=_RUN_BODY[12:],
                                                                             born_host=V6_HOST)}
        recs.append(_record(queue_offset=i, properties=props[kind], **extra.get(kind, dict(body=_RUN_BODY))))
    buf = b"".join(recs)
    expected = _one_by_one(buf)
    for m in expected:
        m.put_encoded_properties(_MARKS)
    got = decode_all(buf, decompress=True, extra_properties=_MARKS)
    assert [m.properties_string for m in got] == [m.properties_string for m in expected]
    assert got == expected
    assert all(m.properties["MAX_OFFSET"] == "12" for m in got)
    assert [m.properties_string for m in decode_all(buf, decompress=True)] == [props[k] for k in kinds]


def test_decode_all_takes_a_run_up_to_a_record_of_another_shape_and_on_after_it():
    shapes = [dict(body=_RUN_BODY, properties=_RUN)] * 3 + [_SAME_SIZE_OTHER_SHAPE] + [
        dict(body=_RUN_BODY, properties=_RUN)] * 2
    buf = b"".join(_record(queue_offset=i, **kw) for i, kw in enumerate(shapes))
    got = decode_all(buf)
    assert [(m.queue_offset, m.body, m.properties_string) for m in got] == [
        (i, kw["body"], kw["properties"]) for i, kw in enumerate(shapes)]
    assert got == _one_by_one(buf)


@pytest.mark.parametrize("field, delta", [("total size", 1), ("magic", 1), ("body length", 1), ("body length", -1),
                                          ("topic length", 1), ("props length", 1), ("props length", -1),
                                          ("topic byte", 0x80), ("props byte", 0x80)])
def test_decode_all_refuses_damage_inside_a_run_as_decode_does(field, delta):
    # The third record of a run keeps its size; one field in it is wrong. (Not the second: a run starts
    # only where the next record's TOTALSIZE matches, so a wrong one there would never be in a run.)
    rec = _record(body=_RUN_BODY, properties=_RUN)
    middle = bytearray(rec)
    body_end = 88 + len(_RUN_BODY)
    at = {"total size": 3, "magic": 7, "body length": 87, "topic length": body_end,
          "props length": len(rec) - len(_RUN) - 1, "topic byte": body_end + 1, "props byte": len(rec) - 2}[field]
    middle[at] = (middle[at] + delta) % 256
    buf = rec + rec + bytes(middle) + rec
    expected = _one_by_one(buf)
    assert isinstance(expected[-1], str) and len(expected) == 3
    with pytest.raises(CorruptRecordError) as raised:
        decode_all(buf)
    assert str(raised.value) == expected[-1]


def _damaged(kind: str) -> bytes:
    props = "TAGS\x01A\x02"
    buf = bytearray(_record(body=b"payload", properties=props))
    body_end = 88 + len(b"payload")
    props_at = len(buf) - len(props) - 2
    if kind == "props length short":
        struct.pack_into(">h", buf, props_at, len(props) - 1)
    elif kind == "props length negative":
        struct.pack_into(">h", buf, props_at, -2)
    elif kind == "topic length long":
        buf[body_end] = 250
    elif kind == "props not UTF-8":
        buf[-2] = 0xFF
    elif kind == "size past the buffer":
        struct.pack_into(">i", buf, 0, len(buf) + 1)
    return bytes(buf)


@pytest.mark.parametrize("kind", ["props length short", "props length negative", "topic length long",
                                  "props not UTF-8", "size past the buffer"])
def test_decode_all_refuses_each_damage_as_decode_does(kind):
    good = _record(body=b"first")
    bad = _damaged(kind)
    with pytest.raises(CorruptRecordError) as expected:
        decode(bad)
    with pytest.raises(CorruptRecordError) as got:
        decode_all(good + bad, decompress=True)
    assert str(got.value) == str(expected.value).replace(" at 0", f" at {len(good)}")
