"""The JSON that RocketMQ speaks (RemotingSerializable, which is fastjson 1.2.69 with its defaults).

Reading, ``loads``: as lenient as fastjson's parser with its default features, since clients write what their own
JSON library makes of Java's output:

- map keys without quotes: numbers (``{0:"127.0.0.1:10911"}``, fastjson's form of a ``Map<Long,String>``) and
  identifiers (``{a:1}``); keys always come back as str (a bare number as its decimal text, as JavaScript reads
  it), an object or array used as a key as its JSON text;
- strings in single quotes, the escapes ``\\xHH``, ``\\v``, ``\\0``-``\\7`` and ``\\'``, raw control characters;
- extra commas (``[1,,2]``, ``{"a":1,}``), ``/* */`` and ``//`` comments, ``Set[...]``/``TreeSet[...]`` for arrays,
  the number suffixes ``L S B F D``, ``undefined`` for null, and whitespace (a C++ client's ``\\n``) and control
  characters at the end;
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

import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .errors import RemotingError
from .fastjson_writer import MAX_DEPTH, dumps, dumps_pretty, dumps_reference, quote, quoted_key

__all__ = ["MAX_DEPTH", "JsonObject", "JsonSyntaxError", "c_scanner", "dumps", "dumps_pretty", "dumps_reference",
           "java_string", "loads", "parse", "quote", "quoted_key"]


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


def java_string(v: object) -> str:
    """What fastjson 1.2.69 puts in a Java ``String`` field (StringCodec, castToString) for a JSON value that is not
    null: a string as it is, ``true``/``false``, a number as its text, an object or array as its JSON text. A
    number with a fraction or exponent is a BigDecimal there, whose text is the one written: read with
    ``parse_float=Decimal`` (the headers) it is kept to the letter; read as a float (the bodies) it is the
    float's repr, "inf" for one past a double (1e999, which Java keeps as "1E+999")."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float | Decimal):
        return str(v)
    return dumps(v)


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
        # After the value fastjson's lexer steps over control characters as it does over whitespace (a C string's
        # NUL after a header, say): nextToken's default case
        while (c := self.peek()) and (c <= "\x1f" or c == "\x7f"):
            self.pos += 1
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
