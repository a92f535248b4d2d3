"""BrokerConfig's properties file: its bytes decoded, its lines read into field values, and the values written back
(what ``pocketmq broker -p`` and GET_BROKER_CONFIG print)."""

from __future__ import annotations

import codecs
import dataclasses
from typing import Any

from pocketmq.common.java_text import parse_integer
from pocketmq.common.properties_text import parse_finite_float
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
    """The file's text, read as UTF-8 line by line (a UTF-8 BOM dropped). Java's Properties.load reads ISO-8859-1,
    so broker.conf files carry comments in any encoding (GBK, Latin-1): such a comment line is skipped; a key or
    value that is not UTF-8 is a BrokerConfigError naming its line, rather than a setting read as mojibake."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    lines = []
    for lineno, raw in enumerate(data.splitlines(), 1):  # (bytes: \n, \r and \r\n only, as Java's)
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            if raw.lstrip(b" \t\f")[:1] in (b"#", b"!"):
                lines.append("")
                continue
            raise BrokerConfigError(
                f"{source}:{lineno}: byte 0x{raw[e.start]:02x} is not UTF-8: write the key and value in UTF-8 "
                "(comments may be in any encoding)") from None
    return "\n".join(lines)


def read_properties(fields: dict[str, dataclasses.Field[Any]], text: str, source: str) -> dict[str, Any]:
    """The attribute values the ``key=value`` lines of ``text`` set (``#``/``!`` comments); ``fields`` by key."""
    values: dict[str, Any] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, value = _split_property(line)
        where = f"{source}:{lineno}"
        f = fields.get(key)
        if f is None:
            raise BrokerConfigError(f"{where}: {unknown_key_message(key, list(fields))}")
        try:
            values[f.name] = convert_value(f, value)
        except ValueError as e:
            raise BrokerConfigError(f"{where}: bad value for {key}: {e}") from None
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


def _split_property(line: str) -> tuple[str, str]:
    # Java properties: the key ends at the first '=' or ':' (whitespace around it is dropped).
    cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    if cut < 0:
        return line, ""
    return line[:cut].strip(), line[cut + 1 :].strip()


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
    """A properties file's bytes with each key of ``values`` set: the lines that set it rewritten as ``key=value``,
    a key the file lacks appended; every other line (comments, in whatever encoding) kept byte for byte."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    lines = data[len(bom):].splitlines(keepends=True)
    newline = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
    missing = dict(values)
    out = []
    for raw in lines:
        key = _line_key(raw)
        if key is not None and key in values:
            ending = raw[len(raw.rstrip(b"\r\n")):] or newline
            out.append(f"{key}={values[key]}".encode() + ending)
            missing.pop(key, None)
        else:
            out.append(raw)
    if missing:
        if out and not out[-1].endswith((b"\n", b"\r")):
            out[-1] += newline
        out += [f"{key}={value}".encode() + newline for key, value in missing.items()]
    return bom + b"".join(out)


def _line_key(raw: bytes) -> str | None:
    """The key a file line sets, as read_properties reads it; None for a blank or comment line."""
    try:
        line = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None  # (a comment in another encoding: decode_properties_file skips it too)
    if not line or line[0] in "#!":
        return None
    return _split_property(line)[0]
