"""White-list address patterns (RocketMQ's ``RemoteAddressStrategyFactory``), for ``globalWhiteRemoteAddresses``
and an account's ``whiteRemoteAddress``.

=================================  ==================================================================
pattern                            matches
=================================  ==================================================================
empty or missing                   nothing
``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``  every address
``192.168.1.7``, ``::1``           that address (IPv6 in any spelling)
``192.168.1.{1,7,9}``              those addresses (the last IPv4 field or IPv6 group in braces)
``10.0.0.1,10.0.0.2``              those addresses
``192.168.*.*``, ``192.168.1.1-100``, ``10.1-5.*.*``  a range in one field after the first; later fields ``*``
``fe80:0:0:0:0:0:0:*``             the same for IPv6, written with all eight groups
=================================  ==================================================================

A pattern that is none of these is a config error (``AclConfigError``), found when the file is read.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable


class AclConfigError(ValueError):
    """An ACL file that cannot be used: unreadable, a bad pattern, a missing or short key."""


_ANY = ("*", "*.*.*.*", "*:*:*:*:*:*:*:*")


def _canonical(ip: str) -> str | None:
    """The address in one spelling (IPv6 exploded), None if ``ip`` is no address."""
    try:
        addr = ipaddress.ip_address(ip.strip().strip("[]"))
    except ValueError:
        return None
    return addr.exploded if addr.version == 6 else str(addr)


class RemoteAddressStrategy:
    """``strategy(ip) -> bool`` for one pattern."""

    __slots__ = ("pattern", "_match")

    def __init__(self, pattern: str | None) -> None:
        self.pattern = (pattern or "").strip()
        self._match = _build(self.pattern)

    def __call__(self, ip: str) -> bool:
        return self._match(ip)

    def __repr__(self) -> str:
        return f"RemoteAddressStrategy({self.pattern!r})"


def _build(pattern: str) -> Callable[[str], bool]:
    if not pattern:
        return lambda _ip: False
    if pattern in _ANY:
        return lambda _ip: True
    if pattern.endswith("}"):
        return _one_of(_expand_braces(pattern), pattern)
    if "," in pattern:
        return _one_of([p for p in pattern.split(",") if p.strip()], pattern)
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    canonical = _canonical(pattern)
    if canonical is None:
        raise AclConfigError(f"white address {pattern!r} is not an IP address")
    return lambda ip: _canonical(ip) == canonical


def _expand_braces(pattern: str) -> list[str]:
    sep = ":" if ":" in pattern else "."
    head, _, last = pattern.rpartition(sep)
    if not last.startswith("{"):
        raise AclConfigError(f"white address {pattern!r}: braces must hold the whole last field, as in 10.0.0.{{1,2}}")
    return [f"{head}{sep}{item.strip()}" for item in last[1:-1].split(",") if item.strip()]


def _one_of(addresses: list[str], pattern: str) -> Callable[[str], bool]:
    allowed = set()
    for a in addresses:
        canonical = _canonical(a)
        if canonical is None:
            raise AclConfigError(f"white address {pattern!r}: {a.strip()!r} is not an IP address")
        allowed.add(canonical)
    return lambda ip: _canonical(ip) in allowed


def _range(pattern: str) -> Callable[[str], bool]:
    v6 = ":" in pattern
    fields = [f.strip() for f in pattern.split(":" if v6 else ".")]
    count, base, top = (8, 16, 0xFFFF) if v6 else (4, 10, 255)
    if len(fields) != count:
        raise AclConfigError(
            f"white address range {pattern!r} must have {count} {'groups' if v6 else 'fields'}"
            + (" (no '::' in IPv6 ranges)" if v6 else ""))
    where = next((i for i, f in enumerate(fields) if f == "*" or "-" in f), None)
    if where is None or where == 0 or any(f != "*" for f in fields[where + 1 :]):
        raise AclConfigError(
            f"white address range {pattern!r}: one field after the first may be '*' or 'a-b', every later one '*'")
    try:
        head = [int(f, base) for f in fields[:where]]
        if fields[where] == "*":
            start, end = 0, top
        else:
            low, _, high = fields[where].partition("-")
            start, end = int(low, base), int(high, base)
    except ValueError:
        raise AclConfigError(f"white address range {pattern!r} has a field that is not a number") from None
    if not (all(0 <= h <= top for h in head) and 0 <= start <= end <= top):
        raise AclConfigError(f"white address range {pattern!r} is out of bounds")

    def match(ip: str) -> bool:
        try:
            addr = ipaddress.ip_address(ip.strip().strip("[]"))
        except ValueError:
            return False
        if (addr.version == 6) != v6:
            return False
        parts = [int(g, 16) for g in addr.exploded.split(":")] if v6 else list(addr.packed)
        return parts[:where] == head and start <= parts[where] <= end

    return match
