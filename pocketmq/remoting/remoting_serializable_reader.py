"""The reading side of the JSON header of a native frame (RocketMQ's ``RemotingSerializable.decode`` of a
``RemotingCommand``): as lenient as fastjson, every client's header parses (remoting_serializable.py's docstring
says what is taken); a header of Java's own shape on a fast path, in C where ``_speedups.c`` is built."""

from __future__ import annotations

import re
from decimal import Decimal

from pocketmq.common.java_numbers import INT_MAX, INT_MIN

from . import fastjson
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand
from .errors import MalformedFrame
from .json_header_fields import Occurrences, command_of
from .speedups import speedups

_LANGUAGE_NAMES = {int(lc): lc.name for lc in LanguageCode}
_LANGUAGE_CODES = {lc.name: int(lc) for lc in LanguageCode}
_JSON = SerializeType.JSON


def decode_json_header(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """The command a JSON header describes (no body yet); MalformedFrame when it is not one (the fields are read as
    fastjson reads them: ``json_header_fields``)."""
    try:
        # Decimal keeps a fraction's digits as written, which is the text fastjson gives an ext value.
        obj = fastjson.loads(data, object_type=Occurrences, parse_float=Decimal)
    except fastjson.JsonSyntaxError as e:
        raise MalformedFrame(f"undecodable JSON header ({e})") from None
    except ArithmeticError:  # (1e9999999999999999999: decimal.InvalidOperation)
        raise MalformedFrame("undecodable JSON header (a number no Java number holds)") from None
    try:
        return command_of(obj)
    except (ValueError, ArithmeticError, RecursionError) as e:
        # Numbers past what int() or Decimal take (4,300 digits and more), values nested past what the text form
        # of an ext value takes: not a header, and not a bug to log with a traceback.
        raise MalformedFrame(f"undecodable JSON header ({type(e).__name__}: {str(e)[:200]})") from None


_scan_header = fastjson.c_scanner(dict, Decimal)


# The header as fastjson writes a RemotingCommand (bean fields sorted by name, nulls left out), around its ext map:
# what Java's clients and pocketmq's send on nearly every frame. The ints are at most 9 digits (a Java int always)
# and without leading zeros (as JSON has them), a remark (a pop's FOUND) without escapes; anything else is read by
# the general path.
_JAVA_INT = "(0|-?[1-9][0-9]{0,8})"
_JAVA_HEAD = re.compile(f'{{"code":{_JAVA_INT},"extFields":')
_JAVA_TAIL = re.compile(f',"flag":{_JAVA_INT},"language":"([A-Z]{{1,8}})","opaque":{_JAVA_INT},'
                        f'(?:"remark":"([^"\\\\]*)",)?"serializeTypeCurrentRPC":"JSON","version":{_JAVA_INT}}}')


def decode_json_header_fast_py(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """``decode_json_header(data)``, the same command or error (a hypothesis test checks the two agree). A header
    of Java's shape (``_JAVA_HEAD``, an ext map of string values, ``_JAVA_TAIL``) has its fixed fields read by two
    regex matches and only its ext map by the C JSON scanner (which costs more per entry than the matches); any
    other goes to ``_decode_json_header_any``."""
    text = str(data, "utf-8", "replace")
    head = _JAVA_HEAD.match(text)
    if head is None:
        return _decode_json_header_any(text, data)
    try:
        ext, end = _scan_header(text, head.end())
    except (StopIteration, ValueError, ArithmeticError, RecursionError):
        return decode_json_header(data)
    tail = _JAVA_TAIL.fullmatch(text, end)
    if tail is None or type(ext) is not dict:
        return _decode_json_header_any(text, data)
    flag, language, opaque, remark, version = tail.groups()
    language = _LANGUAGE_CODES.get(language)
    try:
        "".join(ext.values())  # every value a str (see _decode_json_header_any)
    except TypeError:
        return decode_json_header(data)
    if language is None:
        return decode_json_header(data)
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(int(head[1]), language, int(version), int(opaque), int(flag), remark, ext, None, _JSON)


decode_json_header_fast = decode_json_header_fast_py
if speedups is not None:
    speedups.configure(RemotingCommand, _LANGUAGE_CODES, _LANGUAGE_NAMES, _JSON)
    _decode_json_header_c = speedups.decode_json_header

    def decode_json_header_fast(data: bytes | bytearray | memoryview) -> RemotingCommand:  # noqa: F811
        """``decode_json_header_fast_py(data)``: the C reads a header of Java's shape (``_speedups.c``), the Python
        anything else (tests/remoting/test_remoting_speedups.py holds the two together)."""
        cmd = _decode_json_header_c(data)
        return cmd if cmd is not None else decode_json_header_fast_py(data)


def _plain_ext(ext: object, keys: int, text: str) -> bool:
    """Whether ``ext`` is a map of str values and the header's text holds no key twice (``keys`` at its top)."""
    if type(ext) is not dict:
        return False
    if text.count('":') != keys + len(ext):
        # A key given twice (fastjson reads each occurrence; the scanner keeps the last), or a '":' inside a
        # string, or spaces before a colon: the reference reads it
        return False
    try:
        # Every value a str: the scanner makes no str subclass, so join refuses exactly the others (in C, where a
        # loop over the values would be Python's).
        "".join(ext.values())
    except TypeError:
        return False
    return True


def _decode_json_header_any(text: str, data: bytes | bytearray | memoryview) -> RemotingCommand:
    """``decode_json_header(data)`` (``text`` is ``data`` decoded), faster for the headers clients write: one call
    of the C scanner (no whitespace regexes around it), and when every field has the type Java writes (ints in
    range, the language a known name, a string remark, string ext values) the command built without checking each
    field through the helpers. Anything else (whitespace around the object, a syntax error, a number as text) goes
    to the reference."""
    try:
        obj, end = _scan_header(text, 0)
    except (StopIteration, ValueError, ArithmeticError, RecursionError):
        return decode_json_header(data)
    if end != len(text) or type(obj) is not dict:
        return decode_json_header(data)
    get = obj.get
    code, opaque, flag, version = get("code"), get("opaque"), get("flag", 0), get("version", 0)
    raw_language = get("language")
    language = _LANGUAGE_CODES.get(raw_language) if type(raw_language) is str else None
    remark = get("remark")
    ext = get("extFields")
    if not (
        type(code) is int and type(opaque) is int and type(flag) is int and type(version) is int
        and INT_MIN <= code <= INT_MAX and INT_MIN <= opaque <= INT_MAX
        and INT_MIN <= flag <= INT_MAX and INT_MIN <= version <= INT_MAX
        and language is not None and (remark is None or type(remark) is str)
        and type(get("serializeTypeCurrentRPC", "")) is str and "body" not in obj
    ):
        return decode_json_header(data)
    if ext is None:
        ext = {}
    if not _plain_ext(ext, len(obj), text):
        return decode_json_header(data)
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body, serialize_type.
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, None, _JSON)
