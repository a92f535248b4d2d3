"""Java String.hashCode as stored on disk (tags codes, index key hashes), reference §2.2 / §3.2."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import java_hash
from pocketmq.common.java_hash import KeyHashes, extend_hash, hash_map_order, java_string_hash, tags_code
from pocketmq.storage.index_file import key_hash


def naive_java_hash(s: str) -> int:
    """String.hashCode by the book: over UTF-16 code units, 32-bit wrap-around, signed."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_known_java_values():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello world") == 1794106052
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112


def test_overflowing_hashes_wrap_to_signed_int():
    # The classic: this string hashes to Integer.MIN_VALUE in Java.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("TopicTest#KEY-0123456789") == naive_java_hash("TopicTest#KEY-0123456789")
    long_text = "The quick brown fox jumps over the lazy dog" * 10
    assert java_string_hash(long_text) == naive_java_hash(long_text)
    assert -(2**31) <= java_string_hash(long_text) < 2**31


def test_non_ascii_uses_utf16_code_units():
    assert java_string_hash("é") == 233
    assert java_string_hash("中文") == 20013 * 31 + 25991
    # U+1F600 is a surrogate pair in UTF-16: 0xD83D, 0xDE00
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_string_hash("Tag-é-\U0001F600") == naive_java_hash("Tag-é-\U0001F600")


@given(st.text(max_size=200))
def test_property_matches_naive_definition(s):
    assert java_string_hash(s) == naive_java_hash(s)


def test_tags_code():
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == naive_java_hash("TagA")
    assert tags_code("TagA||TagB") == naive_java_hash("TagA||TagB")  # the whole TAGS string
    assert tags_code("TagA") == tags_code("TagA")  # cached value is the same


@given(st.text(max_size=30), st.text(alphabet=st.characters(max_codepoint=127), max_size=30))
def test_property_extend_hash_equals_hash_of_concatenation(prefix, suffix):
    h = extend_hash(java_string_hash(prefix) & 0xFFFFFFFF, suffix.encode("ascii"))
    assert h == java_string_hash(prefix + suffix) & 0xFFFFFFFF


def test_extend_hash_refuses_non_ascii():
    assert extend_hash(0, "é".encode()) is None


def test_index_key_hash_is_abs_and_min_value_becomes_zero():
    assert key_hash("hello") == 99162322
    assert java_string_hash("TopicA#k1") < 0  # a negative hash: the slot uses its absolute value
    for s in ("TopicA#k1", "TopicA#order-77", "x" * 40):
        assert key_hash(s) == abs(naive_java_hash(s))
    assert key_hash("polygenelubricants") == 0


@given(st.text(max_size=20), st.lists(st.text(max_size=40), max_size=30))
def test_property_key_hashes_equal_hash_of_topic_hash_key(topic, keys):
    hashes = KeyHashes(limit=4)  # tiny, so the cache fills and is cleared along the way
    prefix = hashes.topic_hash(topic, topic.encode())
    assert prefix == java_string_hash(topic + "#") & 0xFFFFFFFF
    for key in keys + keys:  # the second pass finds cached heads
        h = hashes.key_hash(prefix, key.encode())
        if key.isascii():
            assert h == java_string_hash(f"{topic}#{key}") & 0xFFFFFFFF
        else:
            assert h is None


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3), st.integers(-2, 2), st.text(max_size=3))
def test_property_strings_longer_than_the_power_table_hash_as_java_does(chunks, extra, tail):
    # Built from a few random pieces repeated, so the naive loop stays quick; the table's edge is where it breaks.
    n = max(java_hash._MAX_POWERS * chunks + extra, 0)
    s = ("ab\u00e9" * (n // 3 + 1))[:n] + tail
    assert java_string_hash(s) == naive_java_hash(s)
    suffix = ("x" * n).encode()
    assert extend_hash(7, suffix) == naive_java_hash(chr(7) + "x" * n) & 0xFFFFFFFF  # h(chr(7)) is 7


def test_a_long_string_leaves_the_power_table_at_its_cap():
    java_string_hash("t" * (java_hash._MAX_POWERS * 5 + 17))
    assert extend_hash(1, b"k" * (java_hash._MAX_POWERS * 3)) is not None
    assert len(java_hash._POWERS) <= java_hash._MAX_POWERS + 1


def test_hash_map_order_is_javas() -> None:
    # What java.util.HashMap<>(16).keySet() gave for these keys put in this order (Java 17's jshell), across the
    # table's resizes (3 keys in 16 buckets, 18 in 32); mqadmin's queryMsgTraceById prints its groups so.
    keys = ["CgFirst", "CgSecond", "order-handlers", "G1", "G2", "G3", "audit", "billing", "shipping", "cg_a", "cg_b",
            "cg_c", "cg_d", "cg_e", "cg_f", "cg_g", "cg_h", "Z"]
    assert hash_map_order(keys[:3]) == ["order-handlers", "CgSecond", "CgFirst"]
    assert hash_map_order(keys) == ["cg_g", "cg_h", "cg_e", "cg_f", "cg_c", "cg_d", "CgSecond", "cg_a", "cg_b", "G1",
                                    "G2", "G3", "billing", "shipping", "order-handlers", "audit", "Z", "CgFirst"]
    assert hash_map_order(["b", "a", "b"]) == hash_map_order(["b", "a"])
