"""Spark tests: one local[2] session and one cluster for the whole run (admin requests: spark_admin.py).

Only tests/spark/test_spark_session.py starts the JVM: under ``-n 2 --dist loadfile`` that file goes to one
worker, so a run holds one JVM while the other worker goes on with the rest. The other files here need
pyspark importable but no JVM.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import sys
from collections.abc import Iterator

import pytest

from pocketmq.embedded import ThreadedCluster

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError:  # without the spark extra there is nothing here to run
    collect_ignore_glob = ["test_*.py"]


TEST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"

# The interpreter Spark starts its Python processes with (planners, the daemons that fork task workers, one
# process per streaming query): this interpreter, with two things of its environment changed.
# - Spark puts $SPARK_HOME/python/lib/pyspark.zip (and py4j's zip) first on their PYTHONPATH. From a zip,
#   Python compiles every module from source in every process (it caches no bytecode there): about a second
#   of CPU per process for pyspark alone. The pip-installed pyspark next to this interpreter is the same
#   code (the zip ships in its wheel), with its bytecode cached, so the zips are dropped from the path.
# - Without written bytecode (PYTHONDONTWRITEBYTECODE, as on CI), each process compiled pocketmq's modules
#   anew too: bytecode goes to a folder of this run instead (PYTHONPYCACHEPREFIX), never into the checkout.
WORKER_PYTHON = """#!/bin/sh
PYTHONPATH=$(printf '%s' "$PYTHONPATH" | tr ':' '\\n' \\
    | grep -v -e '/pyspark\\.zip$' -e '/py4j-[^/]*-src\\.zip$' | paste -sd: -)
export PYTHONPATH
unset PYTHONDONTWRITEBYTECODE
PYTHONPYCACHEPREFIX={pycache}
export PYTHONPYCACHEPREFIX
exec {python} "$@"
"""


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


def worker_python(folder: pathlib.Path) -> str:
    """WORKER_PYTHON in ``folder``, when the driver's pyspark is an installed one (not itself from a zip)."""
    if not pathlib.Path(pyspark.__file__).is_file():
        return sys.executable
    script = folder / "python"
    script.write_text(WORKER_PYTHON.format(pycache=shlex.quote(str(folder / "pycache")),
                                           python=shlex.quote(sys.executable)))
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pyspark_pocketmq import local_session

    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = worker_python(tmp_path_factory.mktemp("spark-python"))
    # The driver JVM of a test run does seconds of work, not hours: C1 only and the serial collector spend less CPU
    # on compiling and collecting than they would save (the suite shares two cores between two workers).
    session = local_session("pocketmq-tests", **{"spark.driver.extraJavaOptions": TEST_JVM})
    yield session
    session.stop()
    if before is None:
        del os.environ["PYSPARK_PYTHON"]
    else:
        os.environ["PYSPARK_PYTHON"] = before
