"""Java's value semantics as RocketMQ's evaluator has them: Integer, Long, Double, Boolean and String values,
the string-to-number conversions it applies (``CONVERT_STRING_EXPRESSIONS``) and ``compareTo``.

Python values stand for Java ones: ``bool`` Boolean, ``int`` Integer, ``JavaLong`` Long, ``float`` Double,
``str`` String and ``None`` null. Message properties are always strings.
"""

from __future__ import annotations

import math
import re

from ..java_numbers import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from ..java_text import parse_integer
from .errors import EvaluationError


class JavaLong(int):
    """An integer that Java holds as a Long (a literal outside the int range, or an L-suffixed one that is)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}L"


Value = None | bool | int | float | str

_INTEGER = re.compile(r"[+-]?\d+")  # \d: Unicode decimal digits, which Character.digit accepts too
_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_HEX_DOUBLE = re.compile(r"([+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


def type_name(v: Value) -> str:
    if isinstance(v, bool):
        return "Boolean"
    if isinstance(v, JavaLong):
        return "Long"
    if isinstance(v, int):
        return "Integer"
    if isinstance(v, float):
        return "Double"
    return "String"


def parse_int(s: str, lo: int = INT_MIN, hi: int = INT_MAX, what: str = "Integer") -> int:
    """Integer.valueOf / Long.valueOf: optional sign and digits only, no spaces, range-checked."""
    try:
        return parse_integer(s, lo, hi)
    except ValueError:
        out_of_range = _INTEGER.fullmatch(s) is not None
        raise EvaluationError(f'NumberFormatException: For input string: "{s}" '
                              f'({what}{" out of range" if out_of_range else ""})') from None


def parse_long(s: str) -> JavaLong:
    return JavaLong(parse_int(s, LONG_MIN, LONG_MAX, "Long"))


def parse_double(s: str) -> float:
    """Double.valueOf: surrounding whitespace (chars <= ' ') ignored, an f/F/d/D suffix allowed, NaN,
    Infinity and hexadecimal floating point literals accepted."""
    t = s.strip("".join(chr(c) for c in range(33)))
    if _DOUBLE.fullmatch(t) is not None:
        core = t[:-1] if t[-1] in "fFdD" and not t.endswith("Infinity") else t
        if core.lstrip("+-") == "NaN":
            return math.nan
        return float(core)
    m = _HEX_DOUBLE.fullmatch(t)
    if m is not None:
        return float.fromhex(m.group(1))
    raise EvaluationError(f'NumberFormatException: For input string: "{s}" (Double)')


def java_boolean(s: str) -> bool:
    return s.lower() == "true"  # Boolean.valueOf: anything else is false


def java_equals(a: Value, b: Value) -> bool:
    """Object.equals: same class and value (Integer 1 does not equal Long 1; Double compares bits)."""
    if type_name(a) != type_name(b):
        return False
    if isinstance(a, float):
        return compare_doubles(a, b) == 0  # type: ignore[arg-type]
    return a == b


def compare_doubles(a: float, b: float) -> int:
    """Double.compare: NaN is above everything and equal to itself; -0.0 is below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    a_neg, b_neg = math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0
    return (b_neg > a_neg) - (b_neg < a_neg)


def compare(lv: Value, rv: Value) -> int:
    """ComparisonExpression.__compare with string conversion on: bring both sides to one type, then compareTo.

    Values of unrelated types compare as "less" (-1), as in Java. A string that does not convert raises
    EvaluationError (Java's NumberFormatException), which makes the whole expression not match.
    """
    lt, rt = type_name(lv), type_name(rv)
    if lt != rt:
        if lt == "Boolean":
            if rt == "String":
                # Java casts the Boolean to String here and throws ClassCastException.
                raise EvaluationError("ClassCastException: Boolean compared with String")
            return -1
        if lt == "Integer":
            if rt == "Long":
                lv = JavaLong(lv)  # type: ignore[arg-type]
            elif rt == "Double":
                lv = float(lv)  # type: ignore[arg-type]
            elif rt == "String":
                rv = parse_int(rv)  # type: ignore[arg-type]
            else:
                return -1
        elif lt == "Long":
            if rt == "Integer":
                rv = JavaLong(rv)  # type: ignore[arg-type]
            elif rt == "Double":
                lv = float(lv)  # type: ignore[arg-type]
            elif rt == "String":
                rv = parse_long(rv)  # type: ignore[arg-type]
            else:
                return -1
        elif lt == "Double":
            if rt in ("Integer", "Long"):
                rv = float(rv)  # type: ignore[arg-type]
            elif rt == "String":
                rv = parse_double(rv)  # type: ignore[arg-type]
            else:
                return -1
        else:  # String on the left
            if rt == "Boolean":
                lv = java_boolean(lv)  # type: ignore[arg-type]
            elif rt == "Integer":
                lv = parse_int(lv)  # type: ignore[arg-type]
            elif rt == "Long":
                lv = parse_long(lv)  # type: ignore[arg-type]
            elif rt == "Double":
                lv = parse_double(lv)  # type: ignore[arg-type]
            else:
                return -1
    return compare_same(lv, rv)


def compare_same(lv: Value, rv: Value) -> int:
    if isinstance(lv, float):
        return compare_doubles(lv, rv)  # type: ignore[arg-type]
    if isinstance(lv, str):
        # String.compareTo orders UTF-16 code units; only equality ever matters here (relational operators
        # never compare two strings as strings), so code point order is as good.
        return (lv > rv) - (lv < rv)  # type: ignore[operator]
    return (lv > rv) - (lv < rv)  # type: ignore[operator]
