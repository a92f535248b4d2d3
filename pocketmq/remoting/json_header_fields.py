"""A JSON header's fields read as fastjson 1.2.69 reads them into RocketMQ 4.9.7's ``RemotingCommand`` bean
(``JSON.parseObject(text, RemotingCommand.class)``), the readable reference behind ``remoting_serializable``'s
decoders. What fastjson cannot read fails the whole frame, and 4.9.7's NettyDecoder closes the connection; what it
can is read, whatever the JSON type:

- ``code``, ``version``, ``opaque``, ``flag`` (Java ints, IntegerCodec): an integer in the int's range; a fraction
  truncated (BigDecimal.intValue); ``true``/``false`` as 1/0; a string through Integer.parseInt, after its commas
  and a trailing ``.0...`` are dropped; ``null``, ``""`` and ``"null"`` leave the field at its default (0; the
  opaque at a counter of the process, Java's ``requestId``: an answer no client waits for). An object, an array, a
  number past the int, a string parseInt refuses: unreadable.
- ``language`` and ``serializeTypeCurrentRPC`` (enums): a name (an unknown one reads as null), an ordinal of the
  enum, ``null``; anything else unreadable. (The frame's type byte says the serialize type, not this field.)
- ``remark`` (a String): any JSON value, an object or array as its JSON text.
- ``extFields`` (a ``HashMap<String,String>``): an object, each value as its text (``null`` values left out), or
  ``null``; anything else unreadable.
- ``body`` (``setBody(byte[])``; the frame's own body replaces it): text of characters up to U+00FF (base64, its
  decoder's table), an array of numbers or ``null``.
- A key given twice is read twice, in order: an occurrence that cannot be read fails the header even when a later
  one could; the last one read stands. Other keys are ignored.
"""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

from pocketmq.common.java_numbers import INT_MAX, INT_MIN, wrap_int

from . import fastjson
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand
from .errors import MalformedFrame

_LANGUAGE_CODES = {lc.name: int(lc) for lc in LanguageCode}
_LANGUAGES = len(LanguageCode)
_SERIALIZE_TYPES = 2  # 4.9.7's SerializeType: JSON, ROCKETMQ
_PARSE_INT = re.compile(r"[+-]?[0-9]+")
_TRAILING_ZEROS = re.compile(r"\.0*$")  # fastjson's NUMBER_WITH_TRAILING_ZEROS_PATTERN
# fastjson's base64 decoder looks each character up in a table of 256 (one past it fails)
_BASE64_CHARS = re.compile(r"[\x00-\xff]*")
# RemotingCommand's requestId: a header without an opaque keeps the one its construction drew
_request_ids = itertools.count()


class Occurrences(dict[str, Any]):
    """A JSON object that also keeps its entries in order (``pairs``), a key given twice twice."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


class _Unreadable(Exception):
    pass


def java_int(v: object) -> int | None:
    """A JSON value in a Java int field, as fastjson's IntegerCodec casts it; None: the field keeps its default."""
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        n = v
    elif isinstance(v, Decimal):
        if not v.is_finite():
            raise _Unreadable
        scale = -int(v.as_tuple().exponent)
        if -100 <= scale <= 100:
            n = wrap_int(int(v))  # BigDecimal.intValue: truncated, the low 32 bits
        elif v != int(v):
            raise _Unreadable  # intValueExact
        else:
            n = int(v)
    elif isinstance(v, str):
        if v in ("", "null", "NULL"):
            return None
        text = _TRAILING_ZEROS.sub("", v.replace(",", ""))
        if not _PARSE_INT.fullmatch(text):
            raise _Unreadable
        n = int(text)
    else:
        raise _Unreadable
    if not INT_MIN <= n <= INT_MAX:
        raise _Unreadable
    return n


def _enum(v: object, names: dict[str, int] | None, size: int) -> int | None:
    """An enum field: its ordinal, or None for a name it does not have, or for null."""
    if v is None:
        return None
    if isinstance(v, str):
        return names.get(v) if names is not None else None
    if type(v) is int and 0 <= v < size:
        return v
    raise _Unreadable


def _read(name: str, v: Any, fields: dict[str, Any]) -> None:
    """One occurrence of a key, read into ``fields`` (a field left at its default is not set)."""
    if name in ("code", "version", "opaque", "flag"):
        n = java_int(v)
        if n is not None:
            fields[name] = n
    elif name == "language":
        fields[name] = _enum(v, _LANGUAGE_CODES, _LANGUAGES)
    elif name == "serializeTypeCurrentRPC":
        _enum(v, None, _SERIALIZE_TYPES)
    elif name == "remark":
        fields[name] = None if v is None else fastjson.java_string(v)
    elif name == "extFields":
        if v is not None and not isinstance(v, dict):
            raise _Unreadable
        fields[name] = {} if v is None else {k: fastjson.java_string(x) for k, x in v.items() if x is not None}
    elif name == "body" and not (
        v is None or (isinstance(v, str) and _BASE64_CHARS.fullmatch(v))
        or (isinstance(v, list) and all(type(x) is int for x in v))
    ):
        raise _Unreadable


def _where(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    """The opaque and flag of a header that cannot be read, where they can be (for the error only)."""
    out = []
    for name, default in (("opaque", None), ("flag", 0)):
        try:
            n = java_int(obj.get(name))
        except _Unreadable:
            n = None
            default = None
        out.append(default if n is None else n)
    return out[0], out[1]


def command_of(obj: object) -> RemotingCommand:
    """The command of a JSON header's value (``Occurrences`` keep a key given twice; a plain dict reads each key
    once); MalformedFrame when fastjson could not read it."""
    if not isinstance(obj, dict):
        raise MalformedFrame(f"JSON header is a {type(obj).__name__}, not an object")
    fields: dict[str, Any] = {}
    pairs = obj.pairs if isinstance(obj, Occurrences) else obj.items()
    for name, v in pairs:
        try:
            _read(name, v, fields)
        except _Unreadable:
            r = repr(v)
            raise MalformedFrame(f"fastjson cannot read {name!r} from {r if len(r) <= 60 else r[:57] + '...'}",
                                 *_where(obj)) from None
    opaque = fields.get("opaque")
    language = fields.get("language", int(LanguageCode.JAVA))
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(fields.get("code", 0), int(LanguageCode.OTHER) if language is None else language,
                           fields.get("version", 0), next(_request_ids) if opaque is None else opaque,
                           fields.get("flag", 0), fields.get("remark"), fields.get("extFields", {}), None,
                           SerializeType.JSON)
