"""Java's String.hashCode, which RocketMQ stores on disk (tags codes, index key hashes).

h = s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, wrapped to a signed 32-bit int.
The sum runs in C (map + operator.mul over a power table) instead of a Python loop per char.
"""

import struct
import sys
import threading
from array import array
from collections.abc import Iterable
from operator import mul

from .bounded_cache import BoundedCache

_MASK = 0xFFFFFFFF
_POWERS: list[int] = [1]


_POWERS_LOCK = threading.Lock()


# The power table stops here: it lives as long as the process, so one long string (a client's tag of megabytes)
# must not grow it to its length. A longer string is hashed a table's length at a time.
_MAX_POWERS = 1 << 16
_STEP = pow(31, _MAX_POWERS, 1 << 32)


def _powers(n: int) -> list[int]:
    """31^i mod 2^32 for i < n (at least; n <= _MAX_POWERS). The list only grows; the lock keeps two threads
    growing it at once (the dispatcher and the event loop) from appending a power twice, which would shift every
    later one."""
    if len(_POWERS) < n:
        with _POWERS_LOCK:
            while len(_POWERS) < n:
                _POWERS.append((_POWERS[-1] * 31) & _MASK)
    return _POWERS


def _units(s: str) -> "bytes | array[int]":
    if s.isascii():
        return s.encode("ascii")[::-1]
    units = array("H", s.encode("utf-16-le"))
    if sys.byteorder == "big":
        units.byteswap()
    units.reverse()
    return units


def java_string_hash(s: str) -> int:
    units = _units(s)
    if len(units) <= _MAX_POWERS:
        h: int = sum(map(mul, units, _powers(len(units)))) & _MASK
    else:
        h = _long_hash(units)
    return h - 0x100000000 if h & 0x80000000 else h


def _long_hash(units: "bytes | array[int]") -> int:
    """The sum over reversed units, a table's length at a time: chunk k's powers are 31^(k * _MAX_POWERS) times
    the table's."""
    powers = _powers(_MAX_POWERS)
    h, scale = 0, 1
    for k in range(0, len(units), _MAX_POWERS):
        h = (h + scale * sum(map(mul, units[k:k + _MAX_POWERS], powers))) & _MASK
        scale = (scale * _STEP) & _MASK
    return h


# Tags repeat (keys do not, and are not remembered).
_TAGS_CODES: BoundedCache[str, int] = BoundedCache(java_string_hash, 65536, max_key_len=1024)


def tags_code(tags: str | None) -> int:
    """MessageExtBrokerInner.tagsString2tagsCode: 0 for no tags, else the hash of the whole TAGS string."""
    if not tags:
        return 0
    return _TAGS_CODES.get(tags) or _TAGS_CODES[tags]


def extend_hash(prefix_hash: int, suffix: bytes) -> int | None:
    """String.hashCode of prefix + suffix as an unsigned 32-bit value, from the prefix's hash, for an
    ASCII suffix given as bytes (None otherwise): h(a + b) = h(a) * 31^len(b) + h(b)."""
    if not suffix.isascii():
        return None
    n = len(suffix)
    if n >= _MAX_POWERS:
        return (prefix_hash * pow(31, n, 1 << 32) + java_string_hash(suffix.decode("ascii"))) & _MASK
    powers = _powers(n + 1)
    h: int = (prefix_hash * powers[n] + sum(map(mul, suffix[::-1], powers))) & _MASK
    return h


_TAIL8 = struct.Struct("8B")


class KeyHashes:
    """String.hashCode of "topic#key" for the index, cheap for keys that share long heads.

    Message ids (UNIQ_KEY) from one producer share their first 24 hex digits (address, pid, then the high
    half of the time), so the hash of everything but a key's last 8 bytes is cached (per topic prefix) and
    each key costs 8 multiplications written out instead of ~40. Keys whose heads never repeat only pay for
    a dict miss.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._topics: dict[bytes, int] = {}  # topic -> hash of "topic#"
        self._heads: dict[int, dict[bytes, int]] = {}  # hash of "topic#" -> key head -> hash of "topic#head"
        self._limit = limit
        self._cached = 0
        p = _powers(9)  # for the 8-byte tail and the shift past it
        self._shift = p[8]
        self._p = (p[7], p[6], p[5], p[4], p[3], p[2], p[1])

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
        n = len(key)
        if n <= 8 or not key.isascii():
            return extend_hash(prefix_hash, key)
        heads = self._heads.get(prefix_hash)
        if heads is None:
            heads = self._heads[prefix_hash] = {}
        head_b = key[:-8]
        head = heads.get(head_b)
        if head is None:
            if self._cached >= self._limit:
                self._heads.clear()
                self._cached = 0
                heads = self._heads[prefix_hash] = {}
            head = extend_hash(prefix_hash, head_b)
            assert head is not None  # the key is ASCII, so its head is
            heads[head_b] = head
            self._cached += 1
        a, b, c, d, e, f, g, h = _TAIL8.unpack_from(key, n - 8)
        p7, p6, p5, p4, p3, p2, p1 = self._p
        hashed: int = (head * self._shift + a * p7 + b * p6 + c * p5 + d * p4 + e * p3 + f * p2 + g * p1 + h) & _MASK
        return hashed


def java_string_order(s: str) -> bytes:
    """A sort key ordering strings as Java's String.compareTo does (by UTF-16 code unit, so a character above
    U+FFFF sorts before U+E000..U+FFFF): clients of a group, whatever their language, must split queues alike."""
    return s.encode("utf-16-be", "surrogatepass")


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """The order in which a ``java.util.HashMap<String, ?>`` of the default capacity (16) and load factor (0.75)
    iterates ``keys`` put in this order: by bucket (the spread hash over the table's size, which doubles past
    three quarters full), in insertion order within one. mqadmin prints maps in this order."""
    unique = list(dict.fromkeys(keys))
    size = 16
    while len(unique) > size * 3 // 4:
        size *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(unique, key=bucket)  # (stable: insertion order within a bucket)
