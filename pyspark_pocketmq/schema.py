"""The source's fixed schema, and pulled messages turned into Arrow record batches of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pocketmq.client.message_const import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_MAX_OFFSET,
    PROPERTY_MIN_OFFSET,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from pocketmq.common.message import MessageExt

if TYPE_CHECKING:
    import pyarrow as pa

# Every field is nullable: Spark may hand the reader a nullable copy of the schema, and the Arrow schema
# of each batch must equal the one Spark derives from what it hands over.
SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("brokerName", StringType()),
        StructField("queueId", IntegerType()),
        StructField("queueOffset", LongType()),
        StructField("msgId", StringType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("body", BinaryType()),
        StructField("bornTimestamp", TimestampType()),
        StructField("storeTimestamp", TimestampType()),
        StructField("bornHost", StringType()),
        StructField("storeHost", StringType()),
        StructField("reconsumeTimes", IntegerType()),
        StructField("sysFlag", IntegerType()),
        StructField("properties", MapType(StringType(), StringType())),
    ]
)

# Own columns (tags, keys), or added by the client to every pulled message and different on each pull.
HIDDEN_PROPERTIES = frozenset({PROPERTY_TAGS, PROPERTY_KEYS, PROPERTY_MIN_OFFSET, PROPERTY_MAX_OFFSET})


def check_schema(schema: StructType) -> None:
    """The schema is fixed (as Kafka's is); a user-given one must be the same, nullability aside."""
    want = [(f.name, f.dataType) for f in SCHEMA.fields]
    got = [(f.name, f.dataType) for f in schema.fields]
    if got != want:
        raise ValueError(f"the rocketmq source has a fixed schema and takes no other; expected {SCHEMA.simpleString()}"
                         f", got {schema.simpleString()}")


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects of the batches read() yields (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _split_keys(joined: str | None) -> list[str]:
    return [k for k in joined.split(KEY_SEPARATOR) if k] if joined else []


class BatchBuilder:
    """Collects pulled messages column by column and cuts them into record batches."""

    def __init__(self, schema: pa.Schema, broker_name: str) -> None:
        self.schema = schema
        self.broker_name = broker_name
        self._columns: list[list] = [[] for _ in range(15)]

    def __len__(self) -> int:
        return len(self._columns[0])

    def add(self, msgs: list[MessageExt]) -> None:
        """Append messages, one column at a time (a comprehension per column beats appends per field)."""
        (topic, broker, queue_id, queue_offset, msg_id, tags, keys, body, born, store, born_host, store_host,
         reconsume, sys_flag, props) = self._columns
        topic += [m.topic for m in msgs]
        broker += [self.broker_name] * len(msgs)
        queue_id += [m.queue_id for m in msgs]
        queue_offset += [m.queue_offset for m in msgs]
        msg_id += [m.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or m.msg_id for m in msgs]
        tags += [m.properties.get(PROPERTY_TAGS) for m in msgs]
        keys += [_split_keys(m.properties.get(PROPERTY_KEYS)) for m in msgs]
        body += [m.body for m in msgs]
        born += [m.born_timestamp * 1000 for m in msgs]
        store += [m.store_timestamp * 1000 for m in msgs]
        born_host += [m.born_host for m in msgs]
        store_host += [m.store_host for m in msgs]
        reconsume += [m.reconsume_times for m in msgs]
        sys_flag += [m.sys_flag for m in msgs]
        props += [[(k, v) for k, v in m.properties.items() if k not in HIDDEN_PROPERTIES] for m in msgs]

    def flush(self) -> pa.RecordBatch:
        import pyarrow as pa

        arrays = [pa.array(col, type=f.type) for col, f in zip(self._columns, self.schema, strict=True)]
        self._columns = [[] for _ in range(15)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
