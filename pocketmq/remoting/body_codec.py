"""Bodies on the wire: ``encode_body`` / ``decode_body`` in each dialect (msgpack, fastjson, standard JSON) and
the ``Reader`` every body class's ``from_dict`` checks its fields with (pocketmq/remoting/body.py says how the
dialects differ)."""

from __future__ import annotations

import base64
import binascii
import builtins
import math
import re
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Protocol, TypeVar

import msgpack

from pocketmq.common.java_numbers import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from pocketmq.common.mq_version import V4_9_4

from . import fastjson
from .codes import BodyDialect
from .errors import BodyError
from .fastjson import JsonObject


class _BodyClass(Protocol):
    @classmethod
    def from_dict(cls, obj: object, path: str = ...) -> Any: ...


B = TypeVar("B")
_MISSING: Any = object()


def encode_body(obj: object, dialect: BodyDialect = BodyDialect.MSGPACK) -> bytes:
    """``obj`` in ``dialect``: msgpack, or Java's JSON (``fastjson.dumps``); body classes are converted with their
    ``to_dict()``. ``RemotingCommand.encode_body`` picks the dialect of a conversation."""
    if dialect == BodyDialect.MSGPACK:
        to_dict = getattr(obj, "to_dict", None)
        if to_dict is not None:
            obj = to_dict()
        return msgpack.packb(obj, use_bin_type=True, default=_msgpack_key)
    if dialect == BodyDialect.FASTJSON:
        # A body class may write its own text (BatchAckMessageRequestBody: every native pop's ack), the same as
        # fastjson.dumps of it (tests/remoting/test_remoting_pop_body.py), or None to leave it to dumps.
        to_fastjson: Callable[[], str | None] | None = getattr(obj, "to_fastjson", None)
        if to_fastjson is not None and (text := to_fastjson()) is not None:
            return text.encode("utf-8")
    return fastjson.dumps(obj, standard=dialect == BodyDialect.STANDARD_JSON).encode("utf-8")


def encode_body_with_parts(obj: dict[str, object], parts_key: str, parts: list[bytes],
                           dialect: BodyDialect = BodyDialect.MSGPACK) -> bytes:
    """``encode_body(obj)`` where ``obj[parts_key]`` is a list given as its items already encoded, each by
    ``encode_body`` in ``dialect``: a body too large to encode in one go on an event loop is encoded a slice of
    items at a time elsewhere (a pull thread, between which the loop runs) and joined here. The same bytes as
    ``encode_body`` of the whole (``obj`` plain: its keys strings, the body class's to_dict order)."""
    if dialect == BodyDialect.MSGPACK:
        packer = msgpack.Packer(use_bin_type=True, default=_msgpack_key)
        out = [packer.pack_map_header(len(obj))]
        for key, value in obj.items():
            out.append(packer.pack(key))
            out.append(packer.pack_array_header(len(parts)) + b"".join(parts) if key == parts_key
                       else packer.pack(value))
        return b"".join(out)
    standard = dialect == BodyDialect.STANDARD_JSON
    fields = [fastjson.dumps(key, standard=standard).encode("utf-8") + b":"
              + (b"[" + b",".join(parts) + b"]" if key == parts_key
                 else fastjson.dumps(value, standard=standard).encode("utf-8"))
              for key, value in obj.items()]
    return b"{" + b",".join(fields) + b"}"


def _msgpack_key(obj: object) -> object:
    """An object msgpack has no form for: a body class used as a map key (Java's Map<MessageQueue, ...>) goes
    as its JSON text, the form a JSON reader gives such a key back in (``admin_body.mq_from_key``)."""
    if callable(getattr(obj, "to_dict", None)):
        return fastjson.dumps(obj)
    raise TypeError(f"{type(obj).__name__} cannot be written as msgpack")


def decode_body(
    data: bytes | None, cls: Callable[..., B] | type[B] | None = None, dialect: BodyDialect = BodyDialect.MSGPACK
) -> Any:
    """Decode a body in ``dialect`` (both JSON dialects are read alike, leniently); with ``cls`` (a body class)
    return ``cls.from_dict(...)``. Raises BodyError."""
    if data is None:
        raise BodyError("", "missing")
    if dialect == BodyDialect.MSGPACK:
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception as e:
            raise BodyError("", f"undecodable msgpack ({type(e).__name__}: {e})") from None
    else:
        try:
            obj = fastjson.loads(data)
        except fastjson.JsonSyntaxError as e:
            raise BodyError("", f"undecodable JSON ({e})") from None
    if cls is None:
        return obj
    return cls.from_dict(obj)  # type: ignore[union-attr]



def topic_route_body_dialect(dialect: BodyDialect, version: int, accept_standard_json_only: bool) -> BodyDialect:
    """The dialect of a GET_ROUTEINFO_BY_TOPIC answer to a request in ``dialect``: RocketMQ 4.9.8's name server
    writes standard JSON (``{"0":"addr"}``) to clients of V4_9_4 on and to those that ask for it
    (``acceptStandardJsonOnly``), fastjson's default (``{0:"addr"}``) to the older ones."""
    if dialect == BodyDialect.FASTJSON and (version >= V4_9_4 or accept_standard_json_only):
        return BodyDialect.STANDARD_JSON
    return dialect


def now_millis() -> int:
    return time.time_ns() // 1_000_000


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_TRAILING_ZEROS = re.compile(r"\.0*$")
# Texts fastjson's casts read as null: the Java field keeps its default, as when the key is absent
_NULL_TEXTS = frozenset({"", "null", "NULL"})
_NULL = object()  # a cast's answer for those


def _narrow(v: float, bits: int) -> int | None:
    """fastjson's TypeUtils.intValue / longValue of the BigDecimal it reads a JSON number with a fraction or an
    exponent as (its text, which a float's repr gives back): truncated and narrowed as Java narrows (2^31 as an int
    is -2^31) when its scale is within 100 either way, else only an integral value in range (intValueExact);
    None when it would refuse."""
    if not math.isfinite(v):
        return None
    d = Decimal(repr(v))
    n = int(d)
    if -100 <= d.as_tuple().exponent <= 100:  # type: ignore[operator]  # (finite: an int exponent)
        return (n + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return n if d == n and -(1 << (bits - 1)) <= n < 1 << (bits - 1) else None


def _java_int(v: object, bits: int = 64) -> object:
    """What fastjson 1.2.69 casts a JSON value that is no integer to, for an int (``bits`` 32, castToInt) or a long
    (64, castToLong): a decimal string, its commas dropped (for an int also a trailing ``.0``: "1.0" is 1); a float
    as :func:`_narrow` makes it an integer; for an int a boolean, as 1 or 0; ``NULL`` for "", "null" and "NULL";
    None when it would refuse. A string's value is range-checked by the caller."""
    if isinstance(v, bool):
        return int(v) if bits == 32 else None
    if isinstance(v, float):
        return _narrow(v, bits)
    if isinstance(v, str):
        if v in _NULL_TEXTS:
            return _NULL
        text = v.replace(",", "")
        if bits == 32:
            text = _TRAILING_ZEROS.sub("", text)
        if _INT_TEXT.fullmatch(text):
            return int(text)
    return None


def _integral(v: object) -> int | None:
    """An element of a long[] in Java's JSON: a decimal string or an integral float (a C++ client's text), else
    None; its range is the caller's to check."""
    if isinstance(v, str) and _INT_TEXT.fullmatch(v):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _java_bool(v: object) -> object:
    """fastjson 1.2.69's BooleanCodec: a number is true when, as an int, it is 1 (one past an int's range is
    refused, a float made an int by :func:`_narrow`); "true" and "false" in any case, "1", "0", "Y", "y", "T", "F",
    "f", "N" (not "t" nor "n"); ``NULL`` for "", "null" and "NULL"; None when it would refuse."""
    if isinstance(v, int):
        return v == 1 if INT_MIN <= v <= INT_MAX else None
    if isinstance(v, float):
        n = _narrow(v, 32)
        return None if n is None else n == 1
    if isinstance(v, str):
        if v in _NULL_TEXTS:
            return _NULL
        if v.lower() == "true" or v in ("1", "Y", "y", "T"):
            return True
        if v.lower() == "false" or v in ("0", "F", "f", "N"):
            return False
    return None


class Reader:
    """Typed access to one decoded map, for ``from_dict`` implementations (errors carry the path).

    A map read from Java's JSON (a ``fastjson.JsonObject``) also gives what fastjson would cast to the asked type:
    numbers written as strings, booleans as 0/1 or "true", strings as numbers, booleans as an int's 1/0, "" or
    "null" as a number's null, enums as ordinals, byte arrays as base64, an object or array where a string goes as
    its JSON text, "" or [] where an object goes as null. A msgpack map must hold the exact types.
    """

    __slots__ = ("_d", "_path", "_java")

    def __init__(self, obj: object, path: str = "") -> None:
        if not isinstance(obj, dict):
            raise BodyError(path, f"expected a map, got {type(obj).__name__}")
        self._d = obj
        self._path = path
        self._java = type(obj) is JsonObject

    def at(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _get(self, key: str, default: Any) -> Any:
        v = self._d.get(key)
        return self._absent(key, default) if v is None else v

    def _absent(self, key: str, default: Any) -> Any:
        """An absent key's value, or one fastjson reads as null: the field's default."""
        if default is _MISSING:
            raise BodyError(self.at(key), "is missing")
        return default

    def str(self, key: str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, str):
            if self._java:
                return fastjson.java_string(v)
            raise BodyError(self.at(key), f"expected a str, got {type(v).__name__}")
        return v

    def int(self, key: builtins.str, default: Any = _MISSING, bits: builtins.int = 64) -> Any:
        """A Java long (``bits`` 64) or int (32): a value out of its range is refused, as Java's parsers refuse
        it, so that it never reaches another peer that could not read it."""
        v = self._get(key, default)
        if v is not default and (type(v) is bool or not isinstance(v, int)):
            cast = _java_int(v, bits) if self._java else None
            if cast is None:
                raise BodyError(self.at(key), f"expected an int, got {type(v).__name__}")
            if cast is _NULL:
                return self._absent(key, default)
            v = cast
        if v is not default and not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
            raise BodyError(self.at(key), f"{v} is out of the range of a {bits}-bit integer")
        return v

    def int32(self, key: builtins.str, default: Any = _MISSING) -> Any:
        return self.int(key, default, 32)

    def bool(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, bool):
            cast = _java_bool(v) if self._java else None
            if cast is None:
                raise BodyError(self.at(key), f"expected a bool, got {type(v).__name__}")
            if cast is _NULL:
                return self._absent(key, default)
            return cast
        return v

    def enum(self, key: builtins.str, names: tuple[builtins.str, ...], default: Any = _MISSING) -> Any:
        """A Java enum, as its name (a str); from Java's JSON also as its ordinal, an index into ``names``."""
        v = self._get(key, default)
        if v is default or isinstance(v, str):
            return v
        if self._java and type(v) is not bool and isinstance(v, int):
            if 0 <= v < len(names):
                return names[v]
            raise BodyError(self.at(key), f"ordinal {v} is not one of {len(names)} values")
        raise BodyError(self.at(key), f"expected an enum name, got {type(v).__name__}")

    def bytes(self, key: builtins.str, default: Any = _MISSING) -> Any:
        """A Java byte[]: msgpack bin, or in Java's JSON a base64 string."""
        v = self._get(key, default)
        if v is default or isinstance(v, builtins.bytes):
            return v
        if self._java and isinstance(v, str):
            try:
                return base64.b64decode(v, validate=True)
            except binascii.Error:
                raise BodyError(self.at(key), "is not base64") from None
        raise BodyError(self.at(key), f"expected bytes, got {type(v).__name__}")

    def list(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if v is not default and not isinstance(v, list):
            raise BodyError(self.at(key), f"expected a list, got {type(v).__name__}")
        return v

    def map(self, key: builtins.str, default: Any = _MISSING) -> Any:
        v = self._get(key, default)
        if self._java and (v == "" or v == []):  # (fastjson reads "" and [] as a null object)
            return self._absent(key, default)
        if v is not default and not isinstance(v, dict):
            raise BodyError(self.at(key), f"expected a map, got {type(v).__name__}")
        return v

    def str_list(self, key: builtins.str, default: Any = _MISSING) -> Any:
        """A Java collection of String: from Java's JSON, a null in it is left out and any other value is its text
        (fastjson's castToString)."""
        items = self.list(key, default)
        if items is default:
            return items
        if self._java:
            return [fastjson.java_string(v) for v in items if v is not None]
        for i, v in enumerate(items):
            if not isinstance(v, str):
                raise BodyError(f"{self.at(key)}[{i}]", f"expected a str, got {type(v).__name__}")
        return items

    def int_list(self, key: builtins.str, default: Any = _MISSING, boxed: builtins.bool = False) -> Any:
        """A Java long[]: each value in a long's range, as :meth:`int` checks one. ``boxed``: a collection of
        Integer, which from Java's JSON may hold nulls (left out here) and true or false (castToInt's 1 or 0)."""
        items = self.list(key, default)
        if items is default:
            return items
        if boxed and self._java:
            items = [builtins.int(v) if type(v) is builtins.bool else v for v in items
                     if v is not None and not (isinstance(v, str) and v in _NULL_TEXTS)]
        out = []
        for i, v in enumerate(items):
            if type(v) is not int:
                cast = _integral(v) if self._java else None
                if cast is None:
                    raise BodyError(f"{self.at(key)}[{i}]", f"expected an int, got {type(v).__name__}")
                v = cast
            if not LONG_MIN <= v <= LONG_MAX:
                raise BodyError(f"{self.at(key)}[{i}]", f"{v} is out of the range of a 64-bit integer")
            out.append(v)
        return out

    def objects(self, key: builtins.str, cls: type[_BodyClass], default: Any = _MISSING) -> Any:
        items = self.list(key, default)
        if items is default:
            return items
        return [cls.from_dict(v, f"{self.at(key)}[{i}]") for i, v in enumerate(items)]

    def collection(self, key: builtins.str, cls: type[_BodyClass]) -> Any:
        """A Java collection field its class starts empty: missing, it is empty; an explicit null is refused
        (fastjson sets the field to null, on which RocketMQ's broker fails)."""
        if key in self._d and self._d[key] is None:
            raise BodyError(self.at(key), "is null")
        return self.objects(key, cls, [])

    def object_map(self, key: builtins.str, cls: type[_BodyClass], default: Any = _MISSING) -> Any:
        m = self.map(key, default)
        if m is default:
            return m
        out = {}
        for k, v in m.items():
            if not isinstance(k, str):
                raise BodyError(self.at(key), f"key {k!r} is not a str")
            out[k] = cls.from_dict(v, f"{self.at(key)}.{k}")
        return out
