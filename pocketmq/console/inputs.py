"""What the console's JSON API accepts: a query parameter, a JSON body, and its integer and string fields, each
checked so that bad input answers 400 naming the field, never 500 with a Python exception."""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

from aiohttp import web

from pocketmq.common.java_numbers import LONG_MAX, LONG_MIN

_INTEGER = re.compile(r"[+-]?[0-9]+")


class ApiError(Exception):
    def __init__(self, status: int, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def query_arg(request: web.Request, name: str, required: bool = True) -> str:
    value = request.query.get(name, "").strip()
    if required and not value:
        raise ApiError(400, f"missing parameter {name!r}")
    return value


async def json_body(request: web.Request) -> dict[str, Any]:
    # JSON only: a cross-site page can post a form (text/plain, urlencoded) without the browser asking first,
    # but not JSON, so an admin console on loopback cannot be driven by another site the user visits.
    if request.content_type != "application/json":
        raise ApiError(415, "send the request body as application/json")
    # The bytes, not request.text(): JSON is UTF-8 (RFC 8259 defines no charset parameter), and a charset Python
    # does not know (application/json;charset=x) made text() raise LookupError, a 500.
    try:
        data = _loads(await request.read())
    except (ValueError, RecursionError):  # (JSONDecodeError and UnicodeDecodeError are ValueErrors)
        raise ApiError(400, "the request body is not JSON in UTF-8 (or nests deeper than the parser goes)")
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return data


def number(value: Any, name: str, low: int = LONG_MIN, high: int = LONG_MAX) -> int:
    """An integer field, a JSON integer or a query parameter's digits, between ``low`` and ``high``: by default
    Java's long, as the brokers read these fields. A fraction is refused rather than truncated."""
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        value = _int_literal(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name} must be an integer, not {_shown(value)}")
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be between {low} and {high}, not {_shown(value)}")
    return value


def text(body: dict[str, Any], name: str) -> str:
    """A string field of a JSON body; "" when absent or null."""
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string, not {_shown(value)}")
    return value


def _int_literal(digits: str) -> int:
    """An integer's decimal digits; more than 19 of them (past Java's long), a number just beyond the long with the
    same sign: Python refuses to convert more than 4,300 digits (a ValueError), and no field takes one that big."""
    if len(digits.lstrip("+-").lstrip("0")) <= 19:
        return int(digits)
    return LONG_MIN - 1 if digits.startswith("-") else LONG_MAX + 1


_loads = functools.partial(json.loads, parse_int=_int_literal)


def json_or_none(data: bytes | str) -> Any:
    """A peer's text (a message body, a client's report) as JSON, None when it is not JSON the browser can read:
    JSON has no NaN or Infinity, which Python reads (NaN, Infinity, and 1e999 as inf) and would write back bare,
    failing the page's r.json(); and nesting past the parser's depth raises RecursionError."""
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=lambda s: finite(float(s)))
    except (ValueError, RecursionError):  # (JSONDecodeError and UnicodeDecodeError are ValueErrors)
        return None


def finite(value: float) -> float:
    """``value``, or ValueError for NaN and the infinities, which JSON cannot carry."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."
