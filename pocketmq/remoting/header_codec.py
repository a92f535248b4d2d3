"""How a typed header (RocketMQ's CommandCustomHeader) travels in a command's ext fields: the CommandHeader
base, ``wire``, and each class's ``to_ext`` / ``from_ext``, RocketMQ's ``makeCustomHeaderToNet`` and
``decodeCommandCustomHeader``. The header classes themselves are in the ``*_header.py`` files beside this one,
importable from ``header.py``.

A header is a slots dataclass deriving from CommandHeader. Attributes are snake_case; the wire name is the
camelCase form (``queue_id`` -> ``queueId``) unless a field overrides it with ``wire("clientID")``. Supported
field types are str, int, bool and float, each optionally ``| None``. A field without a default is required.

``from_ext`` accepts the native msgpack types and also the strings that RocketMQ's own codecs send (every ext
value of a native frame is one), read the way Java's ``decodeCommandCustomHeader`` reads them: decimal integers,
and booleans as Java's ``Boolean.parseBoolean`` does: "true" in any case is true, any other text false (the "0"
and "1" the C++ client sends, for one, are false both).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from pocketmq.common.java_numbers import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN

from .errors import HeaderError
from .speedups import speedups

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def wire(name: str, **kwargs: Any) -> Any:
    """A dataclass field whose wire name is not the camelCase of its attribute name."""
    return field(metadata={"wire": name}, **kwargs)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def _show(v: object) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


# Header fields that are a Java Integer in RocketMQ's header classes (the others are Long): a text beyond its
# range is a NumberFormatException there, a bad request here.
_JAVA_INT_FIELDS = frozenset({
    "queue_id", "max_msg_nums", "sys_flag", "flag", "default_topic_queue_nums", "reconsume_times",
    "max_reconsume_times", "read_queue_nums", "write_queue_nums", "perm", "topic_sys_flag", "delay_level",
    "max_num", "count",  # QUERY_MESSAGE's maxNum, QUERY_CONSUME_QUEUE's count
    "d", "e", "f", "h", "j", "l",  # SendMessageRequestHeaderV2's names of the Integer ones above
})


def _parse_int(wire_name: str, v: object) -> int:
    if type(v) is int:
        return v
    if type(v) is str and _INT_RE.fullmatch(v):
        n = int(v)
        if LONG_MIN <= n <= LONG_MAX:
            return n
    raise HeaderError(wire_name, f"expected an int, got {type(v).__name__} {_show(v)}")


def _parse_java_int(wire_name: str, v: object) -> int:
    n = _parse_int(wire_name, v)
    if type(v) is str and not INT_MIN <= n <= INT_MAX:
        raise HeaderError(wire_name, f"expected an int, got {type(v).__name__} {_show(v)}")
    return n


def _parse_str(wire_name: str, v: object) -> str:
    if type(v) is str:
        return v
    raise HeaderError(wire_name, f"expected a str, got {type(v).__name__} {_show(v)}")


def _parse_bool(wire_name: str, v: object) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        # Java's Boolean.parseBoolean, which never refuses a text: "true" in any case is true, any other text
        # ("1", "", "yes") false, so a broker answers such a request rather than refusing it, as Apache's does
        return v.lower() == "true"
    raise HeaderError(wire_name, f"expected a bool, got {type(v).__name__} {_show(v)}")


def _parse_float(wire_name: str, v: object) -> float:
    if type(v) is float or type(v) is int:
        return float(v)
    if type(v) is str and _FLOAT_RE.fullmatch(v):
        return float(v)
    raise HeaderError(wire_name, f"expected a float, got {type(v).__name__} {_show(v)}")


_PARSERS: dict[type, Callable[[str, object], object]] = {
    int: _parse_int,
    str: _parse_str,
    bool: _parse_bool,
    float: _parse_float,
}
# What to_ext accepts per declared type (bool is refused where an int is declared: it is almost surely a bug).
_ACCEPTS: dict[type, Callable[[object], bool]] = {
    int: lambda v: type(v) is not bool and isinstance(v, int),
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    float: lambda v: type(v) is not bool and isinstance(v, int | float),
}


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    """How one header field travels: attribute, wire name, type and whether it is required."""

    attr: str
    wire: str
    kind: type
    required: bool


_SPECS: dict[type, tuple[_FieldSpec, ...]] = {}
T = TypeVar("T", bound="CommandHeader")


def _specs(cls: type) -> tuple[_FieldSpec, ...]:
    specs = _SPECS.get(cls)
    if specs is not None:
        return specs
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) else ()
        kinds = [a for a in args if a is not type(None)] if args else [hint]
        if len(kinds) != 1 or kinds[0] not in _PARSERS:
            raise TypeError(f"{cls.__name__}.{f.name}: unsupported header field type {hint!r}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_FieldSpec(f.name, f.metadata.get("wire", _camel(f.name)), kinds[0], required))
    specs = _SPECS[cls] = tuple(out)
    return specs


def to_ext(header: CommandHeader) -> dict[str, object]:
    """The ext-fields map of ``header``: wire name -> value, None values left out."""
    codec = _CODECS.get(type(header)) or _compile(type(header))
    return codec[0](header)


def from_ext(cls: type[T], ext: Mapping[str, object] | None) -> T:
    """Parse and validate ``ext`` into ``cls``; raises HeaderError naming the first bad field."""
    codec = _CODECS.get(cls) or _compile(cls)
    header: T = codec[1](ext or {})
    return header


def from_ext_reference(cls: type[T], ext: Mapping[str, object] | None) -> T:
    """What ``from_ext`` does, as a loop over the field specs: the readable rule the compiled parsers follow."""
    ext = ext or {}
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, object] = {}
    for spec in _specs(cls):
        v = ext.get(spec.wire)
        if v is None:
            if spec.required:
                raise HeaderError(spec.wire, "is missing")
            f = fields[spec.attr]
            v = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[operator]
        elif type(v) is not spec.kind:
            parse = _parse_java_int if spec.kind is int and spec.attr in _JAVA_INT_FIELDS else _PARSERS[spec.kind]
            v = parse(spec.wire, v)
        kwargs[spec.attr] = v
    return cls(**kwargs)


# The texts of the small ints most header fields hold (queue ids, flags, counts), found by one lookup.
_SMALL_INTS = {str(i): i for i in range(-1, 1024)}


# Per header class, a to_ext and a from_ext written out field by field (compiled once, at first use): every
# request and response goes through them, and the unrolled form with the common type as a fast path costs a
# third of a loop over the field specs. They implement exactly the rules of _ACCEPTS and _PARSERS.
_CODECS: dict[type, tuple[Callable[[Any], dict[str, object]], Callable[[Mapping[str, object]], Any]]] = {}


# The C accelerator's reader of the common case (pocketmq.remoting.speedups), or None: the Python alone.
_EXT_VALUES: Callable[[Mapping[str, object], tuple[Any, ...]], tuple[object, ...] | None] | None = (
    speedups.ext_values if speedups is not None else None
)


def _compile(
    cls: type, wire_names: Mapping[str, str] | None = None, ext_values: Any = _EXT_VALUES
) -> tuple[Callable[[Any], dict[str, object]], Callable[[Mapping[str, object]], Any]]:
    """The class's (to_ext, from_ext); with ``wire_names`` (attribute -> wire name, for every field) a pair
    under those names instead, built each call (the caller keeps it). ``ext_values``: the C reader the from_ext
    tries first, None for none; a pair with another than the selected one is not kept (the tests make both)."""
    specs = _specs(cls)
    if wire_names is not None:
        specs = tuple(dataclasses.replace(spec, wire=wire_names[spec.attr]) for spec in specs)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if not all(f.init for f in fields.values()):
        raise TypeError(f"{cls.__name__}: header fields must all be __init__ arguments")
    ns: dict[str, Any] = {"HeaderError": HeaderError, "_show": _show, "cls": cls, "SMALL_INTS": _SMALL_INTS}
    to_lines = ["def to_ext(h):", "    ext = {}"]
    from_lines = ["def from_ext(ext):"]
    if ext_values is not None and not any(f.kw_only for f in fields.values()):
        # The C reads the common case (every field of its type or its usual text, or absent and optional) into
        # the field values in order; None sends the rest, errors included, to the Python below.
        ns["EXT_VALUES"], ns["SPECS"] = ext_values, _c_specs(specs, fields)
        from_lines += ["    vals = EXT_VALUES(ext, SPECS)", "    if vals is not None:", "        return cls(*vals)"]
    from_lines += ["    get = ext.get"]
    args = []
    for i, spec in enumerate(specs):
        kind, wire_name = spec.kind.__name__, spec.wire
        ns[f"A{i}"], ns[f"P{i}"] = _ACCEPTS[spec.kind], _PARSERS[spec.kind]
        if spec.kind is int and spec.attr in _JAVA_INT_FIELDS:
            ns[f"P{i}"] = _parse_java_int
        expected = f"expected {kind}, got "
        to_lines += [f"    v = h.{spec.attr}"]
        if spec.required:
            to_lines += ["    if v is None:", f"        raise HeaderError({wire_name!r}, 'is required but is None')"]
        else:
            to_lines += ["    if v is not None:"]
        pad = "    " if spec.required else "        "
        to_lines += [
            f"{pad}if type(v) is not {kind} and not A{i}(v):",
            f"{pad}    raise HeaderError({wire_name!r}, {expected!r} + type(v).__name__ + ' ' + _show(v))",
            f"{pad}ext[{wire_name!r}] = v",
        ]
        from_lines += [f"    v = get({wire_name!r})", "    if v is None:"]
        if spec.required:
            from_lines += [f"        raise HeaderError({wire_name!r}, 'is missing')"]
        else:
            f = fields[spec.attr]
            if f.default is dataclasses.MISSING:
                ns[f"D{i}"] = f.default_factory
                from_lines += [f"        v = D{i}()"]
            else:
                ns[f"D{i}"] = f.default
                from_lines += [f"        v = D{i}"]
        from_lines += [f"    elif type(v) is not {kind}:"]
        # A native frame's values are all text: the common texts are read inline (what the parser would make
        # of them; test_remoting_fast_paths holds them to from_ext_reference), anything else goes to the parser.
        if spec.kind is int:
            digits = 9 if ns[f"P{i}"] is _parse_java_int else 18  # (fewer digits than the type's range)
            from_lines += [
                "        if type(v) is str and (n := SMALL_INTS.get(v)) is not None:",
                "            v = n",
                f"        elif type(v) is str and v.isascii() and v.isdigit() and len(v) <= {digits}:",
                "            v = int(v)",
                "        else:",
                f"            v = P{i}({wire_name!r}, v)",
            ]
        elif spec.kind is bool:
            from_lines += [
                "        if type(v) is str and v == 'false':",
                "            v = False",
                "        elif type(v) is str and v == 'true':",
                "            v = True",
                "        else:",
                f"            v = P{i}({wire_name!r}, v)",
            ]
        else:
            from_lines += [f"        v = P{i}({wire_name!r}, v)"]
        from_lines += [f"    f{i} = v"]
        args.append(f"{spec.attr}=f{i}")
    to_lines += ["    return ext"]
    from_lines += [f"    return cls({', '.join(args)})"]
    exec("\n".join(to_lines + from_lines), ns)  # code built from the dataclass's own field specs
    codec = (ns["to_ext"], ns["from_ext"])
    if wire_names is None and ext_values is _EXT_VALUES:
        _CODECS[cls] = codec
    return codec


def _c_specs(
    specs: tuple[_FieldSpec, ...], fields: Mapping[str, dataclasses.Field[Any]]
) -> tuple[tuple[str, int, bool, object, object], ...]:
    """The field specs as ``_speedups.ext_values`` takes them: (wire name, kind, required, default, default
    factory or None), kind 0 str, 1 int (a Java long), 2 a Java int, 3 bool, 4 float."""
    out = []
    for spec in specs:
        if spec.kind is int:
            kind = 2 if spec.attr in _JAVA_INT_FIELDS else 1
        else:
            kind = {str: 0, bool: 3, float: 4}[spec.kind]
        f = fields[spec.attr]
        factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
        default = None if f.default is dataclasses.MISSING else f.default
        out.append((spec.wire, kind, spec.required, default, factory))
    return tuple(out)


class CommandHeader:
    """Base of header dataclasses; gives them ``to_ext()`` and ``from_ext(ext)``."""

    __slots__ = ()

    def to_ext(self) -> dict[str, object]:
        return to_ext(self)

    @classmethod
    def from_ext(cls, ext: Mapping[str, object] | None) -> Self:
        return from_ext(cls, ext)
