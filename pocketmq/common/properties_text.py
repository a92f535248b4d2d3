"""Java properties text, read by java.util.Properties.load's rules (how RocketMQ reads broker.conf, and the bodies of
GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG, MixAll.string2Properties), and written so that it reads back the same.

The rules, as Properties.load applies them (JDK 9 and later; JDK 8 differs in degenerate cases only):

- a line ends at ``\\n``, ``\\r`` or ``\\r\\n``; its leading spaces, tabs and form feeds are dropped;
- a blank line, or one whose first other character is ``#`` or ``!``, is skipped (a comment never continues);
- a line ending in an odd number of backslashes continues on the next line, whose leading whitespace is dropped
  (a continuation line starting with ``#`` is not a comment); a blank line ends it; a backslash ending the text
  is dropped;
- the key ends at the first ``=``, ``:``, space, tab or form feed not escaped by a backslash; whitespace and one
  ``=`` or ``:`` after it are skipped, the rest of the line is the value (its trailing whitespace kept);
- in key and value, ``\\t \\n \\r \\f`` are those characters, ``\\uXXXX`` is a UTF-16 code unit (IllegalArgument
  "Malformed \\uxxxx encoding." when it is not four hex digits), and a backslash before any other character is that
  character (``\\\\`` a backslash, ``\\=`` an equals sign, ``\\ `` a space).

Text only: the callers decode the bytes (UTF-8: see decode_properties_file in pocketmq.broker.config_properties).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_WHITESPACE = " \t\f"  # (Properties.load's whitespace: not \v, nor Unicode's)
_LINE_END = re.compile(r"\r\n|\r|\n")
# (a line: its key, escaped characters and any but a separator; its separator, whitespace and one '=' or ':' or
# whitespace alone; whitespace; its value)
_PROPERTY = re.compile(r"((?:[^\\=: \t\f]|\\.?)*)(?:[ \t\f]*[=:]|[ \t\f]+)?[ \t\f]*(.*)", re.DOTALL)
_ESCAPED = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(u)|(.))", re.DOTALL)
_UNESCAPE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


class PropertiesSyntaxError(ValueError):
    """A line Properties.load throws on (a malformed ``\\uXXXX``); ``lineno`` is the line it starts on (1-based)."""

    def __init__(self, lineno: int, message: str) -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno
        self.reason = message


@dataclass(frozen=True)
class LogicalLine:
    """One setting's lines, continuations joined (leading whitespace and continuing backslashes dropped), still
    escaped; ``first`` and ``last`` index the physical lines it spans (0-based, inclusive)."""

    text: str
    first: int
    last: int


@dataclass(frozen=True)
class Property:
    """One ``key=value`` setting, unescaped; ``lineno``: its first line (1-based), the line errors name."""

    key: str
    value: str
    lineno: int


def split_lines(text: str) -> list[str]:
    """The physical lines of ``text``, as Properties.load ends them (str.splitlines would also end them at \\v,
    \\x1c..\\x1e, \\x85, \\u2028 and \\u2029, which Java reads as characters of the line)."""
    return _LINE_END.split(text)


def continues(line: str) -> bool:
    """Whether a (non-comment) line goes on on the next one: it ends in an odd number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def logical_lines(lines: Sequence[str]) -> Iterator[LogicalLine]:
    """The settings' lines of ``lines`` (split_lines' physical lines), comments and blank lines left out, as
    Properties.LineReader reads them (JDK 9 and later: a line that is still empty after a continuation, one of a
    lone backslash, takes a comment or a blank line after it as such, not as its text)."""
    n = len(lines)
    parts: list[str] = []  # (the line's text so far: pieces, a continuing backslash dropped from each)
    first = 0
    for i, raw in enumerate(lines):
        line = raw.lstrip(_WHITESPACE)
        if not parts:
            if not line or line[0] in "#!":
                continue
            first = i
        # (the text's end: no line after this one, or only the empty piece after its last line end)
        last = i == n - 1 or (i == n - 2 and not lines[-1])
        if line.endswith("\\") and continues(line):
            if len(line) > 1:
                parts.append(line[:-1])  # (at the end of the text, Properties.load drops the backslash)
            if not last or not parts:
                # (a lone backslash ending the text: Java sets "" to "" after "\\\n", nothing after "\\\r\n";
                # nothing here, rather than an unknown key '')
                continue
        else:
            parts.append(line)
        yield LogicalLine("".join(parts), first, i)
        parts = []


def split_property(line: str) -> tuple[str, str]:
    """A logical line's key and value, unescaped (Properties.load0: ``a = =b`` sets a to ``=b``, ``a b`` a to
    ``b``); ValueError for a malformed ``\\uXXXX``."""
    key, value = _PROPERTY.match(line).groups()  # type: ignore[union-attr]  # (any line matches)
    return unescape(key), unescape(value)


def unescape(text: str) -> str:
    """Properties.loadConvert: ``\\t \\n \\r \\f \\uXXXX`` and ``\\`` before any other character."""
    if "\\" not in text:
        return text
    out = _ESCAPED.sub(_unescaped, text)
    try:  # (a pair of \uXXXX escapes is one character outside the BMP, as Java's UTF-16 String has it)
        return out.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise ValueError("a \\uXXXX escape is half of a surrogate pair") from None


def _unescaped(m: re.Match[str]) -> str:
    code, malformed, other = m.groups()
    if malformed:
        raise ValueError(f"malformed \\uxxxx escape {m.string[m.start():m.start() + 6]!r}")
    return chr(int(code, 16)) if code else _UNESCAPE.get(other, other)


def read_properties_text(text: str | Sequence[str]) -> Iterator[Property]:
    """The settings of a properties text (or of its physical lines), in order; a key set twice comes twice (the
    last one wins, as in Properties); PropertiesSyntaxError naming the line of a malformed ``\\uXXXX``."""
    lines = split_lines(text) if isinstance(text, str) else text
    for logical in logical_lines(lines):
        try:
            key, value = split_property(logical.text)
        except ValueError as e:
            raise PropertiesSyntaxError(logical.first + 1, str(e)) from None
        yield Property(key, value, logical.first + 1)


def parse_properties(text: str) -> dict[str, str]:
    """Properties.load into a dict (the last of a key set twice wins); PropertiesSyntaxError as read_properties_text."""
    return {p.key: p.value for p in read_properties_text(text)}


def escape_key(key: str) -> str:
    """A key as a properties line writes it: as escape_value does, and every ``=``, ``:``, ``#``, ``!`` and space
    escaped too (as Properties.store does), so that none ends the key or makes the line a comment."""
    return _escape(key, "=:#! ")


def escape_value(value: str) -> str:
    """A value as a properties line writes it, to read back the same: backslashes, tabs, form feeds and line breaks
    escaped, leading spaces escaped, and every other character outside printable ASCII as ``\\uXXXX`` (as
    Properties.store does), so that the line reads the same through Java's ISO-8859-1 Properties.load(InputStream)
    as through pocketmq's UTF-8. ``=``, ``:``, ``#`` and ``!`` need no escape in a value (Properties.store escapes
    them all the same: pocketmq keeps ``namesrvAddr=host:9876`` as it is)."""
    text = _escape(value, "")
    stripped = text.lstrip(" ")
    return "\\ " * (len(text) - len(stripped)) + stripped


def _escape(text: str, specials: str) -> str:
    out: list[str] = []
    for c in text:
        if c in _ESCAPE:
            out.append(_ESCAPE[c])
        elif c in specials:
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        else:  # (a character outside the BMP as its two UTF-16 code units)
            units = c.encode("utf-16-be", "surrogatepass")
            out += (f"\\u{units[k]:02x}{units[k + 1]:02x}" for k in range(0, len(units), 2))
    return "".join(out)


def property_line(key: str, value: str) -> str:
    """``key=value``, both escaped, without a line end."""
    return f"{escape_key(key)}={escape_value(value)}"


def format_properties(props: dict[str, str]) -> str:
    """The text of MixAll.properties2String, escaped so that Properties.load (pocketmq's parse_properties, or Java's)
    reads the same pairs back; RocketMQ writes them unescaped, so its own reader garbles a value with a backslash."""
    return "".join(property_line(k, v) + "\n" for k, v in props.items())


def parse_finite_float(text: str) -> float:
    """A number with a fraction; ValueError for NaN and the infinities ("inf", or "1e400", which overflows to it),
    which would turn the timers and ratios they reach into errors or busy loops."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value
