"""Tokens of RocketMQ's SelectorParser.jj: keywords and identifiers are case-insensitive, literals as JavaCC
matches them (longest match; a keyword wins over an identifier of the same length)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SqlParseError

KEYWORDS = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"}
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a filter expression, at ``pos`` in its text."""

    kind: str  # a keyword in upper case, an operator ("=", "<>", "(" ...), "ID", "INT", "FLOAT", "STRING" or "EOF"
    text: str  # the source text (for ID: the property name as written; for STRING: the decoded value)
    pos: int


_SPACE = " \t\n\r\f"
_DIGITS = "0123456789"
# Alternatives tried in order at each position; JavaCC's longest match is kept by ordering floats before ints.
_FLOAT = re.compile(r"(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)")
_INT = re.compile(r"0|[1-9][0-9]*[lL]?")
_ID = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_LINE_END = re.compile(r"[\r\n]")
_OPERATORS = ("<>", ">=", "<=", "=", ">", "<", "(", ")", ",", "+", "-")


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    last_line_end = max(text.rfind("\n"), text.rfind("\r"))
    while True:
        i = _skip_blanks(text, i, last_line_end)
        if i >= n:
            tokens.append(Token("EOF", "", n))
            return tokens
        c = text[i]
        if c == "'":
            value, i2 = _string(text, i)
            tokens.append(Token("STRING", value, i))
            i = i2
            continue
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            number = _number(text, i)
            if number is not None:
                tokens.append(number)
                i += len(number.text)
                continue
        m = _ID.match(text, i)
        if m is not None:
            word = m.group()
            upper = word.upper()
            tokens.append(Token(upper if upper in KEYWORDS else "ID", word, i))
            i = m.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                tokens.append(Token(op, op, i))
                i += len(op)
                break
        else:
            raise SqlParseError(f"unexpected character {c!r}", text, i)


def _skip_blanks(text: str, i: int, last_line_end: int) -> int:
    """Where the next token starts: past white space and comments. ``last_line_end`` is the index of the text's
    last \\r or \\n (-1: none)."""
    n = len(text)
    while i < n:
        if text[i] in _SPACE:
            i += 1
        elif text.startswith("--", i) and last_line_end > i:
            # LINE_COMMENT ends with a line end: without one later in the text, "--" is two minus signs
            # ("a = --5" is "a = 5").
            m = _LINE_END.search(text, i)
            assert m is not None  # (a line end follows)
            i = m.start()
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SqlParseError("unterminated /* comment", text, i)
            i = end + 2
        else:
            break
    return i


def _number(text: str, i: int) -> Token | None:
    """The longer of a FLOAT and an INT at ``i`` (``1.5`` is a float, ``1L`` an int), or None."""
    m = _FLOAT.match(text, i)
    m_int = _INT.match(text, i)
    if m is not None and (m_int is None or m.end() > m_int.end()):
        return Token("FLOAT", m.group(), i)
    if m_int is not None:
        return Token("INT", m_int.group(), i)
    return None


def _string(text: str, start: int) -> tuple[str, int]:
    """A quoted literal; '' inside stands for one quote. Returns the value and the index after it."""
    out: list[str] = []
    i = start + 1
    while True:
        end = text.find("'", i)
        if end < 0:
            raise SqlParseError("unterminated string literal", text, start)
        out.append(text[i:end])
        if text.startswith("''", end):
            out.append("'")
            i = end + 2
        else:
            return "".join(out), end + 1
