"""The native protocol's fast paths agree with their readable references, errors included: the ROCKETMQ header
writer and reader, the JSON header reader, and the compiled header parsers (``header.from_ext``) against
``header.from_ext_reference``. Inputs are both what clients send and what no client should (bad lengths, odd
types, texts a parser must refuse), since a fast path hands anything unusual to its reference."""

from __future__ import annotations

import dataclasses
import itertools
import json
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting import header as h
from pocketmq.remoting import header_codec as hc
from pocketmq.remoting import json_header_fields, remoting_serializable, rocketmq_serializable
from pocketmq.remoting.codes import LanguageCode, RequestCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError, MalformedFrame
from pocketmq.remoting.remoting_serializable import (
    decode_json_header,
    decode_json_header_fast,
    decode_json_header_fast_py,
    encode_json_header,
    encode_json_header_fast,
    encode_json_header_fast_py,
)
from pocketmq.remoting.rocketmq_serializable import (
    decode_rocketmq_header,
    decode_rocketmq_header_fast,
    decode_rocketmq_header_fast_py,
    encode_rocketmq_header,
    encode_rocketmq_header_fast,
    encode_rocketmq_header_fast_py,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
texts = st.text(st.characters(blacklist_categories=()) | st.sampled_from('\\u"\x00\x1f\x7f\x9f\ud800é€🚀'),
                max_size=10)  # fmt: skip
ascii_texts = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=10)
ext_values = st.one_of(
    ascii_texts, texts, INT32, st.integers(-(2**70), 2**70), st.booleans(), st.none(), st.floats(),
    st.sampled_from([LanguageCode.JAVA, b"x", [1]]),
)  # fmt: skip
languages = st.sampled_from([int(lc) for lc in LanguageCode])


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    """Commands a client sends (most) and ones a writer must refuse: enums, values out of range, bad ext values."""
    small = st.integers(-0x8000, 0x7FFF)
    odd = st.integers(-(2**40), 2**40) | st.sampled_from([RequestCode.SEND_MESSAGE_V2, True])
    return RemotingCommand(
        code=draw(small | odd), language=draw(languages | st.integers(-300, 300)), version=draw(small | odd),
        opaque=draw(INT32 | odd), flag=draw(INT32 | odd),
        remark=draw(st.none() | ascii_texts | texts | st.sampled_from([5, b"r"])),
        ext_fields=draw(st.dictionaries(ascii_texts | texts | st.sampled_from([1, None]), ext_values, max_size=6)),
    )  # fmt: skip


def _written(write, cmd: RemotingCommand) -> object:
    try:
        return write(cmd)
    except (TypeError, ValueError) as e:
        return type(e)


def _read(read, data: bytes) -> object:
    json_header_fields._request_ids = itertools.count()  # (a header without an opaque draws the next one)
    try:
        cmd = read(data)
    except MalformedFrame as e:
        return ("malformed", e.reason, e.opaque, e.flag)
    return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.body,
            cmd.serialize_type)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(cmd=commands())
def test_the_fast_rocketmq_header_writer_agrees_with_the_reference(cmd: RemotingCommand) -> None:
    for write in (encode_rocketmq_header_fast, encode_rocketmq_header_fast_py):  # (the C's when built; the Python)
        assert _written(write, cmd) == _written(encode_rocketmq_header, cmd)


def _damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` cut short, with bytes overwritten, or with bytes appended."""
    how = draw(st.sampled_from(["as is", "cut", "overwrite", "append"]))
    if how == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if how == "overwrite" and data:
        at = draw(st.integers(0, len(data) - 1))
        patch = draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b"\xff\xff", b"\x80", b"\x7f\xff\xff\xff"]))
        return data[:at] + patch + data[at + len(patch) :]
    if how == "append":
        return data + draw(st.binary(max_size=8))
    return data


@st.composite
def rocketmq_headers(draw: st.DrawFn) -> bytes:
    cmd = draw(commands())
    try:
        data = encode_rocketmq_header(cmd)
    except (TypeError, ValueError):
        data = draw(st.binary(max_size=40))
    return _damaged(draw, data)


@settings(max_examples=300, deadline=None)
@given(data=rocketmq_headers())
def test_the_fast_rocketmq_header_reader_agrees_with_the_reference(data: bytes) -> None:
    for read in (decode_rocketmq_header_fast, decode_rocketmq_header_fast_py):
        assert _read(read, data) == _read(decode_rocketmq_header, data)
        assert _read(read, memoryview(data)) == _read(decode_rocketmq_header, data)


def test_the_fast_rocketmq_header_reader_reads_non_ascii_and_drops_empty_entries() -> None:
    cmd = RemotingCommand(10, opaque=3, remark="é", ext_fields={"k": "välue", "": "x", "e": "", "ü": "1"})
    data = encode_rocketmq_header(cmd)
    assert decode_rocketmq_header_fast(data).ext_fields == {"k": "välue", "ü": "1"}
    assert decode_rocketmq_header_fast_py(data).ext_fields == {"k": "välue", "ü": "1"}
    assert _read(decode_rocketmq_header_fast, data) == _read(decode_rocketmq_header, data)
    bad_utf8 = data.replace("välue".encode(), b"v\xffl\xfeue")  # (as long)
    assert decode_rocketmq_header_fast(bad_utf8).ext_fields["k"] == "v\ufffdl\ufffdue"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | ascii_texts | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ascii_texts, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def json_headers(draw: st.DrawFn) -> bytes:
    """JSON headers as clients write them, with fields of other types, missing, as text, or surrounded by
    whitespace, and damaged ones."""
    cmd = draw(commands())
    try:
        data = encode_json_header(cmd)
    except (TypeError, ValueError):
        data = b'{"code":1,"opaque":2}'
    if draw(st.booleans()):
        obj = json.loads(data)
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["code", "opaque", "flag", "version", "language", "remark", "extFields"]))
            obj[key] = draw(json_values | INT32.map(str) | st.sampled_from(["JAVA", "CPP", "GO", "NOPE", "12"]))
        if isinstance(obj.get("extFields"), dict) and draw(st.booleans()):
            obj["extFields"][draw(ascii_texts)] = draw(json_values)
        data = json.dumps(obj, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    data = draw(st.sampled_from([b"", b" ", b"\n"])) + data + draw(st.sampled_from([b"", b" ", b"\n", b"x"]))
    return _damaged(draw, data)


@settings(max_examples=300, deadline=None)
@given(data=json_headers())
def test_the_fast_json_header_reader_agrees_with_the_reference(data: bytes) -> None:
    for read in (decode_json_header_fast, decode_json_header_fast_py):  # (the C's when built; the Python)
        assert _read(read, data) == _read(decode_json_header, data)


java_ints = st.one_of(
    INT32.map(str), st.sampled_from(["0", "-0", "007", "-07", "999999999", "1000000000", "2147483647", "2147483648",
                                     "-2147483649", "1e3", "1.0", '"12"', "null", "true", "", " 5"]),
)  # fmt: skip
ext_json_values = st.one_of(
    ascii_texts.map(json.dumps), texts.map(lambda t: json.dumps(t, ensure_ascii=False)), java_ints,
    json_values.map(json.dumps),
)  # fmt: skip


@st.composite
def java_shaped_json_headers(draw: st.DrawFn) -> bytes:
    """Headers in the shape fastjson writes (the fast reader's regexes), their fields any text: ints with leading
    zeros, out of range, as strings; languages unknown or in lower case; ext maps with numbers, objects, escapes,
    repeated keys, null."""
    entries = draw(st.lists(st.tuples(ascii_texts | st.sampled_from(["a", "queueId"]), ext_json_values), max_size=5))
    ext = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in entries) + "}"
    ext = draw(st.sampled_from([ext, ext, "null", "[]", '"x"', "{", ext + " "]))
    language = draw(st.sampled_from(["JAVA", "PYTHON", "CPP", "GO", "RUST", "OTHER", "java", "NOPE", "JAVAX"]))
    text = (f'{{"code":{draw(java_ints)},"extFields":{ext},"flag":{draw(java_ints)},"language":"{language}",'
            f'"opaque":{draw(java_ints)},"serializeTypeCurrentRPC":"JSON","version":{draw(java_ints)}}}')
    return text.encode("utf-8", "surrogatepass") + draw(st.sampled_from([b"", b"", b" ", b"}"]))


@settings(max_examples=500, deadline=None)
@given(data=java_shaped_json_headers())
def test_the_fast_json_header_reader_agrees_with_the_reference_on_java_shaped_headers(data: bytes) -> None:
    for read in (decode_json_header_fast, decode_json_header_fast_py):  # (the C's when built; the Python)
        assert _read(read, data) == _read(decode_json_header, data)


def test_the_fast_json_header_reader_reads_a_java_header() -> None:
    data = (b'{"code":310,"extFields":{"a":"G","b":"T","e":"2","g":"1717000000123"},"flag":0,"language":"JAVA",'
            b'"opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}')  # fmt: skip
    cmd = decode_json_header_fast(data)
    assert (cmd.code, cmd.language, cmd.opaque, cmd.version, cmd.serialize_type) == (310, 0, 7, 409, SerializeType.JSON)
    assert cmd.ext_fields == {"a": "G", "b": "T", "e": "2", "g": "1717000000123"}


def _header_classes() -> list[type[h.CommandHeader]]:
    return [o for o in vars(h).values() if isinstance(o, type) and issubclass(o, h.CommandHeader)
            and o is not h.CommandHeader]  # fmt: skip


# The texts a native peer sends for a field, and the ones around the fast paths' edges: digits at the length
# where the inline read stops (9 for a Java int, 18 for a long), signs, other scripts' digits, booleans' cases.
field_texts = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.integers(0, 10**20).map(lambda n: str(n).zfill(9)),
    st.sampled_from(["", "0", "1", "+7", "-0", "007", "999999999", "2147483647", "2147483648", "9" * 10,
                     "9" * 18, "9223372036854775807", "9223372036854775808", "9" * 19, "١٢", "²", "1_0", " 1",
                     "true", "false", "TRUE", "False", "yes", "1.5", "-2e3", ".5", "nan"]),
    ascii_texts,
)  # fmt: skip
field_values = field_texts | st.integers(-(2**64), 2**64) | st.booleans() | st.floats() | st.none()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_compiled_header_parsers_agree_with_the_reference(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(_header_classes()))
    wires = [s.wire for s in hc._specs(cls)]
    ext = data.draw(st.fixed_dictionaries({}, optional={w: field_values for w in wires}), label=cls.__name__)
    assert _parsed(h.from_ext, cls, ext) == _parsed(h.from_ext_reference, cls, ext)
    python = _PYTHON_PARSERS.get(cls) or _PYTHON_PARSERS.setdefault(cls, hc._compile(cls, ext_values=None)[1])
    assert _parsed(lambda cls, ext: python(ext), cls, ext) == _parsed(h.from_ext_reference, cls, ext)


# Each header class's compiled from_ext without the C accelerator (h.from_ext uses it where it is built).
_PYTHON_PARSERS: dict[type, object] = {}


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_the_compiled_v2_send_header_parser_agrees_with_the_reference(data: st.DataObject) -> None:
    wires = [s.wire for s in hc._specs(h.SendMessageRequestHeaderV2)]
    ext = data.draw(st.fixed_dictionaries({}, optional={w: field_values for w in wires}))

    def v2(cls: type[h.CommandHeader], ext: dict[str, object]) -> h.CommandHeader:
        return h.from_ext_reference(h.SendMessageRequestHeaderV2, ext).to_v1()

    def compiled(cls: type[h.CommandHeader], ext: dict[str, object]) -> h.CommandHeader:
        return h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, ext)

    assert _parsed(compiled, h.SendMessageRequestHeader, ext) == _parsed(v2, h.SendMessageRequestHeader, ext)


def _parsed(parse, cls: type[h.CommandHeader], ext: dict[str, object]) -> object:
    try:
        header = parse(cls, ext)
    except HeaderError as e:
        return ("error", e.field, e.reason)
    return [(f.name, type(v := getattr(header, f.name)), v) for f in dataclasses.fields(header)]


def test_the_compiled_header_parsers_read_native_texts_inline() -> None:
    ext = {"a": "G", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1717000000123", "h": "0",
           "k": "false", "m": "true"}  # fmt: skip
    header = h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, ext)
    assert (header.queue_id, header.born_timestamp, header.unit_mode, header.batch) == (2, 1717000000123, False, True)
    assert struct.pack(">q", header.born_timestamp)  # a long, not text


def test_the_fast_writers_cached_entries_keep_true_and_1_apart() -> None:
    """The writers keep each entry they wrote; True == 1 == 1.0 with the same hash, so the type tells them apart."""
    for ext in ({"k": True}, {"k": 1}, {"k": True}, {"k": "1"}, {"k": 1}, {"k": False}, {"k": 0}, {"k": 1.0},
                {"k": 2}, {"k": 2.0}, {"k": 0.0}):
        cmd = RemotingCommand(10, opaque=1, ext_fields=ext)
        assert encode_rocketmq_header_fast(cmd) == encode_rocketmq_header_fast_py(cmd) == encode_rocketmq_header(cmd)
        assert _written(encode_json_header_fast, cmd) == _written(encode_json_header, cmd)
        assert _written(encode_json_header_fast_py, cmd) == _written(encode_json_header, cmd)
    assert b'"k":"true"' in encode_json_header_fast(RemotingCommand(10, ext_fields={"k": True}))
    assert b'"k":"1"' in encode_json_header_fast(RemotingCommand(10, ext_fields={"k": 1}))


def test_the_fast_writers_keep_no_long_entry() -> None:
    """Properties, a send's long ext value, differ from message to message: kept, they would only take memory.
    (The Python writers keep them; the C, where built, keeps nothing.)"""
    for i in range(3):
        cmd = RemotingCommand(10, opaque=1, ext_fields={"i": f"UNIQ_KEY\x01{i:0200d}\x02", "b": "Topic"})
        assert encode_rocketmq_header_fast_py(cmd) == encode_rocketmq_header_fast(cmd) == encode_rocketmq_header(cmd)
        assert encode_json_header_fast_py(cmd) == encode_json_header_fast(cmd) == encode_json_header(cmd)
    assert all(len(name) + len(str(value)) <= 128 for name, _, value in remoting_serializable._PIECES)
    assert all(len(entry) <= 128 for entry in rocketmq_serializable._ENTRIES[str].values())
    assert ("b", str, "Topic") in remoting_serializable._PIECES
    assert ("b", "Topic") in rocketmq_serializable._ENTRIES[str]


def test_the_fast_json_writer_keeps_no_large_int_and_stays_bounded() -> None:
    """Offsets and timestamps are new in every request: not kept. Past its bound the map is emptied and the
    pieces are made again, the same text."""
    pieces = remoting_serializable._PIECES
    for i in range(remoting_serializable._MAX_PIECES + 10):
        cmd = RemotingCommand(10, opaque=1, ext_fields={"queueOffset": 1_000_000 + i, "msgId": f"{i:032X}", "e": 2})
        assert encode_json_header_fast_py(cmd) == encode_json_header(cmd)
        assert len(pieces) <= remoting_serializable._MAX_PIECES
    assert not any(kind is int and abs(value) > 0xFFFF for _, kind, value in pieces)  # type: ignore[arg-type]
    assert ("e", int, 2) in pieces

