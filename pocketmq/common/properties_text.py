"""Java properties text as RocketMQ's MixAll.properties2String / string2Properties write and read it (the body of
GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG)."""

from __future__ import annotations

import math


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines (``#``/``!`` comments, blank lines skipped); the key ends at the first '=' or ':'."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key, value = (line, "") if cut < 0 else (line[:cut].strip(), line[cut + 1 :].strip())
        out[key] = value
    return out


def format_properties(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def parse_finite_float(text: str) -> float:
    """A number with a fraction; ValueError for NaN and the infinities ("inf", or "1e400", which overflows to it),
    which would turn the timers and ratios they reach into errors or busy loops."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value
