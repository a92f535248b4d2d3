"""Java properties text read by java.util.Properties.load's rules, and written to read back the same.

Every expected result below is what JDK 17's Properties.load gives for the same text (checked once with a small
Java program over these cases and some 30,000 random texts of separators, backslashes, line ends, comment marks
and escapes; the two deliberate differences are tested at the end). The audit of Apache RocketMQ 4.9.7 and 5.5.0
(BrokerStartup: Properties.load then MixAll.properties2Object) read brokerName=broker\\u00e9 as "brokeré",
C:\\\\rocketmq\\\\store as C:\\rocketmq\\store, a value continued with a backslash as one line, and
"listenPort 10921" as listenPort=10921."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common.properties_text import (
    PropertiesSyntaxError,
    format_properties,
    parse_properties,
    property_line,
    read_properties_text,
)

JAVA_CASES = [
    # escapes: \uXXXX (either case), \\ a backslash, \t \n \r \f, a backslash before anything else is that character
    ("brokerName=broker\\u00e9\n", {"brokerName": "brokeré"}),
    ("storePathRootDir=C:\\\\rocketmq\\\\store", {"storePathRootDir": "C:\\rocketmq\\store"}),
    ("a=C:\\rocketmq\\store", {"a": "C:\rocketmqstore"}),  # (single backslashes: \\r a carriage return, \\s an s)
    ("k=\\t\\n\\r\\f\\x\\\\", {"k": "\t\n\r\fx\\"}),
    ("emoji=\\uD83D\\ude00", {"emoji": "\U0001f600"}),  # (two UTF-16 code units: one character)
    # continuation: an odd number of trailing backslashes; the next line's leading whitespace dropped
    ("messageDelayLevel=1s 5s 10s 30s \\\n   1m 2m 3m\n", {"messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m"}),
    ("a=x\\\r\n\t\fy\\\r  z\nb=2", {"a": "xyz", "b": "2"}),
    ("a=x\\\\\nb=2", {"a": "x\\", "b": "2"}),  # (an even number: escaped backslashes, no continuation)
    ("a=x\\\n# not a comment\n", {"a": "x# not a comment"}),
    ("a=x\\\n\nb=2", {"a": "x", "b": "2"}),  # (a blank line ends it)
    ("a=x\\", {"a": "x"}),  # (a backslash ending the text is dropped)
    ("a=x\\\n", {"a": "x"}),
    ("# comment \\\na=1", {"a": "1"}),  # (a comment never continues)
    ("\\\n# comment\na=1", {"a": "1"}),  # (JDK 9+: the line is still empty, so this is a comment)
    # separators: the first unescaped '=', ':' or whitespace; then whitespace and one '=' or ':'
    ("listenPort 10921", {"listenPort": "10921"}),
    ("listenPort\t:  10921", {"listenPort": "10921"}),
    ("listenPort:10921", {"listenPort": "10921"}),
    ("a = = b", {"a": "= b"}),
    ("a==b", {"a": "=b"}),
    ("a\\=b=c", {"a=b": "c"}),
    ("a\\ b:c\\:d", {"a b": "c:d"}),
    ("key", {"key": ""}),
    ("=v", {"": "v"}),
    ("a=b  ", {"a": "b  "}),  # (the value's trailing whitespace kept)
    # comments and blank lines; only \n, \r and \r\n end a line (not \v, \x85 or U+2028)
    ("  ! bang\n\t# hash\n \f\na=1\r\rb=2\r\n", {"a": "1", "b": "2"}),
    ("a=1\x0b2\u20283\x854", {"a": "1\x0b2\u20283\x854"}),
    ("a=1\na=2", {"a": "2"}),  # (the last one wins)
]


@pytest.mark.parametrize(("text", "expected"), JAVA_CASES)
def test_text_reads_as_javas_properties_load_reads_it(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_a_setting_is_placed_on_the_line_it_starts_on() -> None:
    props = list(read_properties_text("# c\nmessageDelayLevel=1s \\\n  2s \\\n  3s\n\nlistenPort 1\n"))
    assert [(p.key, p.value, p.lineno) for p in props] == [("messageDelayLevel", "1s 2s 3s", 2), ("listenPort", "1", 6)]


@pytest.mark.parametrize("text", ["a=\\u00g1", "a=\\u12", "a=b\\\n  \\uZZZZ", "a\\u=b"])
def test_a_malformed_unicode_escape_is_an_error_naming_the_first_line(text: str) -> None:
    # (Java: IllegalArgumentException "Malformed \uxxxx encoding.", which stops Apache's broker at start)
    with pytest.raises(PropertiesSyntaxError, match=r"line 2: malformed \\uxxxx escape") as e:
        parse_properties("# c\n" + text + "\nb=1")
    assert e.value.lineno == 2


def test_the_deliberate_differences_from_java() -> None:
    # Java keeps half a surrogate pair (a String no encoder writes); pocketmq refuses it where it is read.
    with pytest.raises(PropertiesSyntaxError, match="half of a surrogate pair"):
        parse_properties("a=\\uD83D")
    # A lone backslash ending the text: Java sets "" to "" after "\\\n" and nothing after "\\\r\n"; pocketmq
    # sets nothing (a broker would refuse the unknown key '').
    assert parse_properties("a=1\n\\\n") == parse_properties("a=1\n\\\r\n") == {"a": "1"}


def test_written_lines_need_escapes_only_where_java_reads_them() -> None:
    # (GET_BROKER_CONFIG's and `pocketmq broker -p`'s lines stay readable; non-ASCII as \uXXXX, as
    # Properties.store writes it, so that Java's ISO-8859-1 Properties.load(InputStream) reads it too)
    assert property_line("namesrvAddr", "127.0.0.1:9876;h:1") == "namesrvAddr=127.0.0.1:9876;h:1"
    assert property_line("messageDelayLevel", "1s 5s") == "messageDelayLevel=1s 5s"
    assert property_line("storePathRootDir", "C:\\store") == "storePathRootDir=C:\\\\store"
    assert property_line("brokerName", "  é\n") == "brokerName=\\ \\ \\u00e9\\n"
    assert property_line("#a b=c:d!", "") == "\\#a\\ b\\=c\\:d\\!="


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), st.text()))
def test_written_text_reads_back_the_same(props: dict[str, str]) -> None:
    text = format_properties(props)
    assert parse_properties(text) == props
    assert parse_properties(text.replace("\n", "\r\n")) == props
    assert text.isascii()
