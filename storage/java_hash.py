"""Java's String.hashCode, which RocketMQ stores on disk (tags codes, index key hashes).

h = s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, wrapped to a signed 32-bit int.
The sum runs in C (map + operator.mul over a power table) instead of a Python loop per char.
"""

import sys
from array import array
from operator import mul

_MASK = 0xFFFFFFFF
_POWERS: list[int] = [1]


def _powers(n: int) -> list[int]:
    while len(_POWERS) < n:
        _POWERS.append((_POWERS[-1] * 31) & _MASK)
    return _POWERS


def _units(s: str):
    if s.isascii():
        return s.encode("ascii")[::-1]
    units = array("H", s.encode("utf-16-le"))
    if sys.byteorder == "big":
        units.byteswap()
    units.reverse()
    return units


def java_string_hash(s: str) -> int:
    units = _units(s)
    h = sum(map(mul, units, _powers(len(units)))) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


_TAGS_CACHE: dict[str, int] = {}


def tags_code(tags: str | None) -> int:
    """MessageExtBrokerInner.tagsString2tagsCode: 0 for no tags, else the hash of the whole TAGS string."""
    if not tags:
        return 0
    code = _TAGS_CACHE.get(tags)
    if code is None:
        code = java_string_hash(tags)
        if len(_TAGS_CACHE) < 65536:  # tags repeat; keys don't, so the cache is bounded
            _TAGS_CACHE[tags] = code
    return code


def extend_hash(prefix_hash: int, suffix: bytes) -> int | None:
    """String.hashCode of prefix + suffix as an unsigned 32-bit value, from the prefix's hash, for an
    ASCII suffix given as bytes (None otherwise): h(a + b) = h(a) * 31^len(b) + h(b)."""
    if not suffix.isascii():
        return None
    n = len(suffix)
    powers = _powers(n + 1)
    return (prefix_hash * powers[n] + sum(map(mul, suffix[::-1], powers))) & _MASK
