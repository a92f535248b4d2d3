"""Java's whitespace and split rules, against their definitions."""

from __future__ import annotations

import unicodedata

from pocketmq.common.java_text import JAVA_WHITESPACE, is_blank, java_split


def test_the_whitespace_set_is_character_is_whitespace() -> None:
    # Character.isWhitespace: Zs, Zl, Zp but the no-break spaces; U+0009-U+000D; U+001C-U+001F. Whatever Python's
    # isspace says (it takes U+0085 and the no-break spaces too).
    expected = {chr(c) for c in range(0x110000)
                if (unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp") and chr(c) not in "\u00a0\u2007\u202f")
                or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F}
    assert expected == JAVA_WHITESPACE


def test_is_blank() -> None:
    assert is_blank("") and is_blank(" \t\r\n") and is_blank("\u3000\u2028")
    assert not is_blank("\u00a0") and not is_blank("\x85") and not is_blank(" a ")


def test_java_split() -> None:
    assert java_split("k1 k2 ", " ") == ["k1", "k2"]
    assert java_split("k1  k2", " ") == ["k1", "", "k2"]
    assert java_split(" k1", " ") == ["", "k1"]
    assert java_split("", " ") == [""]  # no separator: the text itself
    assert java_split("   ", " ") == []
