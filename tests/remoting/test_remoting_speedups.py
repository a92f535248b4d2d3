"""The C accelerator (``pocketmq/remoting/_speedups.c``) is built, chosen unless ``POCKETMQ_NO_EXTENSIONS=1``,
not used when built from another source, and makes exactly what the Python references make: the same commands
and header values, the same errors (the C answers None for anything it does not take, and the Python reads that).
Inputs: what clients send, what they send damaged, random bytes, and texts around every branch of the C (escapes,
surrogates, undecodable UTF-8, ints at nine and ten digits, unknown languages, repeated keys). A crash of the C
on any of them would end the test run.

These tests load the module directly, so they test the C under ``POCKETMQ_NO_EXTENSIONS=1`` as well; a checkout
where it was not built fails them (``make`` builds it)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

from hypothesis import example, given, settings
from hypothesis import strategies as st

import pocketmq.remoting
from pocketmq.remoting import (
    admin_header,  # noqa: F401  (the header classes of these modules join CommandHeader's subclasses)
    json_header_fields,
    pop_header,  # noqa: F401
    recall_header,  # noqa: F401
    reply_header,  # noqa: F401
    speedups,
    transaction_header,  # noqa: F401
)
from pocketmq.remoting import header as h
from pocketmq.remoting import header_codec as hc
from pocketmq.remoting import remoting_serializable as rs
from pocketmq.remoting import rocketmq_serializable as rms
from pocketmq.remoting.codes import LanguageCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError, MalformedFrame

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "pocketmq" / "remoting" / "_speedups.c"

_speedups = importlib.import_module("pocketmq.remoting._speedups")  # (fails, as it should, when not built)
_speedups.configure(RemotingCommand, rs._LANGUAGE_CODES, rs._LANGUAGE_NAMES, SerializeType.JSON)
_speedups.configure_rocketmq(SerializeType.ROCKETMQ)


def decode_with_c(data: bytes | memoryview) -> RemotingCommand:
    """What ``decode_json_header_fast`` is when the C is chosen."""
    cmd = _speedups.decode_json_header(data)
    return cmd if cmd is not None else rs.decode_json_header_fast_py(data)


def _read(read, data: bytes | memoryview) -> object:
    json_header_fields._request_ids = itertools.count()  # (a header without an opaque draws the next one)
    try:
        cmd = read(data)
    except MalformedFrame as e:
        return ("malformed", type(e), e.reason, e.opaque, e.flag)
    fields = (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.body, cmd.serialize_type)
    return ([(type(v), v) for v in fields], type(cmd.ext_fields), list(cmd.ext_fields.items()),
            [type(v) for v in cmd.ext_fields.values()])  # fmt: skip


# --- which module runs ---------------------------------------------------------------------------------------


def test_the_c_module_is_chosen_unless_switched_off() -> None:
    assert hashlib.sha256(SOURCE.read_bytes()).hexdigest() == _speedups.SOURCE_HASH, "rebuild: make"
    if os.environ.get("POCKETMQ_NO_EXTENSIONS") == "1":
        assert speedups.speedups is None
        assert rs.decode_json_header_fast is rs.decode_json_header_fast_py
        assert rs.encode_json_header_fast is rs.encode_json_header_fast_py
        assert rms.decode_rocketmq_header_fast is rms.decode_rocketmq_header_fast_py
        assert rms.encode_rocketmq_header_fast is rms.encode_rocketmq_header_fast_py
        assert hc._EXT_VALUES is None
    else:
        assert speedups.speedups is _speedups
        assert rs.decode_json_header_fast is not rs.decode_json_header_fast_py
        assert rs.encode_json_header_fast is not rs.encode_json_header_fast_py
        assert rms.decode_rocketmq_header_fast is not rms.decode_rocketmq_header_fast_py
        assert rms.encode_rocketmq_header_fast is not rms.encode_rocketmq_header_fast_py
        assert hc._EXT_VALUES is _speedups.ext_values


_CHOICE = (
    "from pocketmq.remoting import speedups, remoting_serializable as rs, rocketmq_serializable as rms,"
    " header_codec as hc;"
    "print(speedups.speedups is not None, rs.decode_json_header_fast is not rs.decode_json_header_fast_py,"
    " rs.encode_json_header_fast is not rs.encode_json_header_fast_py,"
    " rms.decode_rocketmq_header_fast is not rms.decode_rocketmq_header_fast_py,"
    " rms.encode_rocketmq_header_fast is not rms.encode_rocketmq_header_fast_py, hc._EXT_VALUES is not None)"
)


def _child(env_value: str | None, path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "POCKETMQ_NO_EXTENSIONS"}
    if env_value is not None:
        env["POCKETMQ_NO_EXTENSIONS"] = env_value
    env["PYTHONPATH"] = str(path)
    return subprocess.run([sys.executable, "-W", "always", "-c", _CHOICE], env=env, cwd=path, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_the_switch_chooses_the_python_everywhere_and_only_for_1() -> None:
    root = Path(pocketmq.remoting.__file__).resolve().parents[2]
    assert _child(None, root).stdout.split() == ["True"] * 6
    assert _child("0", root).stdout.split() == ["True"] * 6
    assert _child("1", root).stdout.split() == ["False"] * 6


def test_a_module_built_from_another_source_is_not_used(tmp_path: Path) -> None:
    package = Path(pocketmq.remoting.__file__).resolve().parents[1]
    shutil.copytree(package, tmp_path / "pocketmq", ignore=shutil.ignore_patterns("__pycache__", "static"))
    copied = tmp_path / "pocketmq" / "remoting" / "_speedups.c"
    copied.write_text(copied.read_text() + "\n/* changed */\n")
    proc = _child(None, tmp_path)
    assert proc.stdout.split() == ["False"] * 6, proc.stderr
    assert "was built from another version of _speedups.c" in proc.stderr


# --- the JSON header -----------------------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
texts = st.text(st.characters(blacklist_categories=()) | st.sampled_from('\\u"/\x00\x1f\x7f\x9f\ud800\udc00é€🚀'),
                max_size=12)  # fmt: skip
languages = st.sampled_from([int(lc) for lc in LanguageCode])
# (The strategies are made once, at module level, not at each draw: making and validating them at each draw was
# most of these tests' time.)
_CODES = st.integers(-0x8000, 0x7FFF) | INT32
_JAVA_REMARKS = st.none() | texts | st.sampled_from(["FOUND", ""])
_JAVA_EXT = st.dictionaries(texts, texts, max_size=8)


@st.composite
def java_headers(draw: st.DrawFn) -> bytes:
    """Headers as pocketmq's writer (fastjson's output) makes them: what the C must read itself."""
    cmd = RemotingCommand(
        code=draw(_CODES), language=draw(languages), version=draw(INT32),
        opaque=draw(INT32), flag=draw(INT32), remark=draw(_JAVA_REMARKS),
        ext_fields=draw(_JAVA_EXT),
    )  # fmt: skip
    return rs.encode_json_header(cmd)


_JAVA_HEADERS = java_headers()
_TIMES = st.integers(1, 3)


@settings(max_examples=400, deadline=None)
@given(data=_JAVA_HEADERS)
def test_the_c_reads_java_headers_as_the_python_does(data: bytes) -> None:
    assert _read(decode_with_c, data) == _read(rs.decode_json_header_fast_py, data)
    assert _read(decode_with_c, memoryview(data)) == _read(rs.decode_json_header, data)
    if b"\\uD" not in data:  # (a surrogate's escape is the Python's to read)
        assert _speedups.decode_json_header(data) is not None, data


_HOW = st.sampled_from(["cut", "overwrite", "insert", "remove", "append"])
_PATCHES = st.binary(min_size=1, max_size=4) | st.sampled_from(
    [b'"', b"\\", b"\\u", b"\\ud800", b"\\uDC00", b"\\x", b",", b"}", b"{", b":", b" ", b"\xff", b"\xc3",
     b"\xed\xa0\x80", b"0", b"-", b"9" * 10, b"null", b'"a":"b",'])  # fmt: skip
_REMOVED = st.integers(1, 4)


def _damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` cut, overwritten, with bytes inserted or removed, or appended to."""
    how = draw(_HOW)
    at = draw(st.integers(0, len(data)))
    patch = draw(_PATCHES)
    if how == "cut":
        return data[:at]
    if how == "overwrite":
        return data[:at] + patch + data[at + len(patch) :]
    if how == "insert":
        return data[:at] + patch + data[at:]
    if how == "remove":
        return data[:at] + data[at + draw(_REMOVED) :]
    return data + patch


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_the_c_agrees_with_the_python_on_damaged_headers(data: st.DataObject) -> None:
    header = data.draw(_JAVA_HEADERS)
    for _ in range(data.draw(_TIMES)):
        header = _damaged(data.draw, header)
    assert _read(decode_with_c, header) == _read(rs.decode_json_header_fast_py, header)


_TOKENS = ['{"code":', '"extFields":', '"flag":', '"language":', '"JAVA"', '"opaque":', '"remark":', '"FOUND"',
           '"serializeTypeCurrentRPC":"JSON"', '"version":', "{", "}", ",", ":", '"', "\\", "\\u00e9", "\\n", "0", "-",
           "12", "999999999", "1000000000", "é", "\ud800", "\x00", " "]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(raw=st.binary(max_size=200), tokens=st.lists(st.sampled_from(_TOKENS), max_size=30))
def test_the_c_agrees_with_the_python_on_random_input(raw: bytes, tokens: list[str]) -> None:
    for data in (raw, "".join(tokens).encode("utf-8", "surrogatepass")):
        assert _read(decode_with_c, data) == _read(rs.decode_json_header_fast_py, data)


_JAVA = '{{"code":{code}{ext},"flag":0,"language":"{lang}","opaque":7,"serializeTypeCurrentRPC":"JSON","version":1}}'


@example(ext=',"extFields":{}', code="0", lang="JAVA")
@example(ext="", code="-2147483648", lang="GO")
@example(ext=',"extFields":{"a":"1","a":"2","b":"3"}', code="1", lang="JAVA")  # (a repeated key: the last value)
@example(ext=',"extFields":{"k":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\u20AC\\uffff"}', code="1", lang="CPP")
@example(ext=',"extFields":{"k":"\\ud83d\\ude80"}', code="1", lang="JAVA")  # a pair: the Python's
@example(ext=',"extFields":{"k":"\\ud800"}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":"\\uZZZZ"}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":"\\u12"}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":"\\a"}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":"\xff\xc3(\xed\xa0\x80\\u00e9\xe2\x82"}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":1}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k":"v",}', code="1", lang="JAVA")
@example(ext=',"extFields":{"k" :"v"}', code="1", lang="JAVA")
@example(ext=',"extFields":null', code="1", lang="JAVA")
@example(ext="", code="-0", lang="JAVA")
@example(ext="", code="01", lang="JAVA")
@example(ext="", code="1234567890", lang="JAVA")
@example(ext="", code="999999999", lang="JAVASCRIPT")
@example(ext="", code="1", lang="NOPE")
@example(ext="", code="1", lang="java")
@example(ext="", code="1", lang="")
@settings(max_examples=300, deadline=None)
@given(
    ext=st.sampled_from(["", ',"extFields":{}', ',"extFields":{"a":"b"}']),
    code=st.sampled_from(["0", "1", "-1", "-0", "00", "999999999", "-999999999", "1000000000", "2147483647"]),
    lang=st.sampled_from(["JAVA", "PYTHON", "OTHER", "RUST", "NOPE", "ABCDEFGHI", "A"]),
)
def test_the_c_agrees_with_the_python_around_its_edges(ext: str, code: str, lang: str) -> None:
    data = _JAVA.format(code=code, ext=ext, lang=lang).encode("utf-8", "surrogateescape")
    assert _read(decode_with_c, data) == _read(rs.decode_json_header_fast_py, data)
    assert _read(decode_with_c, data) == _read(rs.decode_json_header, data)


def test_the_c_reads_a_large_header_and_refuses_what_is_not_bytes() -> None:
    ext = {f"key{i}": "v" * 1000 + "\\u00e9" for i in range(1000)}
    data = rs.encode_json_header(RemotingCommand(1, opaque=2, ext_fields=ext))
    assert _speedups.decode_json_header(data).ext_fields == rs.decode_json_header(data).ext_fields
    assert _speedups.decode_json_header("not bytes") is None  # (the Python says what is wrong)
    assert _speedups.decode_json_header(bytearray(data)) is not None


# --- writing the JSON header -----------------------------------------------------------------------------------


def encode_with_c(cmd: RemotingCommand) -> bytes:
    """What ``encode_json_header_fast`` is when the C is chosen."""
    data = _speedups.encode_json_header(cmd)
    return data if data is not None else rs.encode_json_header_fast_py(cmd)


def _written(write, cmd: object) -> object:
    try:
        return write(cmd)
    except (TypeError, ValueError, AttributeError) as e:
        return (type(e), str(e))


class _Text(str):
    __slots__ = ()


class _Int(int):
    pass


ext_keys = texts | st.sampled_from(["queueId", "", "é", 1, None, _Text("k")])
ext_values = st.one_of(
    texts, st.integers(-(2**31), 2**31 - 1), st.integers(-(2**70), 2**70), st.booleans(), st.none(), st.floats(),
    st.sampled_from([LanguageCode.JAVA, b"x", [1], _Text("v"), _Int(5), 2**63, -(2**63), 2**63 - 1, -(2**63) - 1]),
)  # fmt: skip
odd_ints = st.integers(-(2**40), 2**40) | st.sampled_from([True, LanguageCode.GO, _Int(7), 1.0, "3", None])
_COMMAND_INTS = _CODES | odd_ints
_COMMAND_LANGUAGES = languages | st.integers(-300, 300) | odd_ints
_COMMAND_REMARKS = st.none() | st.none() | texts | st.sampled_from([5, b"r"])
_COMMAND_EXT = st.dictionaries(ext_keys, ext_values, max_size=8)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    """Commands as the broker and client make them, and ones the writers must refuse or write the long way."""
    return RemotingCommand(
        code=draw(_COMMAND_INTS), language=draw(_COMMAND_LANGUAGES),
        version=draw(_COMMAND_INTS), opaque=draw(_COMMAND_INTS), flag=draw(_COMMAND_INTS),
        remark=draw(_COMMAND_REMARKS), ext_fields=draw(_COMMAND_EXT),
    )  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(cmd=commands())
def test_the_c_writes_headers_as_the_python_does(cmd: RemotingCommand) -> None:
    expected = _written(rs.encode_json_header_fast_py, cmd)
    assert _written(encode_with_c, cmd) == expected
    if type(expected) is bytes:  # (the reference's errors may differ: it checks the fields in another order)
        assert rs.encode_json_header(cmd) == expected


def test_the_c_writes_a_common_header_itself_and_leaves_the_rest() -> None:
    ext = {"a": "G", "k": "x\u0001\"\x7f\u0085é🚀\x1f\n", "e": 2, "g": 2**70, "m": True, "n": None}
    cmd = RemotingCommand(310, language=LanguageCode.JAVA, opaque=-7, ext_fields=ext)
    data = _speedups.encode_json_header(cmd)
    assert data == rs.encode_json_header(cmd)
    assert b'"k":"x\\u0001\\"\\u007F\\u0085\xc3\xa9\xf0\x9f\x9a\x80\\u001F\\n"' in data
    assert _speedups.encode_json_header(RemotingCommand(1, ext_fields={"n": None})) == rs.encode_json_header(
        RemotingCommand(1))
    found = RemotingCommand(11, opaque=3, remark="FOUND", ext_fields={"queueId": "1"})
    assert _speedups.encode_json_header(found) == rs.encode_json_header(found)
    assert b',"opaque":3,"remark":"FOUND","serializeTypeCurrentRPC"' in rs.encode_json_header(found)
    for odd in (RemotingCommand(1, remark="\ud800"), RemotingCommand(1, remark=5),
                RemotingCommand(1, ext_fields={"k": "\ud800"}), RemotingCommand(1, ext_fields={"k": 1.5}),
                RemotingCommand(1, opaque=2**31),
                RemotingCommand(1, language=77), "not a command"):  # fmt: skip
        assert _speedups.encode_json_header(odd) is None


# --- the ROCKETMQ header ------------------------------------------------------------------------------------------


def decode_rocketmq_with_c(data: bytes | memoryview) -> RemotingCommand:
    cmd = _speedups.decode_rocketmq_header(data)
    return cmd if cmd is not None else rms.decode_rocketmq_header_fast_py(data)


def encode_rocketmq_with_c(cmd: RemotingCommand) -> bytes:
    data = _speedups.encode_rocketmq_header(cmd)
    return data if data is not None else rms.encode_rocketmq_header_fast_py(cmd)


@settings(max_examples=500, deadline=None)
@given(cmd=commands())
def test_the_c_writes_rocketmq_headers_as_the_python_does(cmd: RemotingCommand) -> None:
    expected = _written(rms.encode_rocketmq_header_fast_py, cmd)
    assert _written(encode_rocketmq_with_c, cmd) == expected
    if type(expected) is bytes:
        assert rms.encode_rocketmq_header(cmd) == expected


_COMMANDS = commands()
_SHORT_BINARY = st.binary(max_size=60)


@settings(max_examples=800, deadline=None)
@given(data=st.data())
def test_the_c_reads_rocketmq_headers_as_the_python_does(data: st.DataObject) -> None:
    cmd = data.draw(_COMMANDS)
    try:
        header = rms.encode_rocketmq_header(cmd)
    except (TypeError, ValueError):
        header = data.draw(_SHORT_BINARY)
    if data.draw(st.booleans()):
        for _ in range(data.draw(_TIMES)):
            header = _damaged(data.draw, header)
    expected = _read(rms.decode_rocketmq_header_fast_py, header)
    assert _read(decode_rocketmq_with_c, header) == expected
    assert _read(decode_rocketmq_with_c, memoryview(header)) == expected
    assert _read(rms.decode_rocketmq_header, header) == expected
    if expected[0] != "malformed" and _ext_block_well_formed(header):
        assert _speedups.decode_rocketmq_header(header) is not None


def _ext_block_well_formed(header: bytes) -> bool:
    """Whether the ext block of a header that the Python reads has a length of 0 or more and entries that end
    where it ends: what the C reads itself. (The Python also reads, as 4.9.7 does, a negative length as no ext
    fields and a last entry that runs past the block: those the C leaves to it.)"""
    pos = 17 + int.from_bytes(header[13:17], "big", signed=True)
    ext_len = int.from_bytes(header[pos : pos + 4], "big", signed=True)
    pos += 4
    end = pos + ext_len
    while pos < end:
        key_len = int.from_bytes(header[pos : pos + 2], "big", signed=True)
        pos += 2 + key_len
        pos += 4 + int.from_bytes(header[pos : pos + 4], "big", signed=True)
    return ext_len >= 0 and pos == end


def test_the_c_reads_and_writes_a_rocketmq_header_itself() -> None:
    cmd = RemotingCommand(310, language=LanguageCode.JAVA, opaque=-7, flag=1, remark="é",
                          ext_fields={"a": "G", "e": 2, "g": 2**70, "m": True, "n": None, "k": "välue"})  # fmt: skip
    data = _speedups.encode_rocketmq_header(cmd)
    assert data == rms.encode_rocketmq_header(cmd)
    back = _speedups.decode_rocketmq_header(data)
    assert (back.code, back.opaque, back.flag, back.remark, back.serialize_type) == (
        310, -7, 1, "é", SerializeType.ROCKETMQ)
    assert back.ext_fields == {"a": "G", "e": "2", "g": str(2**70), "m": "true", "k": "välue"}
    empty = rms.encode_rocketmq_header(RemotingCommand(1, ext_fields={"": "x", "e": ""}))
    assert _speedups.decode_rocketmq_header(empty).ext_fields == {}  # (as Java: an empty key or value is null)
    for odd in (RemotingCommand(0x8000), RemotingCommand(1, language=256), RemotingCommand(1, remark="\ud800"),
                RemotingCommand(1, ext_fields={"k": 1.5}), RemotingCommand(1, ext_fields={"k" * 0x8000: "v"}),
                "not a command"):  # fmt: skip
        assert _speedups.encode_rocketmq_header(odd) is None
    assert _speedups.decode_rocketmq_header(data[:-1]) is None
    assert _speedups.decode_rocketmq_header("not bytes") is None


# --- a typed header's ext values -------------------------------------------------------------------------------


def _header_classes() -> list[type[h.CommandHeader]]:
    out, todo = [], list(h.CommandHeader.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if dataclasses.is_dataclass(cls):
            out.append(cls)
    return sorted(set(out), key=lambda c: (c.__module__, c.__qualname__))


field_texts = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.integers(0, 10**20).map(lambda n: str(n).zfill(9)),
    st.sampled_from(["", "0", "1", "-1", "+7", "-0", "+", "-", "007", "999999999", "-999999999", "2147483647",
                     "2147483648", "-2147483648", "-2147483649", "9" * 10, "9" * 18, "-" + "9" * 18, "9" * 19,
                     "9223372036854775807", "9223372036854775808", "١٢", "²", "1_0", " 1", "1 ", "true", "false",
                     "TRUE", "False", "yes", "1.5", "-2e3", ".5", "nan", "é"]),
    st.text(max_size=6),
)  # fmt: skip
field_values = field_texts | st.integers(-(2**64), 2**64) | st.booleans() | st.floats() | st.none()


def _parsed(parse, cls: type[h.CommandHeader], ext: object) -> object:
    try:
        header = parse(ext)
    except HeaderError as e:
        return ("error", type(e), e.field, e.reason)
    assert type(header) is cls
    return [(f.name, type(v := getattr(header, f.name)), v) for f in dataclasses.fields(header)]


_COMPILED: dict[type, tuple[object, object]] = {}
_HEADER_CLASSES = st.sampled_from(_header_classes())
_EXTS: dict[type, st.SearchStrategy[dict[str, object]]] = {}  # (each class's, made at its first draw)
_UNKNOWN_KEYS = st.text(max_size=4)


@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_the_c_reads_header_fields_as_the_python_does(data: st.DataObject) -> None:
    cls = data.draw(_HEADER_CLASSES)
    if cls not in _EXTS:
        _EXTS[cls] = st.fixed_dictionaries({}, optional={s.wire: field_values for s in hc._specs(cls)})
    ext = data.draw(_EXTS[cls], label=cls.__name__)
    if data.draw(st.booleans()):
        ext[data.draw(_UNKNOWN_KEYS)] = data.draw(field_values)  # (an unknown entry, ignored by both)
    if cls not in _COMPILED:
        _COMPILED[cls] = (hc._compile(cls, ext_values=_speedups.ext_values)[1], hc._compile(cls, ext_values=None)[1])
    with_c, python = _COMPILED[cls]
    expected = _parsed(python, cls, ext)
    assert _parsed(with_c, cls, ext) == expected
    assert _parsed(lambda e: h.from_ext_reference(cls, e), cls, ext) == expected
    assert _parsed(with_c, cls, MappingProxyType(ext)) == expected  # (another mapping: the Python's)


def test_the_c_reads_a_native_send_header_itself() -> None:
    specs = hc._c_specs(hc._specs(h.SendMessageRequestHeader), {f.name: f for f in
                                                               dataclasses.fields(h.SendMessageRequestHeader)})
    ext = {"producerGroup": "G", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
           "queueId": "-1", "sysFlag": "0", "bornTimestamp": "1717000000123", "flag": "0", "unitMode": "false",
           "batch": "true", "reconsumeTimes": "+3"}  # fmt: skip
    values = _speedups.ext_values(ext, specs)
    assert values is not None
    header = h.SendMessageRequestHeader(*values)
    assert (header.queue_id, header.born_timestamp, header.unit_mode, header.batch, header.reconsume_times) == (
        -1, 1717000000123, False, True, 3)
    assert _speedups.ext_values({**ext, "queueId": "2147483648"}, specs) is None  # (the Python's error to raise)
    assert _speedups.ext_values({k: v for k, v in ext.items() if k != "topic"}, specs) is None
    assert _speedups.ext_values(json.loads(json.dumps(ext)), specs) is not None
