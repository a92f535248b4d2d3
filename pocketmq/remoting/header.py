"""Typed custom headers (RocketMQ's CommandCustomHeader classes) carried in a command's ext fields.

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

from .codes import RequestCode
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


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
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
        if _LONG_MIN <= n <= _LONG_MAX:
            return n
    raise HeaderError(wire_name, f"expected an int, got {type(v).__name__} {_show(v)}")


def _parse_java_int(wire_name: str, v: object) -> int:
    n = _parse_int(wire_name, v)
    if type(v) is str and not _INT_MIN <= n <= _INT_MAX:
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


# --- name server -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103): a broker registers with a name server, its topic table in the body."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    compressed: bool = False  # body is zlib-deflated msgpack
    body_crc32: int = 0  # 0 = not checked; else zlib.crc32(body) & 0x7FFFFFFF (RocketMQ's UtilAll.crc32)
    # pocketmq's delta registration: the body holds only the topics changed (and deleted) since this data
    # version, which the name server must hold for the broker; else it answers delta_accepted false and the
    # broker sends its whole table. A RocketMQ name server ignores both fields and merges the topics it gets.
    base_version_timestamp: int | None = None
    base_version_counter: int | None = None
    # RocketMQ 5.x: how long the name server keeps this broker without a registration (its scan drops it after);
    # absent: the name server's own expiry (120 s).
    heartbeat_timeout_millis: int | None = None


@dataclass(slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER (103)'s answer."""

    ha_server_addr: str | None = None
    master_addr: str | None = None
    delta_accepted: bool | None = None  # answers a delta registration (pocketmq's; absent from RocketMQ's)


@dataclass(slots=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104): a broker leaves a name server."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (904, RocketMQ 5): a broker says it is alive, between its registrations."""

    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int | None = None
    epoch: int | None = None
    max_offset: int | None = None
    confirm_offset: int | None = None
    heartbeat_timeout_mills: int | None = None
    election_priority: int | None = None


@dataclass(slots=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322): a broker asks whether the name server holds its current topic config."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """QUERY_DATA_VERSION (322)'s answer: whether the broker's topic config differs from the name server's."""

    changed: bool


@dataclass(slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105): a topic's route, asked of a name server."""

    topic: str
    # 4.9.8: a client below V4_9_4 that reads standard JSON routes asks for them (body.topic_route_body_dialect).
    accept_standard_json_only: bool | None = None


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216)."""

    topic: str
    cluster_name: str | None = None  # 5.x: limit the deletion to one cluster


# --- producer -> broker ------------------------------------------------------------------------------------


@dataclass(slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324); also every send once parsed, the V2 codes'
    single-letter form (SendMessageRequestHeaderV2) included."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    broker_name: str | None = wire("bname", default=None)


@dataclass(slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """The single-letter form used by SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool = False  # unitMode
    l: int | None = None  # maxReconsumeTimes  # noqa: E741 (RocketMQ's name)
    m: bool = False  # batch
    n: str | None = None  # brokerName

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return cls(
            a=v1.producer_group,
            b=v1.topic,
            c=v1.default_topic,
            d=v1.default_topic_queue_nums,
            e=v1.queue_id,
            f=v1.sys_flag,
            g=v1.born_timestamp,
            h=v1.flag,
            i=v1.properties,
            j=v1.reconsume_times,
            k=v1.unit_mode,
            l=v1.max_reconsume_times,
            m=v1.batch,
            n=v1.broker_name,
        )

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.a,
            topic=self.b,
            default_topic=self.c,
            default_topic_queue_nums=self.d,
            queue_id=self.e,
            sys_flag=self.f,
            born_timestamp=self.g,
            flag=self.h,
            properties=self.i,
            reconsume_times=self.j,
            unit_mode=self.k,
            max_reconsume_times=self.l,
            batch=self.m,
            broker_name=self.n,
        )


_V2_SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)
# The V1 header's fields under the V2 wire names, so that a send's header goes between the V1 dataclass and
# the single-letter map without a SendMessageRequestHeaderV2 in between (every send would build one).
_V1_AS_V2 = {
    "producer_group": "a", "topic": "b", "default_topic": "c", "default_topic_queue_nums": "d", "queue_id": "e",
    "sys_flag": "f", "born_timestamp": "g", "flag": "h", "properties": "i", "reconsume_times": "j",
    "unit_mode": "k", "max_reconsume_times": "l", "batch": "m", "broker_name": "n",
}
_send_v2_to_ext, _send_v2_from_ext = _compile(SendMessageRequestHeader, _V1_AS_V2)


def send_message_v2_ext(header: SendMessageRequestHeader) -> dict[str, object]:
    """The ext fields of SEND_MESSAGE_V2 for ``header``: SendMessageRequestHeaderV2.from_v1(header).to_ext()."""
    return _send_v2_to_ext(header)


def parse_send_message_request_header(
    code: int, ext: Mapping[str, object] | None
) -> SendMessageRequestHeader:
    """The V1 header of a send request, whichever form the request code implies."""
    if code in _V2_SEND_CODES:
        header: SendMessageRequestHeader = _send_v2_from_ext(ext or {})  # = V2.from_ext(ext).to_v1()
        return header
    return SendMessageRequestHeader.from_ext(ext)


@dataclass(slots=True)
class SendMessageResponseHeader(CommandHeader):
    """Every send's answer (SEND_MESSAGE and its V2, batch and reply forms)."""

    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
    recall_handle: str | None = None  # RocketMQ 5: a timer message's (common/recall_message_handle.py)


# --- consumer -> broker ------------------------------------------------------------------------------------


@dataclass(slots=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361): a consumer asks for a queue's messages from an offset."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None


@dataclass(slots=True)
class PullMessageResponseHeader(CommandHeader):
    """PULL_MESSAGE (11)'s answer: where the next pull starts, the queue's offsets, the broker to pull from."""

    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14): a group's stored offset of a queue."""

    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14)'s answer."""

    offset: int


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15): a group commits its offset of a queue."""

    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


@dataclass(slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30): the offset a queue's next message will take."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    """GET_MAX_OFFSET (30)'s answer."""

    offset: int


@dataclass(slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31): the offset of a queue's oldest message still stored."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetMinOffsetResponseHeader(CommandHeader):
    """GET_MIN_OFFSET (31)'s answer."""

    offset: int


@dataclass(slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29): a queue's offset at a store time."""

    topic: str
    queue_id: int
    timestamp: int


@dataclass(slots=True)
class SearchOffsetResponseHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29)'s answer."""

    offset: int


@dataclass(slots=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32): when a queue's oldest message still stored was stored."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)'s answer."""

    timestamp: int


@dataclass(slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): one message by its commit-log offset."""

    offset: int  # commit-log offset decoded from an offsetMsgId


@dataclass(slots=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12): a topic's messages by key, within a time range."""

    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


@dataclass(slots=True)
class QueryMessageResponseHeader(CommandHeader):
    """QUERY_MESSAGE (12)'s answer: how far the index that answered reaches."""

    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38): the client ids of a group."""

    consumer_group: str


@dataclass(slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35): a client's producer or consumer group leaves the broker."""

    client_id: str = wire("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume, to be retried."""

    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker -> consumer: the group's members changed."""

    consumer_group: str


# --- admin -> broker ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17): create a topic on a broker, or change it."""

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int | None = None
    order: bool = False
    # RocketMQ 5: the attribute modifications, "+message.type=FIFO,-reserve.time" (AttributeParser's form)
    attributes: str | None = None


@dataclass(slots=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str
