"""The sink, for batch and streaming writes: rows become messages, sent in batches of one topic and queue.

At-least-once by default: a task that fails after sending some rows sends them again when Spark retries
it. With ``idempotent=true`` every row carries a deterministic key among its KEYS,
``<query id>:<batch id>:<partition>:<sequence>`` (a batch write uses a write id made when the write is
planned instead of query and batch id), and a task first asks the broker's key index which of its rows an
earlier attempt already stored, so a replayed task or micro-batch sends nothing twice. That check is cheap
because an attempt sends its batches one after another, each stored atomically: what an earlier attempt
stored is always a prefix of the task's rows.
"""

from __future__ import annotations

import collections
import concurrent.futures
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegralType, MapType, StringType, StructType

from pocketmq.client import Message, MessageQueue, MQClientException, SyncProducer
from pocketmq.client.message_const import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, SYSTEM_PROPERTY_NAMES
from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.message import properties_to_string
from pocketmq.common.message_batch import FIXED as BATCH_FIXED_LENGTH
from pocketmq.remoting.codes import ResponseCode

from .broker_view import private_instance
from .options import SinkOptions, client_credentials

MAX_BATCH_BYTES = 1024 * 1024  # well under the producer's 4 MiB per request
# The UNIQ_KEY pair (32 hex digits) the producer adds to each message of a batch after the sink sized it.
UNIQ_KEY_BYTES = len(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) + 2 + 32
SENDS_IN_FLIGHT = 4  # at-least-once: batches sent before waiting for the oldest answer


@dataclass
class WriteSummary(WriterCommitMessage):
    """What one partition's writer reports to the driver when it commits."""

    partition_id: int
    sent: int
    skipped: int  # rows an earlier attempt had already stored (idempotent writes)


@dataclass(frozen=True)
class SinkColumns:
    """Positions of the sink's columns in the rows (None: absent); other columns are ignored, as Kafka's sink does."""

    body: int
    topic: int | None = None
    tags: int | None = None
    keys: int | None = None
    properties: int | None = None
    queue_id: int | None = None
    body_is_string: bool = False

    @classmethod
    def of(cls, schema: StructType, opts: SinkOptions) -> SinkColumns:
        fields = {f.name: (i, f.dataType) for i, f in enumerate(schema.fields)}

        def column(name: str, ok: bool, want: str) -> int | None:
            if name not in fields:
                return None
            if not ok:
                raise ValueError(f"rocketmq sink: column '{name}' must be {want}, not {fields[name][1].simpleString()}")
            return fields[name][0]

        def typ(name: str):
            return fields[name][1] if name in fields else None

        if "body" not in fields:
            raise ValueError("rocketmq sink: a 'body' column (binary or string) is required")
        body_type = typ("body")
        keys_type = typ("keys")
        props_type = typ("properties")
        out = cls(
            body=column("body", isinstance(body_type, BinaryType | StringType), "binary or string"),  # type: ignore[arg-type]
            topic=column("topic", isinstance(typ("topic"), StringType), "string"),
            tags=column("tags", isinstance(typ("tags"), StringType), "string"),
            keys=column("keys", isinstance(keys_type, StringType) or (
                isinstance(keys_type, ArrayType) and isinstance(keys_type.elementType, StringType)),
                "string or array<string>"),
            properties=column("properties", isinstance(props_type, MapType) and isinstance(
                props_type.keyType, StringType) and isinstance(props_type.valueType, StringType),
                "map<string,string>"),
            queue_id=column("queueId", isinstance(typ("queueId"), IntegralType), "an integer"),
            body_is_string=isinstance(body_type, StringType),
        )
        if out.topic is None and opts.topic is None:
            raise ValueError("rocketmq sink: set the option 'topic' or give the rows a 'topic' column")
        return out


def row_to_message(row: tuple, cols: SinkColumns, topic_option: str | None, dedup_key: str | None) -> Message:
    body = row[cols.body]
    if body is None:
        raise ValueError("rocketmq sink: a row has a null body")
    topic = topic_option or (row[cols.topic] if cols.topic is not None else None)
    if not topic:
        raise ValueError("rocketmq sink: a row has no topic (null 'topic' column and no 'topic' option)")
    keys = row[cols.keys] if cols.keys is not None else None
    keys = (keys.split() if isinstance(keys, str) else [k for k in keys if k]) if keys else []
    if dedup_key is not None:
        keys.append(dedup_key)
    props = row[cols.properties] if cols.properties is not None else None
    return Message(
        topic,
        body.encode() if cols.body_is_string else bytes(body),
        tags=row[cols.tags] if cols.tags is not None else None,
        keys=keys,
        # RocketMQ's own names (TAGS, KEYS, UNIQ_KEY, ...) are set by the columns and the producer, not here,
        # so a DataFrame read from a topic can be written back as it is.
        properties={k: v for k, v in (props or {}).items() if v is not None and k not in SYSTEM_PROPERTY_NAMES},
    )


@dataclass
class _Unit:
    """Rows sent as one batch: one topic, one queue (None: the producer picks), stored atomically."""

    topic: str
    queue_id: int | None
    messages: list[Message]
    first_seq: int


def encoded_size(msg: Message) -> int:
    """The bytes ``msg`` takes in a batch request (common.message_batch's layout, as client.batch encodes it):
    properties and keys count as much as the body, and may each be 32 KiB."""
    props = len(properties_to_string(msg.properties).encode())
    return BATCH_FIXED_LENGTH + len(msg.body) + props + (0 if msg.uniq_key else UNIQ_KEY_BYTES)


def _units(rows: Iterable[tuple], cols: SinkColumns, opts: SinkOptions, dedup_prefix: str | None) -> Iterator[_Unit]:
    unit: _Unit | None = None
    size = 0
    for seq, row in enumerate(rows):
        msg = row_to_message(row, cols, opts.topic, f"{dedup_prefix}:{seq}" if dedup_prefix else None)
        queue_id = row[cols.queue_id] if cols.queue_id is not None else None
        msg_size = encoded_size(msg)
        full = unit is not None and (len(unit.messages) >= opts.send_batch_size
                                     or size + msg_size > MAX_BATCH_BYTES)
        if unit is not None and (full or unit.topic != msg.topic or unit.queue_id != queue_id):
            yield unit
            unit = None
        if unit is None:
            unit, size = _Unit(msg.topic, queue_id, [], seq), 0
        unit.messages.append(msg)
        size += msg_size
    if unit is not None:
        yield unit


def _batch_cannot_carry(msgs: list[Message], max_message_size: int) -> Message | None:
    """The unit's message when it is alone and a batch would be too big for it: the producer checks a batch's
    whole encoding against maxMessageSize, so the framing (22 bytes and the properties, UNIQ_KEY's among them)
    would refuse a body that a plain send takes. A message that large is always alone in its unit."""
    if len(msgs) == 1 and encoded_size(msgs[0]) > max_message_size:
        return msgs[0]
    return None


class _Sender:
    def __init__(self, producer: SyncProducer) -> None:
        self.producer = producer
        # Each topic's queues, asked once per topic of the rows (a frame may name many topics: bounded).
        self._queues: BoundedCache[str, list[MessageQueue]] = BoundedCache(self._fetch_queues, 1024)

    def _fetch_queues(self, topic: str) -> list[MessageQueue]:
        return sorted(self.producer.fetch_publish_message_queues(topic), key=lambda q: (q.broker_name, q.queue_id))

    def queue(self, topic: str, queue_id: int | None) -> MessageQueue | None:
        """The queue a 'queueId' column names: that id on the first broker (by name) serving the topic."""
        if queue_id is None:
            return None
        for mq in self._queues[topic]:
            if mq.queue_id == queue_id:
                return mq
        raise ValueError(f"rocketmq sink: topic {topic} has no queue {queue_id}")

    def stored(self, topic: str, key: str) -> bool:
        """Whether a message with ``key`` is in the topic (the broker's key index; no topic yet: no)."""
        try:
            return bool(self.producer.query_message(topic, key, max_num=1))
        except MQClientException as e:
            if e.response_code == ResponseCode.TOPIC_NOT_EXIST:
                return False
            raise


def write_rows(opts: SinkOptions, cols: SinkColumns, rows: Iterable[tuple], partition_id: int,
               dedup_prefix: str | None = None) -> WriteSummary:
    """Send the rows of one task; with ``dedup_prefix`` (idempotent), skip what an earlier attempt stored."""
    sent = skipped = 0
    with SyncProducer(opts.producer_group, opts.endpoints, send_timeout=opts.send_timeout,
                      instance_name=private_instance("writer"), protocol=opts.protocol,
                      **client_credentials(opts.credentials)) as producer:
        sender = _Sender(producer)
        limit = producer.producer.max_message_size
        if dedup_prefix is None:
            in_flight: collections.deque[concurrent.futures.Future] = collections.deque()
            try:
                for unit in _units(rows, cols, opts, None):
                    queue = sender.queue(unit.topic, unit.queue_id)
                    alone = _batch_cannot_carry(unit.messages, limit)
                    in_flight.append(producer.send_async(alone, queue=queue) if alone
                                     else producer.send_batch_async(unit.messages, queue))
                    sent += len(unit.messages)
                    if len(in_flight) >= SENDS_IN_FLIGHT:
                        in_flight.popleft().result()
            finally:
                # Batches already on their way finish before the task ends, also when it fails: closing the
                # producer would cancel them half-sent.
                concurrent.futures.wait(in_flight)
            for f in in_flight:
                f.result()
            return WriteSummary(partition_id, sent, 0)

        checking = True  # until the first row no earlier attempt stored; every later row is new too
        for unit in _units(rows, cols, opts, dedup_prefix):
            msgs = unit.messages
            if checking:
                first_new = _first_not_stored(sender, unit.topic, dedup_prefix, unit.first_seq, len(msgs))
                skipped += first_new
                msgs = msgs[first_new:]
                if not msgs:
                    continue
                checking = False
            queue = sender.queue(unit.topic, unit.queue_id)
            alone = _batch_cannot_carry(msgs, limit)
            if alone:
                producer.send(alone, queue)
            else:
                producer.send_batch(msgs, queue)
            sent += len(msgs)
    return WriteSummary(partition_id, sent, skipped)


def _first_not_stored(sender: _Sender, topic: str, prefix: str, first_seq: int, n: int) -> int:
    """Index in the unit of its first row not stored yet (n: all stored). Stored rows are a prefix of the
    task's rows, so the last row answers for the whole unit, the first for none of it, and in between
    (an earlier attempt cut its batches elsewhere) a binary search finds the boundary."""
    def stored(i: int) -> bool:
        return sender.stored(topic, f"{prefix}:{first_seq + i}")

    if stored(n - 1):
        return n
    if not stored(0):
        return 0
    lo, hi = 0, n - 1  # stored(lo), not stored(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if stored(mid):
            lo = mid
        else:
            hi = mid
    return hi


def _task_context():
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("rocketmq sink: write() runs outside a Spark task")
    return ctx


class BatchWriter(DataSourceWriter):
    def __init__(self, opts: SinkOptions, cols: SinkColumns) -> None:
        self.opts = opts
        self.cols = cols
        # Made once when the write is planned: every attempt of a task sees the same id.
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator) -> WriteSummary:
        pid = _task_context().partitionId()
        prefix = f"{self.write_id}:{pid}" if self.opts.idempotent else None
        return write_rows(self.opts, self.cols, iterator, pid, prefix)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        pass  # every row is already stored: a topic has nothing to publish at the end

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        pass  # sent messages cannot be taken back; a retried write skips them only when idempotent


class StreamWriter(DataSourceStreamWriter):
    def __init__(self, opts: SinkOptions, cols: SinkColumns) -> None:
        self.opts = opts
        self.cols = cols

    def write(self, iterator: Iterator) -> WriteSummary:
        ctx = _task_context()
        pid = ctx.partitionId()
        prefix = None
        if self.opts.idempotent:
            query_id = ctx.getLocalProperty("sql.streaming.queryId")
            batch_id = ctx.getLocalProperty("streaming.sql.batchId")
            if query_id is None or batch_id is None:
                raise RuntimeError("rocketmq sink: no streaming query id / batch id in the task context")
            prefix = f"{query_id}:{batch_id}:{pid}"
        return write_rows(self.opts, self.cols, iterator, pid, prefix)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass
