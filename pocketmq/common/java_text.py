"""Java's text rules where Python's differ: Character.isWhitespace (and commons-lang's StringUtils.isBlank built on
it), String.split's dropping of trailing empty strings, and Long.parseLong's strictness (Python's int() also takes
surrounding whitespace and "_" between digits).

Python's str.isspace / str.strip take U+00A0, U+2007, U+202F (the no-break spaces) and U+0085 (NEL) for
whitespace; Java does not, so a tag or key of them is refused by one and taken by the other. Both sides apply
RocketMQ's blank checks (the 5.x proxy's validators, the 4.x client's UtilAll.isBlank), hence common/.
"""

from __future__ import annotations

import re

from .java_numbers import LONG_MAX, LONG_MIN

# Character.isWhitespace: the Unicode space, line and paragraph separators (Zs, Zl, Zp) but the no-break spaces,
# and the ASCII controls U+0009-U+000D, U+001C-U+001F. Every such character is in the BMP, so Java's per-UTF-16-unit
# test and a per-code-point one agree (tests/common/test_java_text.py checks the set against unicodedata).
JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
    "\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)


def is_java_whitespace(ch: str) -> bool:
    """Character.isWhitespace of one character."""
    return ch in JAVA_WHITESPACE


def is_blank(text: str) -> bool:
    """StringUtils.isBlank: empty, or only Character.isWhitespace characters."""
    return all(ch in JAVA_WHITESPACE for ch in text)


def java_split(text: str, sep: str) -> list[str]:
    """String.split(sep) for a literal ``sep`` (a regex that matches only itself): trailing empty strings dropped,
    leading ones kept, and a text without ``sep`` (the empty one too) is its only part."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and not parts[-1]:
        parts.pop()
    return parts


_INTEGER = re.compile(r"[+-]?\d+")  # \d: Unicode decimal digits, which Character.digit takes too


def parse_integer(text: str, lo: int = LONG_MIN, hi: int = LONG_MAX) -> int:
    """Long.parseLong (Integer.parseInt with the int's range): a sign and decimal digits, nothing else, within
    [lo, hi]; ValueError otherwise ("1.5", "1e3", "NaN", " 2", "1_000" are no numbers there)."""
    # (Java reads a UTF-16 unit at a time: a digit outside the BMP is two surrogates, no digit to Character.digit)
    if _INTEGER.fullmatch(text) is None or not (text.isascii() or max(map(ord, text)) < 0x10000):
        raise ValueError(f"expected a whole number, got {text!r}")
    n = int(text)
    if not lo <= n <= hi:
        raise ValueError(f"{text} is out of range")
    return n
