"""The ``rocketmq`` data source: what Spark instantiates for ``format("rocketmq")`` on reads and writes."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .options import parse_sink_options, parse_source_options
from .reader import BatchReader
from .schema import SCHEMA, check_schema
from .stream_reader import StreamReader
from .writer import BatchWriter, SinkColumns, StreamWriter


class RocketMQDataSource(DataSource):
    """Topics of a pocketmq (RocketMQ-protocol) cluster as DataFrames, in batch and in Structured Streaming.

    Read: ``spark.read.format("rocketmq").option("endpoints", "127.0.0.1:9876").option("subscribe", "T").load()``.
    Write: a DataFrame with a ``body`` column, ``df.write.format("rocketmq")...mode("append").save()``.
    The options are in docs/spark.md.
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> BatchReader:
        check_schema(schema)
        return BatchReader(parse_source_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> StreamReader:
        check_schema(schema)
        return StreamReader(parse_source_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> BatchWriter:
        if overwrite:
            raise ValueError("rocketmq sink: a topic is append-only; use mode('append'), not 'overwrite'")
        opts = parse_sink_options(self.options)
        return BatchWriter(opts, SinkColumns.of(schema, opts))

    def streamWriter(self, schema: StructType, overwrite: bool) -> StreamWriter:
        # Complete output mode asks to overwrite; like Kafka's sink, each trigger's rows are appended instead.
        opts = parse_sink_options(self.options)
        return StreamWriter(opts, SinkColumns.of(schema, opts))
