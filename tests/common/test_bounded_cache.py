"""BoundedCache: remembers what it computed, never more than its bound, and never remembers a failure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pocketmq.common.bounded_cache import BoundedCache


def test_computes_once_per_key() -> None:
    calls: list[str] = []

    def compute(key: str) -> int:
        calls.append(key)
        return len(key)

    cache = BoundedCache(compute, 8)
    assert [cache["a"], cache["bb"], cache["a"], cache["bb"]] == [1, 2, 1, 2]
    assert calls == ["a", "bb"]


def test_full_cache_drops_the_oldest_entry() -> None:
    cache = BoundedCache(lambda k: k * 10, 3)
    for k in (1, 2, 3, 4):
        assert cache[k] == k * 10
    assert list(cache) == [2, 3, 4]


def test_a_failed_compute_is_not_remembered() -> None:
    attempts = []

    def compute(key: int) -> int:
        attempts.append(key)
        if len(attempts) == 1:
            raise ValueError("bad")
        return key

    cache = BoundedCache(compute, 4)
    with pytest.raises(ValueError):
        cache[7]
    assert 7 not in cache
    assert cache[7] == 7
    assert attempts == [7, 7]


def test_maxsize_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache(str, 0)


@given(st.lists(st.integers(-50, 50), max_size=300), st.integers(1, 20))
def test_agrees_with_the_function_and_stays_bounded(keys: list[int], maxsize: int) -> None:
    cache = BoundedCache(lambda k: k * k + 1, maxsize)
    for k in keys:
        assert cache[k] == k * k + 1
        assert len(cache) <= maxsize


def test_a_key_longer_than_max_key_len_is_computed_but_not_remembered() -> None:
    cache = BoundedCache(len, 8, max_key_len=4)
    assert cache["abcd"] == 4 and cache["abcde"] == 5 and cache[b"abcdef"] == 6 and cache[(1, 2, 3, 4, 5)] == 5
    assert set(cache) == {"abcd", (1, 2, 3, 4, 5)}  # (a key of another kind is not measured)
