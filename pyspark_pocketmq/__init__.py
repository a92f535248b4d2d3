"""PySpark data source ``rocketmq`` for pocketmq: topics as DataFrames and streams, DataFrames into topics.

Spark (4.2 or newer) finds it by itself: when a data source is first looked up, PySpark imports every
top-level ``pyspark_*`` module on its path and registers its ``DefaultSource``. ``register(spark)`` does the
same explicitly, and ``local_session()`` builds a loopback session with it registered. docs/spark.md has
the options, the schema and the delivery guarantees.

This is the Spark composition layer: it uses the ``client`` package only, never the broker or name server.
"""

from __future__ import annotations

from .data_source import RocketMQDataSource
from .session import local_session

DefaultSource = RocketMQDataSource


def register(spark) -> None:
    """Make ``format("rocketmq")`` known to ``spark`` (harmless when it already is)."""
    spark.dataSource.register(RocketMQDataSource)


__all__ = ["DefaultSource", "RocketMQDataSource", "local_session", "register"]
