"""A local SparkSession that works on loopback, offline, with this interpreter, and knows format("rocketmq")."""

from __future__ import annotations

import os
import sys
from typing import Any

LOOPBACK = "127.0.0.1"


def local_session(app_name: str = "pocketmq", master: str = "local[2]", **conf: Any):
    """Build (or get) a local SparkSession bound to 127.0.0.1 whose Python workers run this interpreter.

    Spark reads SPARK_LOCAL_IP and PYSPARK_PYTHON when its JVM starts, so they are set here first (unless
    already set). The session time zone is UTC, so per-minute windows do not depend on the machine's zone.
    ``conf`` adds or overrides Spark settings, e.g. ``**{"spark.sql.shuffle.partitions": "4"}``.
    """
    from pyspark.sql import SparkSession

    from . import register

    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
    }
    settings.update({k: str(v) for k, v in conf.items()})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
