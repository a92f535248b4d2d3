"""A bounded memo for the hot paths: ``cache[key]`` is a plain dict lookup when the key is known.

The codecs, the dispatcher and the processors keep small tables of things derived from what they meet again and
again (struct shapes, tags hash codes, parsed subscriptions). What they meet comes from clients, so every such
table needs a bound, or a client that sends ever-new topics or expressions grows the process without end. This
one class holds that rule for all of them.

A hit through ``cache.get(key)`` costs what a ``dict`` lookup costs (the class is a ``dict``); ``cache[key]`` on a
dict subclass takes CPython's slower subscript path (about twice the cost) and runs ``__missing__`` on a miss, so
the hottest paths write ``cache.get(key) or cache[key]`` (values there are never falsy). When the
table is full, the oldest entry goes (first in, first out): the tables hold few hot keys, so LRU bookkeeping on
every hit would cost more than the rare recomputation it saves. A cache only remembers: a value must depend on
its key alone, so that a hit and a miss give the same answer (validation is never skipped on a hit).

An entry count alone does not bound the bytes when a client chooses the keys (a tag or an expression may be
megabytes): ``max_key_len`` leaves a longer str or bytes key computed every time and never remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(dict[K, V]):
    """``BoundedCache(compute, maxsize)``: ``cache[key]`` returns ``compute(key)``, remembered for at most
    ``maxsize`` keys, none of them a str or bytes longer than ``max_key_len``. ``compute`` may raise; nothing is
    remembered then."""

    __slots__ = ("compute", "maxsize", "max_key_len")

    def __init__(self, compute: Callable[[K], V], maxsize: int, max_key_len: int | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, not {maxsize}")
        super().__init__()
        self.compute = compute
        self.maxsize = maxsize
        self.max_key_len = max_key_len

    def __missing__(self, key: K) -> V:
        value = self.compute(key)
        if self.max_key_len is not None and isinstance(key, str | bytes) and len(key) > self.max_key_len:
            return value
        if len(self) >= self.maxsize:
            try:
                del self[next(iter(self))]
            except (KeyError, RuntimeError, StopIteration):
                pass  # another thread changed the table meanwhile (it evicted too, or it was cleared)
        self[key] = value
        return value

    def __repr__(self) -> str:
        return f"BoundedCache({getattr(self.compute, '__qualname__', self.compute)!r}, {len(self)}/{self.maxsize})"
