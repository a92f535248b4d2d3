"""BrokerConfig's properties file: its bytes decoded, its lines read into field values, and the values written back
(what ``pocketmq broker -p`` and GET_BROKER_CONFIG print)."""

from __future__ import annotations

import codecs
import dataclasses
from typing import Any

from pocketmq.common.java_text import parse_integer
from pocketmq.common.properties_text import (
    PropertiesSyntaxError,
    continues,
    logical_lines,
    parse_finite_float,
    property_line,
    read_properties_text,
    split_lines,
    split_property,
)
from pocketmq.storage.config import FlushDiskType


class BrokerConfigError(ValueError):
    """A properties file that cannot be turned into a BrokerConfig (unknown key, bad value)."""


# Keys of RocketMQ's broker.conf that pocketmq knows but does not implement: a clearer error than "unknown".
_ROCKETMQ_UNSUPPORTED = {
    "brokerIP2": "no HA/replication",
    "haListenPort": "no HA/replication",
    "storePathCommitLog": "the commit log always lives under storePathRootDir/commitlog",
    "transientStorePoolEnable": "no transient store pool",
    "slaveReadEnable": "no slaves",
    "enableDLegerCommitLog": "no DLedger",
}
_UNIT_SCALE = {"ms": 1000, "us": 1_000_000}  # file value per second


def decode_properties_file(data: bytes, source: str) -> str:
    """The file's text, read as UTF-8 (a UTF-8 BOM dropped; line ends kept, as they decide a lone backslash's
    fate). Java's Properties.load(InputStream), which RocketMQ's BrokerStartup calls (4.9.7 and 5.x alike), reads
    ISO-8859-1: pocketmq reads UTF-8 as documented in docs/broker.md, and a ``\\uXXXX`` escape the same as Java.
    So broker.conf files carry comments in any encoding (GBK, Latin-1): such a comment line is skipped; a key or
    value that is not UTF-8 is a BrokerConfigError naming its line, rather than a setting read as mojibake."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    text = data.decode("utf-8", "replace")  # (a comment's other bytes as U+FFFD, which no setting reads)
    if "\ufffd" not in text:
        return text
    raw_lines = data.splitlines()  # (bytes: \n, \r and \r\n only, as Java's and split_lines')
    for logical in logical_lines(split_lines(text)):
        for lineno, raw in enumerate(raw_lines[logical.first:logical.last + 1], logical.first + 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BrokerConfigError(
                    f"{source}:{lineno}: byte 0x{raw[e.start]:02x} is not UTF-8: write the key and value in UTF-8 "
                    "(comments may be in any encoding)") from None
    return text


def read_properties(fields: dict[str, dataclasses.Field[Any]], text: str, source: str) -> dict[str, Any]:
    """The attribute values the settings of ``text`` set, read as Java's Properties.load reads them (continued
    lines, ``\\uXXXX`` and other escapes, ``key value``: pocketmq.common.properties_text); ``fields`` by key.
    An error names the line a setting starts on."""
    values: dict[str, Any] = {}
    try:
        for prop in read_properties_text(text):
            where = f"{source}:{prop.lineno}"
            f = fields.get(prop.key)
            if f is None:
                raise BrokerConfigError(f"{where}: {unknown_key_message(prop.key, list(fields))}")
            try:
                # (trailing whitespace, which Properties.load keeps, dropped: RocketMQ 5 trims a String value, and
                # Integer.parseInt refuses " 1", so RocketMQ ignores the setting)
                values[f.name] = convert_value(f, prop.value.strip())
            except ValueError as e:
                raise BrokerConfigError(f"{where}: bad value for {prop.key}: {e}") from None
    except PropertiesSyntaxError as e:  # (Java: IllegalArgumentException "Malformed \uxxxx encoding.")
        raise BrokerConfigError(f"{source}:{e.lineno}: {e.reason}") from None
    return values


def format_value(f: dataclasses.Field[Any], v: Any) -> str:
    """A field's value as its key's file value (the inverse of convert_value)."""
    scale = _UNIT_SCALE.get(f.metadata.get("unit") or "")
    if scale is not None:
        return str(round(v * scale))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # (fileReservedTime=72, as RocketMQ's int prints it: its Integer.parseInt refuses "72.0")
    return str(v)


def convert_value(f: dataclasses.Field[Any], value: str) -> Any:
    """A file value as the field's attribute value; ValueError with the reason. Whole-number keys (RocketMQ's int
    and long settings, times in ms) are read as Java reads them; NaN and the infinities are refused everywhere."""
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    scale = _UNIT_SCALE.get(f.metadata.get("unit") or "")
    if scale is not None:
        return parse_integer(value) / scale
    if kind.startswith("bool"):
        low = value.lower()
        if low not in ("true", "false"):
            raise ValueError(f"expected true or false, got {value!r}")
        return low == "true"
    if kind.startswith("int"):
        return parse_integer(value)
    if kind.startswith("float"):
        return parse_finite_float(value)
    if kind.startswith("FlushDiskType"):
        try:
            return FlushDiskType(value)
        except ValueError:
            raise ValueError(f"expected ASYNC_FLUSH or SYNC_FLUSH, got {value!r}") from None
    return value


def unknown_key_message(key: str, known: list[str]) -> str:
    """Why ``key`` is no broker config key: a RocketMQ key pocketmq does not implement, or a misspelt one."""
    why = _ROCKETMQ_UNSUPPORTED.get(key)
    if why is not None:
        return f"RocketMQ key {key!r} is not supported by pocketmq ({why})"
    import difflib  # (only for a misspelt key)

    hint = difflib.get_close_matches(key, known, n=1)
    suffix = f"; did you mean {hint[0]!r}?" if hint else ""
    return f"unknown broker config key {key!r}{suffix}"


def update_properties_bytes(data: bytes, values: dict[str, str]) -> bytes:
    """A properties file's bytes with each key of ``values`` set: the lines of each setting of it (a continued one's
    every line) rewritten as one ``key=value`` line, escaped to read back as given; a key the file lacks appended;
    every other line (comments, in whatever encoding) kept byte for byte."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    body = data[len(bom):]
    raw_lines = body.splitlines(keepends=True)
    lines = split_lines(body.decode("utf-8", "replace"))  # (the same lines: U+FFFD holds no line end)
    newline = b"\r\n" if raw_lines and raw_lines[0].endswith(b"\r\n") else b"\n"
    spans: dict[int, tuple[int, str]] = {}  # first line -> last line, key
    for logical in logical_lines(lines):
        try:
            key = split_property(logical.text)[0]
        except ValueError:
            continue  # (a malformed \uXXXX, which the file may have had since the start: kept, as any line)
        if key in values:
            spans[logical.first] = (min(logical.last, len(raw_lines) - 1), key)
    missing = dict(values)
    out = []
    i = 0
    while i < len(raw_lines):
        if i not in spans:
            out.append(raw_lines[i])
            i += 1
            continue
        last, key = spans[i]
        ending = raw_lines[last][len(raw_lines[last].rstrip(b"\r\n")):] or newline
        out.append(property_line(key, values[key]).encode() + ending)
        missing.pop(key, None)
        i = last + 1
    if missing:
        if out and not out[-1].endswith((b"\n", b"\r")):
            out[-1] += newline
        if out and continues(out[-1].rstrip(b"\r\n").decode("utf-8", "replace")):
            out.append(newline)  # (the file ends in a backslash: a blank line, so that it does not continue)
        out += [property_line(key, value).encode() + newline for key, value in missing.items()]
    return bom + b"".join(out)
