"""Java's int and long: their ranges, and what Java's arithmetic leaves of a sum or product that leaves them.

RocketMQ's counters, header fields and hash codes are Java ints and longs, and where its arithmetic wraps a value
round (a reconsume count past Integer.MAX_VALUE, a long that overflows) pocketmq must answer the same number. Python's
ints never wrap, so each such place goes through here."""

from __future__ import annotations

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def wrap_int(n: int) -> int:
    """``n`` as Java's int arithmetic leaves it: its low 32 bits, signed (also what BigDecimal.intValue keeps)."""
    return (n + 2**31) % 2**32 - 2**31


def wrap_long(n: int) -> int:
    """``n`` as Java's long arithmetic leaves it: its low 64 bits, signed."""
    return (n + 2**63) % 2**64 - 2**63
