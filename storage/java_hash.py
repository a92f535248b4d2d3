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


class KeyHashes:
    """String.hashCode of "topic#key" for the index, cheap for keys that share long heads.

    Message ids (UNIQ_KEY) from one producer share their first 24 hex digits (address, pid, then the high
    half of the time), so the hash of everything but a key's last 8 bytes is cached and each key costs 8
    multiplications instead of ~40. Keys whose heads never repeat only pay for a dict miss.
    """

    TAIL = 8

    def __init__(self, limit: int = 4096) -> None:
        self._topics: dict[bytes, int] = {}  # topic -> hash of "topic#"
        self._heads: dict[tuple[int, bytes], int] = {}
        self._limit = limit
        self._powers = _powers(self.TAIL + 1)
        self._shift = self._powers[self.TAIL]

    def topic_hash(self, topic: str, topic_b: bytes) -> int:
        h = self._topics.get(topic_b)
        if h is None:
            h = java_string_hash(topic + "#") & _MASK
            if len(self._topics) >= self._limit:
                self._topics.clear()
            self._topics[topic_b] = h
        return h

    def key_hash(self, prefix_hash: int, key: bytes) -> int | None:
        """Unsigned 32-bit hash of prefix + key (see extend_hash); None for a key that is not ASCII."""
        if len(key) <= self.TAIL or not key.isascii():
            return extend_hash(prefix_hash, key)
        cache_key = (prefix_hash, key[: -self.TAIL])
        head = self._heads.get(cache_key)
        if head is None:
            head = extend_hash(prefix_hash, cache_key[1])
            assert head is not None  # ASCII, checked above
            if len(self._heads) >= self._limit:
                self._heads.clear()
            self._heads[cache_key] = head
        return (head * self._shift + sum(map(mul, key[: -self.TAIL - 1 : -1], self._powers))) & _MASK
