"""The JSON header of a native frame (RocketMQ's ``RemotingSerializable.encode(cmd)``, serialize type 0).

Written as Java writes it, fastjson's bean output: fields sorted by name, nulls left out, the language by name,
every ext value a string (``makeCustomHeaderToNet`` stores ``value.toString()``)::

    {"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,
     "serializeTypeCurrentRPC":"JSON","version":409}

Read as leniently as fastjson reads it into a ``RemotingCommand``, so every client's header parses: any key order,
unknown keys ignored (``serializeTypeCurrentRPC`` included: the frame's type byte says it), the language by name
or ordinal, numbers also as decimal strings, ext values that are JSON numbers or booleans (the C++ client's
``"queueId":0``, ali-ons' ``"k":false``) turned into their text as fastjson does for a ``HashMap<String,String>``,
``extFields`` missing, null or empty, trailing whitespace (the C++ client ends its header with ``\\n``).
Whatever else fastjson reads into RocketMQ's ``RemotingCommand`` is read as it reads it, and what it cannot read
is a MalformedFrame (``json_header_fields``); a missing ``language`` is Java's default, JAVA, an unknown name
OTHER.
"""

from __future__ import annotations

import json
import json.encoder
import math
import re
from collections.abc import Callable, Mapping

from pocketmq.common.java_numbers import INT_MAX, INT_MIN

from . import fastjson
from .command import RemotingCommand

# The reading side, importable from here as before it had a module of its own (the codec and tests use this path).
from .remoting_serializable_reader import _LANGUAGE_CODES as _LANGUAGE_CODES
from .remoting_serializable_reader import _LANGUAGE_NAMES
from .remoting_serializable_reader import decode_json_header as decode_json_header
from .remoting_serializable_reader import decode_json_header_fast as decode_json_header_fast
from .remoting_serializable_reader import decode_json_header_fast_py as decode_json_header_fast_py
from .speedups import speedups


def java_text(name: str, v: object) -> str:
    """An ext value as Java's ``toString()`` writes it: str as is, booleans ``true``/``false``, integers in
    decimal, doubles with ``NaN``/``Infinity`` spelled as Java spells them. TypeError for anything else."""
    t = type(v)
    if t is str:
        return v  # type: ignore[return-value]
    if t is int:
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return repr(v) if math.isfinite(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, str):
        return str(v)
    raise TypeError(f"ext field {name!r} must be str, int, bool or float, not {type(v).__name__}")


def java_ext_fields(ext: Mapping[str, object]) -> dict[str, str]:
    """``ext`` as the ``HashMap<String,String>`` a Java peer holds: None values left out, the rest as text."""
    out: dict[str, str] = {}
    for k, v in ext.items():
        if type(k) is not str and not isinstance(k, str):
            raise TypeError(f"ext field name must be str, not {type(k).__name__}: {k!r}")
        if v is not None:
            out[k] = java_text(k, v)
    return out


def check_int32(name: str, v: int) -> int:
    """``v`` as the Java int a header field is; ValueError when it does not fit."""
    v = int(v)
    if not INT_MIN <= v <= INT_MAX:
        raise ValueError(f"{name} {v} does not fit a Java int")
    return v


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The UTF-8 JSON header of ``cmd``, byte for byte what Java's fastjson writes for the same command (ext
    entries in the map's own order: Java's HashMap has none to copy)."""
    quote = fastjson.quote
    parts = ['{"code":', str(check_int32("code", cmd.code))]
    ext = java_ext_fields(cmd.ext_fields) if cmd.ext_fields else None
    if ext:
        parts.append(',"extFields":{')
        parts.append(",".join(f"{quote(k)}:{quote(v)}" for k, v in ext.items()))
        parts.append("}")
    language = int(cmd.language)
    name = _LANGUAGE_NAMES.get(language)
    parts += [
        ',"flag":', str(check_int32("flag", cmd.flag)),
        ',"language":', f'"{name}"' if name is not None else str(check_int32("language", language)),
        ',"opaque":', str(check_int32("opaque", cmd.opaque)),
    ]  # fmt: skip
    if cmd.remark is not None:
        if not isinstance(cmd.remark, str):
            raise TypeError(f"remark must be str, not {type(cmd.remark).__name__}")
        parts += [',"remark":', quote(cmd.remark)]
    parts += [',"serializeTypeCurrentRPC":"JSON","version":', str(check_int32("version", cmd.version)), "}"]
    return "".join(parts).encode("utf-8")


# Where Python's C JSON writer and fastjson differ: a C0 control without a short form whose hex has a letter
# (json writes \u001f, fastjson \u001F), and what fastjson escapes but json leaves raw (U+007F-U+009F, lone
# surrogates). A header free of them is the same text from both (a literal backslash before "u00.." matches too:
# that only sends the header to the reference).
# Two searches, not one alternation: a pattern that starts with a literal is found by a fast scan for it, while a
# character class is tried at every position.
_LOWER_HEX_ESCAPE = re.compile(r"\\u00[01][a-f]")
_RAW_IN_JSON = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _like_fastjson(text: str) -> bool:
    if text.isascii():
        if "\x7f" in text:
            return False
    elif _RAW_IN_JSON.search(text) is not None:
        return False
    return "\\u00" not in text or _LOWER_HEX_ESCAPE.search(text) is None


def _c_header_writer() -> Callable[[dict[str, object]], str]:
    """The C encoder made once (``json.dumps`` and ``JSONEncoder.encode`` make one per call), compact, non-ASCII
    raw; the documented encoder where the C one is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    basestring = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or basestring is None:
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
    chunks = make(None, None, basestring, None, ":", ",", False, False, True)
    return lambda head: "".join(chunks(head, 0))


_dump_header = _c_header_writer()
_quote: Callable[[str], str] = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring


def _ints_as_text(ext: Mapping[str, object]) -> dict[str, str]:
    """``java_ext_fields(ext)`` for a map of str keys whose values are str, int, bool or None (what a header's
    ``to_ext`` makes); anything else goes to ``java_ext_fields``, which writes it or says what is wrong."""
    out: dict[str, str] = {}
    for k, v in ext.items():
        t = type(v)
        if type(k) is not str:
            return java_ext_fields(ext)
        if t is str:
            out[k] = v  # type: ignore[assignment]
        elif t is int:
            out[k] = str(v)
        elif t is bool:
            out[k] = "true" if v else "false"
        elif v is not None:
            return java_ext_fields(ext)
    return out


class _Unwritable(Exception):
    """An ext entry the kept pieces do not hold: a key that is no str, a value that is no str, int or bool (or is
    unhashable), a text that is not fastjson's (the general path writes it, or says what is wrong)."""


class _Pieces(dict[tuple[str, type, object], str]):
    """`"name":"text"` of each ext entry written so far, keyed by (name, type of the value, value): True == 1 == 1.0
    with one hash, so the type keeps them apart. Requests repeat most entries (group, topic, queue id, flags); an
    entry's piece costs one lookup, made by ``map`` in C for the whole map, instead of the writer's Python steps.
    A piece is made (``__missing__``: the C lookup calls it for an entry not kept) and checked once to be
    fastjson's text. Emptied when full; no entry whose name and text exceed 128 characters, nor an int beyond
    +-65535, is kept: bounded memory, one-off values (per-message offsets, ids, properties) an insert at most."""

    __slots__ = ()

    def __missing__(self, key: tuple[str, type, object]) -> str:
        name, kind, value = key
        if type(name) is not str:
            raise _Unwritable
        head = fastjson.quoted_key(name)
        if kind is int:
            piece = f'{head}"{value}"'  # (digits and a sign: nothing to escape)
            keep = -_MAX_KEPT_INT <= value <= _MAX_KEPT_INT  # type: ignore[operator]
        elif kind is str:
            quoted = _quote(value)  # type: ignore[arg-type]
            if not _like_fastjson(quoted):
                raise _Unwritable
            piece = head + quoted
            keep = len(name) + len(value) <= _MAX_PIECE_LENGTH  # type: ignore[arg-type]
        elif kind is bool:
            piece = head + ('"true"' if value else '"false"')
            keep = True
        else:
            raise _Unwritable
        if keep:
            if len(self) >= _MAX_PIECES:
                self.clear()
            self[key] = piece
        return piece


_PIECES = _Pieces()
_MAX_PIECES = 4096
_MAX_PIECE_LENGTH = 128  # (longer ones, properties mostly, are one-off: kept, they would only take memory)
# Nor large ints: offsets, timestamps, ids, new in every request. Kept, they would empty the map every few thousand
# requests, and with it the entries that do repeat.
_MAX_KEPT_INT = 0xFFFF
_piece = _PIECES.__getitem__


def _ext_json(ext: Mapping[str, object]) -> str | None:
    """The JSON object the reference writes for ``ext``, from the entries' kept pieces; None when an entry is not
    a str key with a str, int or bool value, or its piece is not the reference's text (the caller's general path
    writes those, or says what is wrong). The loop over the entries is ``map``'s and ``zip``'s, in C."""
    values = ext.values()
    try:
        return "{" + ",".join(map(_piece, zip(ext, map(type, values), values, strict=False))) + "}"
    except (_Unwritable, TypeError):  # (TypeError: an unhashable value)
        return None


_LANGUAGE_JSON = {code: f'"{name}"' for code, name in _LANGUAGE_NAMES.items()}
_INT32_BIAS = 2**31  # n + this fits 32 bits (no bit from the 32nd up, no sign) exactly when n is a Java int


def encode_json_header_fast_py(cmd: RemotingCommand) -> bytes:
    """``encode_json_header(cmd)``, same bytes and same errors (a property test checks the two agree). The header
    of nearly every command (int fields of the exact type and in range, a known language, ext entries the kept
    pieces write, no remark or a str one) is one f-string; anything else goes to ``_encode_json_header_any``."""
    code, flag, opaque, version, language = cmd.code, cmd.flag, cmd.opaque, cmd.version, cmd.language
    if type(code) is not int:
        code = int(code)  # (a ResponseCode; the reference calls int() on it first too, errors alike)
    language_json = _LANGUAGE_JSON.get(language) if type(language) is int else None
    remark = cmd.remark
    remark_json = "" if remark is None else _remark_json(remark)
    if (
        type(flag) is not int or type(opaque) is not int or type(version) is not int or language_json is None
        or remark_json is None
        or (code + _INT32_BIAS | flag + _INT32_BIAS | opaque + _INT32_BIAS | version + _INT32_BIAS) >> 32
    ):  # fmt: skip
        return _encode_json_header_any(cmd)
    ext = cmd.ext_fields
    if not ext:
        return (f'{{"code":{code},"flag":{flag},"language":{language_json},"opaque":{opaque}{remark_json},'
                f'"serializeTypeCurrentRPC":"JSON","version":{version}}}').encode()
    ext_json = _ext_json(ext)
    if ext_json is None:
        return _encode_json_header_any(cmd)
    return (f'{{"code":{code},"extFields":{ext_json},"flag":{flag},"language":{language_json},"opaque":{opaque}'
            f'{remark_json},"serializeTypeCurrentRPC":"JSON","version":{version}}}').encode()


def _remark_json(remark: object) -> str | None:
    """`,"remark":"text"` when the C JSON writer quotes a str remark as the reference does, else None."""
    quoted = _quote(remark) if type(remark) is str else ""
    return ',"remark":' + quoted if quoted and _like_fastjson(quoted) else None


encode_json_header_fast = encode_json_header_fast_py
if speedups is not None:
    _encode_json_header_c = speedups.encode_json_header

    def encode_json_header_fast(cmd: RemotingCommand) -> bytes:  # noqa: F811
        """``encode_json_header_fast_py(cmd)``: the C writes the common command (``_speedups.c``), the Python
        anything else (tests/remoting/test_remoting_speedups.py holds the two together)."""
        data = _encode_json_header_c(cmd)
        return data if data is not None else encode_json_header_fast_py(cmd)


def _encode_json_header_any(cmd: RemotingCommand) -> bytes:
    """``encode_json_header(cmd)`` for any command, written by the C JSON encoder when that gives the same bytes
    (almost every header: no control characters but tab, CR, LF, BS, FF, no U+007F-U+009F, no lone surrogate),
    else by the reference."""
    code, flag, opaque, version = int(cmd.code), int(cmd.flag), int(cmd.opaque), int(cmd.version)
    remark = cmd.remark
    if not (
        INT_MIN <= code <= INT_MAX and INT_MIN <= flag <= INT_MAX
        and INT_MIN <= opaque <= INT_MAX and INT_MIN <= version <= INT_MAX
        and (remark is None or isinstance(remark, str))
    ):
        return encode_json_header(cmd)  # a value out of range, a remark that is no str: the reference's error
    language = int(cmd.language)
    name = _LANGUAGE_NAMES.get(language)
    ext: Mapping[str, object] = cmd.ext_fields
    ext_json = None
    checked = True  # (the pieces are; a text the C writer makes here is not yet)
    if ext:
        ext_json = _ext_json(ext)
        if ext_json is None:
            ext = _ints_as_text(ext)  # (None values, odd ones) or java_ext_fields(ext), with its errors
            ext_json = _dump_header(ext) if ext else None  # type: ignore[arg-type]
            checked = False
    # Only the ext map and the remark need the C writer's escaping; the rest is ASCII of a fixed shape.
    language_text = f'"{name}"' if name is not None else str(check_int32("language", language))
    remark_json = None
    if remark is not None:
        remark_json = _quote(remark)
        checked = checked and _like_fastjson(remark_json)
    text = "".join((
        f'{{"code":{code},', f'"extFields":{ext_json},' if ext_json is not None else "",
        f'"flag":{flag},"language":{language_text},"opaque":{opaque},',
        f'"remark":{remark_json},' if remark_json is not None else "",
        f'"serializeTypeCurrentRPC":"JSON","version":{version}}}',
    ))  # fmt: skip
    if not checked and not _like_fastjson(text):
        return encode_json_header(cmd)
    return text.encode("utf-8")
