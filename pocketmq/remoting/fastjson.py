"""The JSON that RocketMQ speaks (RemotingSerializable, which is fastjson 1.2.69 with its defaults).

Reading, ``loads``: as lenient as fastjson's parser with its default features, since clients write what their own
JSON library makes of Java's output:

- map keys without quotes: numbers (``{0:"127.0.0.1:10911"}``, fastjson's form of a ``Map<Long,String>``) and
  identifiers (``{a:1}``); keys always come back as str (a bare number as its decimal text, as JavaScript reads
  it), an object or array used as a key as its JSON text;
- strings in single quotes, the escapes ``\\xHH``, ``\\v``, ``\\0``-``\\7`` and ``\\'``, raw control characters;
- extra commas (``[1,,2]``, ``{"a":1,}``), ``/* */`` and ``//`` comments, ``Set[...]``/``TreeSet[...]`` for arrays,
  the number suffixes ``L S B F D``, ``undefined`` for null, and whitespace (a C++ client's ``\\n``) at the end;
- integers of any size exactly (never through a float: Java writes longs above 2^53 as plain numbers).

Objects come back as ``JsonObject``, a dict that says it came from Java's JSON, so a body reader can take the
forms fastjson would cast (enum ordinals, numbers in strings: ``body.Reader``). Invalid text raises
``JsonSyntaxError`` (a ValueError) with the position.

Standard JSON, which is nearly every body, goes through the C parser of ``json``; only what it refuses goes
through ``parse``, the readable parser of the whole dialect (a property test checks the two agree).

Writing, ``dumps``: what Java writes. fastjson's default (``standard=False``): non-string map keys without quotes
(``{0:"addr"}``), non-ASCII as raw UTF-8, control characters and U+007F-U+009F as ``\\uXXXX``. The name server's
form for new clients (``standard=True``, fastjson's BrowserCompatible + QuoteFieldNames + MapSortField): keys
quoted, everything outside printable ASCII escaped, integers beyond +-(2^53-1) as strings. In both, map entries
whose value is None are left out, keys are sorted (bean fields come out sorted by name; a HashMap has no order to
keep), sets are arrays, bytes are base64 strings, enums their names, and an object with ``to_dict()`` its dict.
"""

from __future__ import annotations

import base64
import enum
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from .errors import RemotingError

# Nesting beyond this is refused: the reader and the writer recurse (two frames a level), and must stay clear of
# Python's recursion limit. RocketMQ's bodies nest five levels at most.
MAX_DEPTH = 200
_MAX_SAFE_INTEGER = 2**53 - 1  # BrowserCompatible writes integers beyond +-this as strings


class JsonSyntaxError(RemotingError, ValueError):
    """Text that is not JSON in fastjson's dialect; ``pos`` is the offending character's index."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(f"{reason} at character {pos}")
        self.reason = reason
        self.pos = pos


class JsonObject(dict[str, Any]):
    """A JSON object read from Java's JSON (fastjson's ``JSONObject``); the type marks the dialect."""

    __slots__ = ()


# --- reading ----------------------------------------------------------------------------------------------------


def loads(
    data: str | bytes | bytearray | memoryview,
    object_type: type[dict[str, Any]] = JsonObject,
    parse_float: Callable[[str], Any] = float,
) -> Any:
    """The value of a fastjson-dialect JSON text. Bytes are UTF-8, undecodable bytes replaced (as Java's
    ``new String(bytes, UTF_8)`` does). Numbers with a fraction or exponent go through ``parse_float``."""
    text = data if isinstance(data, str) else str(data, "utf-8", "replace")
    try:
        return _c_decoder(object_type, parse_float).decode(text)
    except (ValueError, RecursionError):
        pass
    return parse(text, object_type, parse_float)


# json.loads with any option builds a JSONDecoder per call (~a third of reading a small header); a decoder holds
# no state between calls, so one per (object_type, parse_float) serves every call and thread. The callers pass
# a few constants; past that many, decoders are made per call rather than kept.
_C_DECODERS: dict[tuple[type, Callable[[str], Any]], json.JSONDecoder] = {}
_MAX_C_DECODERS = 16


def _c_decoder(object_type: type[dict[str, Any]], parse_float: Callable[[str], Any]) -> json.JSONDecoder:
    decoder = _C_DECODERS.get((object_type, parse_float))
    if decoder is None:
        decoder = json.JSONDecoder(
            object_pairs_hook=None if object_type is dict else object_type,
            parse_float=parse_float,
            parse_constant=_refuse_constant,
            strict=False,
        )
        if len(_C_DECODERS) < _MAX_C_DECODERS:
            _C_DECODERS[(object_type, parse_float)] = decoder
    return decoder


def c_scanner(object_type: type[dict[str, Any]], parse_float: Callable[[str], Any]) -> Callable[[str, int], Any]:
    """The scanner behind ``loads``' C decoder: ``scan(text, index)`` is ``(value, end)`` for the JSON value at
    ``index`` (StopIteration when none starts there, ValueError when it is malformed), without the whitespace
    handling and end check ``JSONDecoder.decode`` wraps around it. For a caller that checks the end itself and
    falls back to ``loads`` on anything else."""
    scan: Callable[[str, int], Any] = _c_decoder(object_type, parse_float).scan_once  # type: ignore[attr-defined]
    return scan


def _refuse_constant(name: str) -> Any:
    # json.loads would take NaN and Infinity; neither fastjson nor Java writes them.
    raise ValueError(f"{name} is not JSON")


def parse(
    text: str, object_type: type[dict[str, Any]] = JsonObject, parse_float: Callable[[str], Any] = float
) -> Any:
    """``loads`` without the fast path: the reference reader of the whole dialect."""
    parser = _Parser(text, object_type, parse_float)
    try:
        return parser.document()
    except RecursionError:  # (only from a caller already deep in the stack: MAX_DEPTH is meant to come first)
        raise parser.fail("nesting too deep") from None


# Whitespace as fastjson skips it, comments included.
_SKIP = re.compile(r"(?:[ \t\n\r\f\b]+|/\*.*?\*/|//[^\n]*)*", re.S)
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?([LSBFD])?")
_IDENT = re.compile(r"(?:[^\W\d]|\$)(?:\w|\$)*")
_RUN = {'"': re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
_SIMPLE_ESCAPES = {
    '"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "F": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", **{str(i): chr(i) for i in range(8)},
}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}
_SET_PREFIXES = ("Set[", "TreeSet[")


class _Parser:
    __slots__ = ("text", "pos", "object_type", "parse_float")

    def __init__(self, text: str, object_type: type[dict[str, Any]], parse_float: Callable[[str], Any]) -> None:
        self.text = text
        self.pos = 0
        self.object_type = object_type
        self.parse_float = parse_float

    def fail(self, reason: str, pos: int | None = None) -> JsonSyntaxError:
        return JsonSyntaxError(reason, self.pos if pos is None else pos)

    def skip(self) -> None:
        m = _SKIP.match(self.text, self.pos)
        if m is not None:
            self.pos = m.end()

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def document(self) -> Any:
        value = self.value(0)
        if self.peek():
            raise self.fail("unexpected text after the value")
        return value

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        c = self.peek()
        if c == "{":
            return self.object(depth + 1)
        if c == "[":
            self.pos += 1
            return self.array(depth + 1)
        if c in ('"', "'"):
            return self.string(c)
        if c == "-" or c.isdigit():
            return self.number()
        if not c:
            raise self.fail("unexpected end of text")
        for prefix in _SET_PREFIXES:
            if self.text.startswith(prefix, self.pos):
                self.pos += len(prefix)
                return self.array(depth + 1)
        m = _IDENT.match(self.text, self.pos)
        if m is not None and m.group() in _LITERALS:
            self.pos = m.end()
            return _LITERALS[m.group()]
        raise self.fail(f"unexpected character {c!r}")

    def object(self, depth: int) -> dict[str, Any]:
        self.pos += 1  # {
        pairs: list[tuple[str, Any]] = []
        after_comma = True
        while True:
            c = self.peek()
            if c == ",":  # fastjson's AllowArbitraryCommas
                self.pos += 1
                after_comma = True
                continue
            if c == "}":
                self.pos += 1
                return self.object_type(pairs)
            if not after_comma:
                raise self.fail("expected ',' or '}'")
            key = self.key(depth)
            if self.peek() != ":":
                raise self.fail("expected ':' after an object key")
            self.pos += 1
            pairs.append((key, self.value(depth)))
            after_comma = False

    def key(self, depth: int) -> str:
        c = self.peek()
        if c in ('"', "'"):
            return self.string(c)
        if c == "-" or c.isdigit():
            start = self.pos
            n = self.number()
            return str(n) if type(n) is int else self.text[start : self.pos].rstrip("LSBFD")
        if c in ("{", "["):
            return dumps(self.value(depth), standard=True)
        m = _IDENT.match(self.text, self.pos)
        if m is None:
            raise self.fail("expected an object key")
        self.pos = m.end()
        return m.group()

    def array(self, depth: int) -> list[Any]:
        items: list[Any] = []
        after_comma = True
        while True:
            c = self.peek()
            if c == ",":
                self.pos += 1
                after_comma = True
                continue
            if c == "]":
                self.pos += 1
                return items
            if not after_comma:
                raise self.fail("expected ',' or ']'")
            items.append(self.value(depth))
            after_comma = False

    def number(self) -> Any:
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            raise self.fail("bad number")
        self.pos = m.end()
        fraction, exponent, suffix = m.groups()
        digits = m.group()[: -1 if suffix else None]
        try:
            if fraction or exponent or suffix in ("F", "D"):
                return self.parse_float(digits)
            return int(digits)
        except (ValueError, ArithmeticError) as e:
            raise self.fail(f"bad number ({e})", m.start()) from None

    def string(self, quote: str) -> str:
        start = self.pos
        self.pos += 1
        run = _RUN[quote]
        text = self.text
        parts: list[str] = []
        while True:
            m = run.match(text, self.pos)
            assert m is not None  # (the pattern matches the empty string)
            parts.append(m.group())
            self.pos = m.end()
            if self.pos >= len(text):
                raise self.fail("unterminated string", start)
            if text[self.pos] == quote:
                self.pos += 1
                return "".join(parts)
            # A backslash.
            esc = text[self.pos + 1 : self.pos + 2]
            simple = _SIMPLE_ESCAPES.get(esc)
            if simple is not None:
                parts.append(simple)
                self.pos += 2
            elif esc in ("u", "x"):
                width = 4 if esc == "u" else 2
                digits = text[self.pos + 2 : self.pos + 2 + width]
                if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise self.fail(f"bad \\{esc} escape")
                code = int(digits, 16)
                self.pos += 2 + width
                low = text[self.pos + 2 : self.pos + 6] if text.startswith("\\u", self.pos) else ""
                if 0xD800 <= code <= 0xDBFF and len(low) == 4 and _is_low_surrogate(low):
                    # An escaped UTF-16 pair is one character, as json reads it.
                    code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                    self.pos += 6
                parts.append(chr(code))
            else:
                raise self.fail(f"bad escape \\{esc}" if esc else "unterminated string")


def _is_low_surrogate(digits: str) -> bool:
    return all(d in "0123456789abcdefABCDEF" for d in digits) and 0xDC00 <= int(digits, 16) <= 0xDFFF


# --- writing ----------------------------------------------------------------------------------------------------

# fastjson's SerializeWriter escapes '"', '\\', the C0 controls and U+007F-U+009F (short forms where JSON has
# them, else \\uXXXX with upper-case digits); lone surrogates are escaped too, so any str encodes to UTF-8.
_ESCAPE = re.compile('["\\\\\x00-\x1f\x7f-\x9f\ud800-\udfff]')
# BrowserCompatible: everything outside printable ASCII.
_ESCAPE_STANDARD = re.compile('["\\\\]|[^\x20-\x7e]')
_SHORT_FORMS = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    short = _SHORT_FORMS.get(c)
    if short is not None:
        return short
    n = ord(c)
    if n > 0xFFFF:  # a UTF-16 surrogate pair, as Java holds it
        n -= 0x10000
        return f"\\u{0xD800 + (n >> 10):04X}\\u{0xDC00 + (n & 0x3FF):04X}"
    return f"\\u{n:04X}"


def quote(s: str, standard: bool = False) -> str:
    """``s`` as a JSON string the way fastjson writes it."""
    return '"' + (_ESCAPE_STANDARD if standard else _ESCAPE).sub(_escape, s) + '"'


def dumps(obj: object, standard: bool = False) -> str:
    """``obj`` as Java's fastjson writes it (see the module's docstring)."""
    out: list[str] = []
    if not standard:
        try:
            _write_plain(obj, out.append, 0)
            return "".join(out)
        except _NotPlain:
            out.clear()
    _write(obj, out, standard, 0)
    return "".join(out)


def dumps_reference(obj: object, standard: bool = False) -> str:
    """``dumps`` without the fast path: the readable writer of every case (a property test checks the two agree)."""
    out: list[str] = []
    _write(obj, out, standard, 0)
    return "".join(out)


class _NotPlain(Exception):
    """A value ``_write_plain`` leaves to ``_write``."""


# What _write tests for before it looks for a to_dict: an object of none of these goes by its to_dict there.
_WRITTEN_BEFORE_TO_DICT = (Mapping, list, tuple, set, frozenset, enum.Enum, int, float, Decimal, str, bytes,
                           bytearray, memoryview)


# `"key":` of the keys written so far (bodies repeat a few dozen field names); emptied when full.
_PLAIN_KEYS: dict[str, str] = {}
_MAX_PLAIN_KEYS = 1024


def _plain_key(k: object) -> str:
    if type(k) is not str:
        raise _NotPlain
    head = quote(k) + ":"
    if len(_PLAIN_KEYS) >= _MAX_PLAIN_KEYS:
        _PLAIN_KEYS.clear()
    _PLAIN_KEYS[k] = head
    return head


def _write_plain(v: Any, out: Callable[[str], None], depth: int) -> None:
    """``_write(v, ..., standard=False)`` for the values bodies are made of: dicts with str keys, lists, tuples,
    str, int, bool, float, None, bytes, and objects with a ``to_dict`` (a request body). Each test is of the exact
    type, and a string without anything to escape is written as it is, where ``_write`` tests each value against
    the ABCs it may be (what a native pop's batch ack cost: bench/README.md). Anything else raises _NotPlain:
    ``_write`` writes the whole value."""
    t = type(v)
    if t is str:
        if v.isascii() and v.isprintable() and '"' not in v and "\\" not in v:
            out('"' + v + '"')
        else:
            out(quote(v))
    elif t is int:
        out(str(v))
    elif v is None:
        out("null")
    elif t is bool:
        out("true" if v else "false")
    elif t is dict:
        if depth > MAX_DEPTH:
            raise _NotPlain
        try:
            keys = sorted(v)
        except TypeError:
            raise _NotPlain from None
        sep = "{"
        for k in keys:
            value = v[k]
            if value is None:
                continue
            head = _PLAIN_KEYS.get(k)
            if head is None:
                head = _plain_key(k)
            out(sep + head)
            sep = ","
            # (the common values here, not through a call)
            kind = type(value)
            if kind is int:
                out(str(value))
            elif kind is str and value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
                out('"' + value + '"')
            else:
                _write_plain(value, out, depth + 1)
        out("{}" if sep == "{" else "}")
    elif t is list or t is tuple:
        if depth > MAX_DEPTH:
            raise _NotPlain
        out("[")
        for i, item in enumerate(v):
            if i:
                out(",")
            _write_plain(item, out, depth + 1)
        out("]")
    elif t is float:
        out(repr(v) if math.isfinite(v) else "null")
    elif t is bytes:
        out('"' + base64.b64encode(v).decode("ascii") + '"')
    elif depth <= MAX_DEPTH and not isinstance(v, _WRITTEN_BEFORE_TO_DICT) and callable(
            to_dict := getattr(v, "to_dict", None)):
        _write_plain(to_dict(), out, depth + 1)
    else:
        raise _NotPlain


def _write(v: object, out: list[str], standard: bool, depth: int) -> None:
    t = type(v)
    if t is str:
        out.append(quote(v, standard))  # type: ignore[arg-type]
    elif v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(_int(v, standard))  # type: ignore[arg-type]
    elif depth > MAX_DEPTH:
        raise ValueError(f"nesting deeper than {MAX_DEPTH}")
    elif isinstance(v, Mapping):
        _write_map(v, out, standard, depth + 1)
    elif isinstance(v, list | tuple | set | frozenset):
        items = _sorted(v) if isinstance(v, set | frozenset) else v
        out.append("[")
        for i, item in enumerate(items):
            if i:
                out.append(",")
            _write(item, out, standard, depth + 1)
        out.append("]")
    elif isinstance(v, enum.Enum):
        out.append(quote(v.name, standard))
    elif isinstance(v, bool):
        out.append("true" if v else "false")
    elif isinstance(v, int):
        out.append(_int(int(v), standard))
    elif isinstance(v, float):
        out.append(repr(v) if math.isfinite(v) else "null")  # fastjson writes NaN and infinities as null
    elif isinstance(v, Decimal):
        out.append(str(v) if v.is_finite() else "null")
    elif isinstance(v, str):
        out.append(quote(str(v), standard))
    elif isinstance(v, bytes | bytearray | memoryview):
        out.append('"' + base64.b64encode(v).decode("ascii") + '"')
    elif callable(to_dict := getattr(v, "to_dict", None)):
        _write(to_dict(), out, standard, depth + 1)
    else:
        raise TypeError(f"{type(v).__name__} is not JSON serializable")


def _int(n: int, standard: bool) -> str:
    if standard and not -_MAX_SAFE_INTEGER <= n <= _MAX_SAFE_INTEGER:
        return f'"{n}"'
    return str(n)


def _write_map(m: Mapping[Any, Any], out: list[str], standard: bool, depth: int) -> None:
    out.append("{")
    first = True
    for k, v in _sorted(m.items(), key=lambda kv: kv[0]):
        if v is None:
            continue
        if not first:
            out.append(",")
        first = False
        if type(k) is str or isinstance(k, str) and not isinstance(k, enum.Enum):
            out.append(quote(str(k), standard))
        else:
            # fastjson writes a non-string key as its JSON value, unquoted; standard JSON needs a string.
            text = dumps(k, standard)
            out.append(quote(text.strip('"') if text.startswith('"') else text, standard) if standard else text)
        out.append(":")
        _write(v, out, standard, depth)
    out.append("}")


def _sorted(items: Any, key: Callable[[Any], Any] | None = None) -> list[Any]:
    """Sorted when the items compare (keys of one type), else in their own order."""
    listed: list[Any] = list(items)
    try:
        return sorted(listed, key=key)
    except TypeError:
        return listed


def dumps_pretty(obj: object) -> str:
    """``obj`` as fastjson's ``toJSONString(obj, true)`` (PrettyFormat) writes it, as mqadmin prints bodies
    (topicRoute): tabs; each entry of a string-keyed object and each array item on a line of its own; the entries
    of a map with other keys (``{0:"addr"}``) on the opening line; empty objects and arrays as ``{}`` and ``[]``."""
    out: list[str] = []
    _write_pretty(obj, out, 0)
    return "".join(out)


def _write_pretty(v: object, out: list[str], indent: int) -> None:
    if indent > MAX_DEPTH:
        raise ValueError(f"nesting deeper than {MAX_DEPTH}")
    if not isinstance(v, Mapping | list | tuple | set | frozenset | str | bytes | enum.Enum):
        to_dict = getattr(v, "to_dict", None)
        if callable(to_dict):
            v = to_dict()
    if isinstance(v, Mapping):
        entries = [(k, val) for k, val in _sorted(v.items(), key=lambda kv: kv[0]) if val is not None]
        if not entries:
            out.append("{}")
            return
        out.append("{")
        for i, (k, val) in enumerate(entries):
            if i:
                out.append(",")
            if isinstance(k, str) and not isinstance(k, enum.Enum):
                out.append("\n" + "\t" * (indent + 1) + quote(k))
            else:
                out.append(dumps(k))
            out.append(":")
            _write_pretty(val, out, indent + 1)
        out.append("\n" + "\t" * indent + "}")
    elif isinstance(v, list | tuple | set | frozenset):
        items = _sorted(v) if isinstance(v, set | frozenset) else list(v)
        if not items:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(items):
            out.append(("," if i else "") + "\n" + "\t" * (indent + 1))
            _write_pretty(item, out, indent + 1)
        out.append("\n" + "\t" * indent + "]")
    else:
        _write(v, out, False, indent)
