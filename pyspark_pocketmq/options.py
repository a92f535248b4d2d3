"""The one table of options the source and the sink take, parsed and checked before any I/O.

Spark hands options over as a case-insensitive map of strings; here they are read case-insensitively
too, so the functions work on plain dicts (and in tests without Spark).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pocketmq.client.client_config import PROTOCOLS
from pocketmq.common.filter_api import SubscriptionParseError, parse_tags

from .offsets import EARLIEST, LATEST, OffsetFormatError, Offsets, from_json_dict

_NAME_RE = re.compile(r"[%|a-zA-Z0-9_-]+")  # RocketMQ's topic and group names
DEFAULT_PRODUCER_GROUP = "pocketmq-spark-writer"
DEFAULT_PROTOCOL = "msgpack"

OffsetSpec = Literal["earliest", "latest"] | Offsets


class InvalidOptionError(ValueError):
    """An option is missing, unknown in this kind of query, or has a value that cannot work."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """Exactly one of: topics by name, topics whose whole name matches a regex, or queues by hand."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    # (topic, brokerName or None for every broker serving the topic, queueId)
    assigned: tuple[tuple[str, str | None, int], ...] = ()

    def covers_topic(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return any(t == topic for t, _, _ in self.assigned)
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class Credentials:
    """The ACL account (``accessKey``/``secretKey``) every client of the source or sink signs its requests with,
    on the driver and in the workers. The secret stays out of ``repr`` and so out of logs and error messages."""

    access_key: str
    secret_key: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise InvalidOptionError("options 'accessKey' and 'secretKey' must not be empty")


def client_credentials(credentials: Credentials | None) -> dict[str, Any]:
    """The keyword arguments that make a pocketmq client sign with ``credentials`` (none without an account)."""
    if credentials is None:
        return {}
    return {"access_key": credentials.access_key, "secret_key": credentials.secret_key}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The source's options (``spark.read.format("rocketmq").option(...)``), parsed and checked."""

    endpoints: str  # the client's form, "host:port;host:port"
    subscription: Subscription
    sub_expression: str = "*"
    starting_offsets: OffsetSpec = "earliest"
    ending_offsets: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    pull_batch_size: int = 32
    pull_timeout: float = 10.0  # seconds
    consumer_group: str | None = None
    protocol: str = DEFAULT_PROTOCOL  # ClientConfig.protocol of every client the source opens
    credentials: Credentials | None = None


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options (``df.write.format("rocketmq").option(...)``), parsed and checked."""

    endpoints: str
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    idempotent: bool = False
    send_timeout: float = 10.0  # seconds
    send_batch_size: int = 256
    protocol: str = DEFAULT_PROTOCOL  # ClientConfig.protocol of the producers
    credentials: Credentials | None = None


_STREAM_ONLY = {"maxoffsetspertrigger": "maxOffsetsPerTrigger", "consumergroup": "consumerGroup"}
_BATCH_ONLY = {"endingoffsets": "endingOffsets", "endingtimestamp": "endingTimestamp"}


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def parse_endpoints(opts: Mapping[str, str]) -> str:
    """``endpoints`` (alias ``nameServer``): name servers, comma- or semicolon-separated host:port."""
    given = {k: opts[k] for k in ("endpoints", "nameserver") if k in opts}
    if not given:
        raise InvalidOptionError("option 'endpoints' (the name server, e.g. 127.0.0.1:9876) is required")
    values = {tuple(_split_endpoints(v)) for v in given.values()}
    if len(values) > 1:
        raise InvalidOptionError(f"options 'endpoints' and 'nameServer' disagree: {given}")
    addrs = values.pop()
    for a in addrs:
        host, sep, port = a.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise InvalidOptionError(f"endpoint {a!r} is not host:port")
    if not addrs:
        raise InvalidOptionError("option 'endpoints' is empty")
    return ";".join(addrs)


def _split_endpoints(value: str) -> list[str]:
    return [a.strip() for a in re.split(r"[,;]", value) if a.strip()]


def _check_name(name: str, what: str) -> str:
    if not _NAME_RE.fullmatch(name) or len(name) > 127:
        raise InvalidOptionError(f"{what} {name!r} is not a valid name (^[%|a-zA-Z0-9_-]+$, at most 127 chars)")
    return name


def _int(opts: Mapping[str, str], key: str, name: str, minimum: int) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key])
    except ValueError:
        raise InvalidOptionError(f"option '{name}' must be an integer, got {opts[key]!r}")
    if value < minimum:
        raise InvalidOptionError(f"option '{name}' must be >= {minimum}, got {value}")
    return value


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    value = opts.get(key)
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidOptionError(f"option '{name}' must be true or false, got {value!r}")


def parse_protocol(opts: Mapping[str, str]) -> str:
    """``protocol``: the wire protocol of the driver's and the workers' clients (ClientConfig.protocol)."""
    value = opts.get("protocol", DEFAULT_PROTOCOL).strip().lower()
    if value not in PROTOCOLS:
        raise InvalidOptionError(
            f"option 'protocol' must be 'msgpack' (pocketmq's own frames, the default) or 'rocketmq' (RocketMQ's "
            f"native remoting protocol, which an Apache RocketMQ cluster speaks too), got {opts['protocol']!r}"
        )
    return value


def parse_credentials(opts: Mapping[str, str]) -> Credentials | None:
    """``accessKey`` and ``secretKey``: an ACL account, both or neither (docs/broker.md, Access control)."""
    access_key, secret_key = opts.get("accesskey"), opts.get("secretkey")
    if access_key is None and secret_key is None:
        return None
    if access_key is None or secret_key is None:
        raise InvalidOptionError("options 'accessKey' and 'secretKey' go together: give both or neither")
    return Credentials(access_key.strip(), secret_key)


def parse_subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise InvalidOptionError(
            "exactly one of the options 'subscribe' (topics, comma-separated), 'subscribePattern' (a regex) "
            f"and 'assign' (JSON) is required; got {len(given)}"
        )
    kind = given[0]
    value = opts[kind]
    if kind == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise InvalidOptionError("option 'subscribe' names no topic")
        return Subscription(topics=tuple(_check_name(t, "topic") for t in topics))
    if kind == "subscribepattern":
        try:
            re.compile(value)
        except re.error as e:
            raise InvalidOptionError(f"option 'subscribePattern' is not a regular expression: {e}")
        return Subscription(pattern=value)
    return Subscription(assigned=_parse_assign(value))


def _parse_assign(value: str) -> tuple[tuple[str, str | None, int], ...]:
    """``{"topic": [0, 1]}`` (those queue ids on every broker) or ``{"topic": {"broker-a": [0, 1]}}``."""
    try:
        obj = json.loads(value)
    except json.JSONDecodeError as e:
        raise InvalidOptionError(f"option 'assign' is not JSON ({e}): {value!r}")
    if not isinstance(obj, dict) or not obj:
        raise InvalidOptionError('option \'assign\' must look like {"topic": [0, 1]} or {"topic": {"broker": [0]}}')
    out: list[tuple[str, str | None, int]] = []

    def ids(v: object, where: str) -> list[int]:
        if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v):
            raise InvalidOptionError(f"option 'assign': {where} must be a list of queue ids, got {v!r}")
        return v

    for topic, spec in obj.items():
        _check_name(topic, "topic")
        if isinstance(spec, dict):
            for broker, queue_ids in spec.items():
                out.extend((topic, broker, i) for i in ids(queue_ids, f"{topic}/{broker}"))
        else:
            out.extend((topic, None, i) for i in ids(spec, topic))
    if not out:
        raise InvalidOptionError("option 'assign' assigns no queue")
    return tuple(sorted(set(out), key=lambda t: (t[0], t[1] or "", t[2])))


def _parse_offset_spec(
    opts: Mapping[str, str], key: str, name: str, default: str, allowed_words: tuple[str, ...],
    forbidden_sentinel: int | None, subscription: Subscription, kind: str,
) -> OffsetSpec:
    value = opts.get(key, default).strip()
    if value.lower() in ("earliest", "latest"):
        if value.lower() not in allowed_words:
            raise InvalidOptionError(f"option '{name}' cannot be {value.lower()!r} in a {kind} query; use "
                                     f"{' or '.join(allowed_words)} or JSON offsets")
        return value.lower()  # type: ignore[return-value]
    try:
        offsets = from_json_dict(json.loads(value), name)
    except (json.JSONDecodeError, OffsetFormatError) as e:
        raise InvalidOptionError(
            f"option '{name}' must be {' or '.join(allowed_words)} or JSON like "
            f'{{"topic": {{"broker-a": {{"0": 23, "1": -2}}}}}}: {e}'
        )
    for ref, offset in offsets.items():
        if not subscription.covers_topic(ref.topic):
            raise InvalidOptionError(f"option '{name}' names topic {ref.topic!r}, which is not subscribed")
        if offset == forbidden_sentinel:
            word = "earliest (-2)" if offset == EARLIEST else "latest (-1)"
            raise InvalidOptionError(f"option '{name}' cannot use {word} in a {kind} query "
                                     f"({ref.topic}/{ref.broker_name})")
    return offsets


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    opts = _lower(options)
    misplaced = _BATCH_ONLY if streaming else _STREAM_ONLY
    for key, name in misplaced.items():
        if key in opts:
            raise InvalidOptionError(f"option '{name}' is only for {'batch' if streaming else 'streaming'} queries")
    subscription = parse_subscription(opts)
    kind = "streaming" if streaming else "batch"
    starting = _parse_offset_spec(
        opts, "startingoffsets", "startingOffsets", "latest" if streaming else "earliest",
        ("earliest", "latest") if streaming else ("earliest",), None if streaming else LATEST, subscription, kind,
    )
    ending = _parse_offset_spec(opts, "endingoffsets", "endingOffsets", "latest", ("latest",), EARLIEST, subscription,
                                "batch")
    sub_expression = opts.get("subexpression", "*").strip() or "*"
    try:
        parse_tags(sub_expression)  # what each task's pull does with it: refused here, before any task runs
    except SubscriptionParseError as e:
        raise InvalidOptionError(f"option 'subExpression' is not a tag expression (TagA || TagB): {e}")
    consumer_group = opts.get("consumergroup")
    if consumer_group is not None:
        _check_name(consumer_group, "consumerGroup")
    pull_timeout_ms = _int(opts, "pulltimeoutms", "pullTimeoutMs", 1)
    starting_timestamp = _int(opts, "startingtimestamp", "startingTimestamp", 0)
    ending_timestamp = _int(opts, "endingtimestamp", "endingTimestamp", 0)
    if starting_timestamp is not None and ending_timestamp is not None and starting_timestamp > ending_timestamp:
        # (resolved, the two would often meet at the same offset and read nothing without a word)
        raise InvalidOptionError(f"option 'startingTimestamp' {starting_timestamp} is after 'endingTimestamp' "
                                 f"{ending_timestamp}")
    return SourceOptions(
        endpoints=parse_endpoints(opts),
        subscription=subscription,
        sub_expression=sub_expression,
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamp=starting_timestamp,
        ending_timestamp=ending_timestamp,
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        min_partitions=_int(opts, "minpartitions", "minPartitions", 1),
        max_records_per_partition=_int(opts, "maxrecordsperpartition", "maxRecordsPerPartition", 1),
        max_offsets_per_trigger=_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", 1),
        pull_batch_size=_int(opts, "pullbatchsize", "pullBatchSize", 1) or 32,
        pull_timeout=(pull_timeout_ms or 10_000) / 1000,
        consumer_group=consumer_group,
        protocol=parse_protocol(opts),
        credentials=parse_credentials(opts),
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    topic = opts.get("topic")
    if topic is not None:
        _check_name(topic.strip(), "topic")
    send_timeout_ms = _int(opts, "sendtimeoutms", "sendTimeoutMs", 1)
    return SinkOptions(
        endpoints=parse_endpoints(opts),
        topic=topic.strip() if topic is not None else None,
        producer_group=_check_name(opts.get("producergroup", DEFAULT_PRODUCER_GROUP), "producerGroup"),
        idempotent=_bool(opts, "idempotent", "idempotent", False),
        send_timeout=(send_timeout_ms or 10_000) / 1000,
        send_batch_size=_int(opts, "sendbatchsize", "sendBatchSize", 1) or 256,
        protocol=parse_protocol(opts),
        credentials=parse_credentials(opts),
    )
