"""examples/spark_pipeline.py's own housekeeping, without Spark (its pipeline runs in test_spark_session.py)."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil

import pytest

import pyspark_pocketmq

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


class FakeQuery:
    def awaitTermination(self) -> None:  # noqa: N802 (Spark's name)
        pass


class FakeSession:
    def stop(self) -> None:
        pass


@pytest.mark.skipif(shutil.which("java") is None, reason="the example stops at once without Java")
def test_the_example_against_a_running_cluster_leaves_no_temp_folder(tmp_path, monkeypatch):
    # With --namesrv (`make run`'s cluster) each run left its checkpoint folder, /tmp/spark-pipeline-*, behind.
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    made: list[str] = []

    def mkdtemp(prefix: str) -> str:
        made.append(str(tmp_path / f"{prefix}work"))
        pathlib.Path(made[-1]).mkdir()
        return made[-1]

    monkeypatch.setattr(example.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(example, "produce", lambda namesrv, events: None)
    monkeypatch.setattr(example, "start_aggregation", lambda spark, namesrv, checkpoint: FakeQuery())
    monkeypatch.setattr(example, "current_stats", lambda spark, namesrv: {})
    monkeypatch.setattr(pyspark_pocketmq, "local_session", lambda name: FakeSession())
    assert example.main(["--namesrv", "127.0.0.1:1"]) == 0
    assert len(made) == 1 and not pathlib.Path(made[0]).exists()
