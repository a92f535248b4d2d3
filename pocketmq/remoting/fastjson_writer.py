"""Writing the JSON that RocketMQ speaks: ``dumps`` (fastjson's output; the rules are in ``fastjson``'s docstring),
``dumps_reference`` (the same without the fast path) and ``dumps_pretty`` (mqadmin's printing)."""

from __future__ import annotations

import base64
import enum
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

# Nesting beyond this is refused: the reader and the writer recurse (two frames a level), and must stay clear of
# Python's recursion limit. RocketMQ's bodies nest five levels at most.
MAX_DEPTH = 200
_MAX_SAFE_INTEGER = 2**53 - 1  # BrowserCompatible writes integers beyond +-this as strings


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
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'  # (printable ASCII but these two: nothing either form escapes, no regex pass)
    return '"' + (_ESCAPE_STANDARD if standard else _ESCAPE).sub(_escape, s) + '"'


# `"key":` of the map keys and header field names written so far (bodies and headers repeat a few dozen names);
# a long one is not kept, and the map is emptied when full.
_QUOTED_KEYS: dict[str, str] = {}
_MAX_QUOTED_KEYS = 4096
_MAX_KEPT_KEY_LENGTH = 128


def quoted_key(k: str) -> str:
    """``quote(k) + ":"``, kept for the next map or header with that key."""
    head = _QUOTED_KEYS.get(k)
    if head is None:
        head = quote(k) + ":"
        if len(k) <= _MAX_KEPT_KEY_LENGTH:
            if len(_QUOTED_KEYS) >= _MAX_QUOTED_KEYS:
                _QUOTED_KEYS.clear()
            _QUOTED_KEYS[k] = head
    return head


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


def _write_plain(v: Any, out: Callable[[str], None], depth: int) -> None:
    """``_write(v, ..., standard=False)`` for the values bodies are made of: dicts with str keys, lists, tuples,
    str, int, bool, float, None, bytes, and objects with a ``to_dict`` (a request body). Each test is of the exact
    type, where ``_write`` tests each value against the ABCs it may be (what a native pop's batch ack cost:
    bench/README.md). Anything else raises _NotPlain:
    ``_write`` writes the whole value."""
    t = type(v)
    if t is str:
        out(quote(v))
    elif t is int:
        out(str(v))
    elif v is None:
        out("null")
    elif t is bool:
        out("true" if v else "false")
    elif depth > MAX_DEPTH:
        raise _NotPlain  # (_write says what is wrong)
    elif t is dict:
        _write_plain_map(v, out, depth + 1)
    elif t in (list, tuple):
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
    elif not isinstance(v, _WRITTEN_BEFORE_TO_DICT) and callable(to_dict := getattr(v, "to_dict", None)):
        _write_plain(to_dict(), out, depth + 1)
    else:
        raise _NotPlain


def _write_plain_map(m: dict[Any, Any], out: Callable[[str], None], depth: int) -> None:
    """``_write_map(m, ..., standard=False)`` when every key is a str; _NotPlain otherwise."""
    try:
        keys = sorted(m)
    except TypeError:
        raise _NotPlain from None
    sep = "{"
    for k in keys:
        value = m[k]
        if value is None:
            continue
        if type(k) is not str:  # (also before the kept keys: a str enum equal to one is written by its name)
            raise _NotPlain
        out(sep + quoted_key(k))
        sep = ","
        kind = type(value)  # (the common values here, not through a call)
        if kind is int:
            out(str(value))
        elif kind is str:
            out(quote(value))
        else:
            _write_plain(value, out, depth)
    out("{}" if sep == "{" else "}")


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
