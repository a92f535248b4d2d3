"""Spark tests: one local[2] session and one cluster for the whole run (admin requests: spark_admin.py).

Only tests/spark/test_spark_session.py starts the JVM: under ``-n 2 --dist loadfile`` that file goes to one
worker, so a run holds one JVM while the other worker goes on with the rest. The other files here need
pyspark importable but no JVM.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pocketmq.embedded import ThreadedCluster

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError:  # without the spark extra there is nothing here to run
    collect_ignore_glob = ["test_*.py"]


TEST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark():
    from pyspark_pocketmq import local_session

    # The driver JVM of a test run does seconds of work, not hours: C1 only and the serial collector spend less CPU
    # on compiling and collecting than they would save (the suite shares two cores between two workers).
    session = local_session("pocketmq-tests", **{"spark.driver.extraJavaOptions": TEST_JVM})
    yield session
    session.stop()
