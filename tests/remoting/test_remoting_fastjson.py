"""fastjson's JSON dialect (fastjson.loads/dumps); the bodies carried in it are in test_remoting_json_bodies.py."""

from __future__ import annotations

import base64
import enum
import json
import math
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting.body import BrokerData, QueueData
from pocketmq.remoting.fastjson import (
    JsonObject,
    JsonSyntaxError,
    dumps,
    dumps_reference,
    java_string,
    loads,
    parse,
)
from pocketmq.remoting.pop_body import BatchAck, BatchAckMessageRequestBody

# --- reading -----------------------------------------------------------------------------------------------------


def test_bare_numeric_keys_read_as_their_decimal_text() -> None:
    assert loads(b'{"brokerAddrs":{0:"127.0.0.1:10911",-1:"x",007:"y"}}') == {
        "brokerAddrs": {"0": "127.0.0.1:10911", "-1": "x", "7": "y"}
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("{a:1,$b_2:'x'}", {"a": 1, "$b_2": "x"}),  # identifiers as keys, single quotes
        ("{'it''s':1}".replace("''", "\\'"), {"it's": 1}),
        ("[1,,2,]", [1, 2]),  # fastjson's AllowArbitraryCommas
        ('{,"a":1,,"b":2,}', {"a": 1, "b": 2}),
        ("/* c */ {\"a\" /* in */ : 1 // to the end\n}", {"a": 1}),
        ("Set[1,2]", [1, 2]),
        ('{"s":TreeSet["a"]}', {"s": ["a"]}),
        ("[1L,2S,3B,1.5F,2.5D]", [1, 2, 3, 1.5, 2.5]),
        ("[undefined,null,true,false]", [None, None, True, False]),
        ('"\\x41\\u00e9\\v\\0\\/\\\'"', "A\u00e9\v\x00/'"),
        ('"raw\ttab\x01"', "raw\ttab\x01"),
        ("'\\ud83d\\ude00\\ud800x\\udc00'", "\U0001f600\ud800x\udc00"),  # pairs joined, lone ones kept
        ("12345678901234567890123456789", 12345678901234567890123456789),
        ("-9007199254740993", -9007199254740993),
        ('{"a":1}\n', {"a": 1}),  # the C++ client's trailing newline
        ('{"a":1}\n\f\b ', {"a": 1}),
        ('{{"topic":"T","queueId":0}:5}', {'{"queueId":0,"topic":"T"}': 5}),  # an object as key: its JSON text
        ("{1.5:1,2e3:2}", {"1.5": 1, "2e3": 2}),
    ],
)
def test_the_lenient_forms_fastjson_reads(text: str, value: object) -> None:
    assert loads(text) == value
    assert parse(text) == value


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "end of text"),
        ('{"a":1', "expected"),
        ('{"a" 1}', "':'"),
        ('{"a":1 "b":2}', "',' or '}'"),
        ("[1 2]", "',' or ']'"),
        ('"abc', "unterminated string"),
        ('"a\\q"', "bad escape"),
        ('"\\u12"', "bad \\u escape"),
        ("{}x", "after the value"),
        ("NaN", "unexpected character"),
        ("[Infinity]", "unexpected character"),
        ("-", "bad number"),
        ("{:1}", "expected an object key"),
        ("/* never closed", "unexpected character"),
    ],
)
def test_what_is_not_json_even_for_fastjson(text: str, fragment: str) -> None:
    with pytest.raises(JsonSyntaxError, match=re.escape(fragment)) as e:
        loads(text)
    assert isinstance(e.value, ValueError)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(JsonSyntaxError, match="nesting"):
        loads("[" * 100_000)
    with pytest.raises(JsonSyntaxError, match="nesting"):
        loads("{a:" * 100_000)  # the reference parser's path (a bare key)
    with pytest.raises(ValueError, match="nesting"):
        dumps(json.loads("[" * 300 + "]" * 300))
    nested = loads("[" * 150 + "]" * 150)
    for _ in range(149):
        (nested,) = nested
    assert nested == []


def test_objects_come_back_marked_as_javas_json() -> None:
    for text in ('{"a":{"b":[{"c":1}]}}', '{a:{"b":[{c:1}]}}'):  # the C fast path and the reference parser
        obj = loads(text)
        assert type(obj) is JsonObject and type(obj["a"]) is JsonObject and type(obj["a"]["b"][0]) is JsonObject
    assert type(loads('{"a":{}}', object_type=dict)["a"]) is dict


def test_undecodable_utf8_is_replaced_as_java_does() -> None:
    assert loads(b'"a\xffb"') == "a\ufffdb"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, indent=st.none() | st.integers(0, 2), ascii_only=st.booleans())
def test_the_reference_parser_agrees_with_the_c_parser_on_standard_json(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert parse(text) == json.loads(text) == loads(text)


@pytest.mark.parametrize(
    ("text", "parse_float", "expected"),
    [
        ('"T"', float, "T"),
        ("true", float, "true"),
        ("-3", float, "-3"),
        ("18446744073709551616", float, "18446744073709551616"),
        ("1.50", Decimal, "1.50"),  # a header's number: fastjson's BigDecimal, its text as written
        ("1e3", Decimal, "1E+3"),
        ("1.50", float, "1.5"),  # a body's: the float's repr
        ('{"b":[1,null,"x"],"a":{}}', float, '{"a":{},"b":[1,null,"x"]}'),
        ("[]", float, "[]"),
    ],
)
def test_a_json_value_in_a_java_string_field(text: str, parse_float: Any, expected: str) -> None:
    assert java_string(loads(text, parse_float=parse_float)) == expected


# --- writing -----------------------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1


def test_what_java_writes() -> None:
    assert dumps({"brokerAddrs": {1: "b", 0: "a"}}) == '{"brokerAddrs":{0:"a",1:"b"}}'
    assert dumps({"brokerAddrs": {1: "b", 0: "a"}}, standard=True) == '{"brokerAddrs":{"0":"a","1":"b"}}'
    # Fields sorted by name, nulls left out (in lists they stay), sets as arrays, bytes as base64, enums by name.
    assert dumps({"z": 1, "a": None, "m": [None, {3, 1, 2}, b"\x00\xff", Color.RED, (1.5, True)]}) == (
        '{"m":[null,[1,2,3],"AP8=","RED",[1.5,true]],"z":1}'
    )
    assert dumps([math.nan, math.inf]) == "[null,null]"  # fastjson writes no NaN
    assert dumps(2**64) == "18446744073709551616"  # longs stay numbers by default...
    assert dumps([2**53 - 1, 2**53, -(2**53)], standard=True) == (  # ...but not in the name server's standard form
        '[9007199254740991,"9007199254740992","-9007199254740992"]'
    )
    assert dumps(QueueData("b", 4, 4, 6)) == (
        '{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}'
    )
    with pytest.raises(TypeError, match="object"):
        dumps({"x": object()})


def test_string_escapes_are_fastjsons() -> None:
    assert dumps('q"b\\\b\f\n\r\t\x00\x01\x1f\x7f\x9f\xa0é😀') == (
        '"q\\"b\\\\\\b\\f\\n\\r\\t\\u0000\\u0001\\u001F\\u007F\\u009F\xa0é😀"'
    )
    # BrowserCompatible: everything outside printable ASCII escaped, astral characters as surrogate pairs.
    assert dumps("é😀~", standard=True) == '"\\u00E9\\uD83D\\uDE00~"'
    # A lone surrogate (JSON may carry one) is escaped, so the text still encodes to UTF-8.
    assert dumps("\ud800").encode() == b'"\\uD800"'
    assert loads(dumps("\ud800")) == "\ud800"


_JAVA_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(max_size=16)
    | st.floats(allow_nan=False, allow_infinity=False)
)  # fmt: skip


def _java_level(child: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        _JAVA_SCALARS
        | st.lists(child, max_size=4)
        | st.dictionaries(st.text(max_size=8), child, max_size=4)
        | st.dictionaries(st.integers(), child, max_size=4)  # Java's Map<Long,...>
        | st.frozensets(st.integers(), max_size=4)
    )


# Scalars, and containers of them nested 3 deep. (The strategy of each depth is made once, here: made at each
# draw, as a recursive composite did, making and validating them was most of the tests' time.)
_JAVA_VALUES = _java_level(_java_level(_java_level(_JAVA_SCALARS)))


def java_values() -> st.SearchStrategy[Any]:
    return _JAVA_VALUES


def as_read_back(v: Any, standard: bool) -> Any:
    """What a value written by dumps reads back as: Java's view of it."""
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, frozenset):
        return sorted(v) if not standard else [as_read_back(x, standard) for x in sorted(v)]
    if isinstance(v, list):
        return [as_read_back(x, standard) for x in v]
    if isinstance(v, dict):
        return {str(k): as_read_back(x, standard) for k, x in v.items() if x is not None}
    if standard and type(v) is int and abs(v) > 2**53 - 1:
        return str(v)
    return v


@settings(max_examples=300, deadline=None)
@given(value=java_values(), standard=st.booleans())
def test_what_dumps_writes_loads_reads(value: Any, standard: bool) -> None:
    text = dumps(value, standard=standard)
    assert loads(text) == as_read_back(value, standard)
    assert parse(text) == loads(text)
    if standard:
        assert text.isascii()
        assert json.loads(text) == loads(text)  # standard JSON for any parser


class Level(enum.IntEnum):
    HIGH = 2


class Flavor(enum.StrEnum):
    PLAIN = "p"


class MapWithToDict(dict[str, int]):
    """A map that also has a to_dict: written as the map it is."""

    def to_dict(self) -> dict[str, int]:
        return {"not": 1}


ODD_VALUES = [Color.RED, Level.HIGH, Flavor.PLAIN, QueueData("b", 4, 4, 6), 'q"\\\x7f\x9f\ud800',
              BatchAck("g", "t", "0", 5, 1, 0, 1700000000000, 60000, [0, 3]), bytearray(b"\x01"), MapWithToDict(a=1)]


_ANY_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(max_size=8) | st.floats()
    | st.integers(0, len(ODD_VALUES) - 1).map(ODD_VALUES.__getitem__)
)  # fmt: skip
_ODD_KEYS = st.integers(0, 1).map([Color.RED, Flavor.PLAIN].__getitem__)
_ANY_KEYS = st.text(max_size=6) | st.integers() | st.none() | _ODD_KEYS


def _any_level(child: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        _ANY_SCALARS
        | st.lists(child, max_size=4) | st.lists(child, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=6), child, max_size=5)
        | st.dictionaries(_ANY_KEYS, child, max_size=4)
        | st.dictionaries(st.text(max_size=4), child, max_size=3).map(JsonObject)
        | st.frozensets(st.integers(), max_size=3)
    )  # fmt: skip


_ANY_VALUES = _any_level(_any_level(_any_level(_ANY_SCALARS)))


def any_values() -> st.SearchStrategy[Any]:
    """java_values and what else reaches dumps: enums (whose names fastjson writes), body objects, dict subclasses,
    maps of mixed or None keys, tuples, NaN, strings to escape, nested 3 deep. (Int and str enums are drawn as
    their index into ODD_VALUES: hypothesis cannot record a value of an int or str subclass it drew itself.)"""
    return _ANY_VALUES


@settings(max_examples=300, deadline=None)
@given(value=any_values())
def test_the_fast_writer_writes_what_the_reference_writes(value: Any) -> None:
    for standard in (False, True):
        try:
            expected: object = dumps_reference(value, standard)
        except (TypeError, ValueError) as e:
            expected = type(e)
        try:
            got: object = dumps(value, standard)
        except (TypeError, ValueError) as e:
            got = type(e)
        assert got == expected


def test_a_batch_ack_body_is_written_by_the_fast_writer_as_java_writes_it() -> None:
    body = BatchAckMessageRequestBody("broker-a", [BatchAck("g", "TopicA", "0", 5, 1, 0, 1700000000000, 60000, [0, 3])])
    assert dumps(body) == dumps_reference(body) == (
        '{"acks":[{"b":"CQ==","c":"g","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":0,"so":5,"t":"TopicA"}],'
        '"brokerName":"broker-a"}'
    )
    assert dumps({"a": None, "b": []}) == dumps_reference({"a": None, "b": []}) == '{"b":[]}'
    assert dumps({}) == "{}"
    # A str enum equal to a key written before is still written by its name.
    assert dumps({"p": 1}) == '{"p":1}' and dumps({Flavor.PLAIN: 1}) == dumps_reference({Flavor.PLAIN: 1})


def test_dumps_pretty_writes_fastjsons_pretty_format() -> None:
    # The text fastjson 1.2.69 writes for this map with toJSONString(map, true) (checked with Apache
    # RocketMQ's jar): number-keyed maps keep their entries on the opening line, string keys one a line.
    from pocketmq.remoting.fastjson import dumps_pretty

    value = {"brokerAddrs": {0: "a:1", 1: "b:2"}, "empty": {}, "emptyList": [], "list": [1, 2], "n": 5, "s": "x",
             "gone": None}
    assert dumps_pretty(value) == (
        '{\n\t"brokerAddrs":{0:"a:1",1:"b:2"\n\t},\n\t"empty":{},\n\t"emptyList":[],\n\t"list":[\n\t\t1,\n\t\t2\n\t],'
        '\n\t"n":5,\n\t"s":"x"\n}'
    )
    nested = dumps_pretty({"brokerDatas": [BrokerData("c", "broker-a", {0: "h:1"})]})
    assert nested == ('{\n\t"brokerDatas":[\n\t\t{\n\t\t\t"brokerAddrs":{0:"h:1"\n\t\t\t},'
                      '\n\t\t\t"brokerName":"broker-a",\n\t\t\t"cluster":"c"\n\t\t}\n\t]\n}')
