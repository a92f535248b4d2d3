"""tests/build_cache.sh, which lets a fresh clone copy the suite's Maven builds instead of running Maven again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "build_cache.sh"


def cache(tmp_path: Path, *args: str) -> int:
    env = os.environ | {"BUILD_CACHE": str(tmp_path / "cache")}
    return subprocess.run(["sh", str(SCRIPT), *args], cwd=tmp_path, env=env, timeout=60).returncode


def test_a_build_is_restored_only_from_the_same_inputs_and_only_the_newest_is_kept(tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("v1")
    (tmp_path / "out" / "lib").mkdir(parents=True)
    (tmp_path / "out" / "lib" / "a.jar").write_bytes(b"jar one")
    assert cache(tmp_path, "restore", "out", "harness", "pom.xml") == 1  # nothing kept yet
    assert cache(tmp_path, "keep", "out", "harness", "pom.xml") == 0

    assert cache(tmp_path, "restore", "again", "harness", "pom.xml") == 0
    assert (tmp_path / "again" / "lib" / "a.jar").read_bytes() == b"jar one"
    assert cache(tmp_path, "restore", "again", "other-label", "pom.xml") == 1

    (tmp_path / "pom.xml").write_text("v2")
    assert cache(tmp_path, "restore", "again", "harness", "pom.xml") == 1  # an input changed: build anew
    (tmp_path / "out" / "lib" / "a.jar").write_bytes(b"jar two")
    assert cache(tmp_path, "keep", "out", "harness", "pom.xml") == 0
    assert cache(tmp_path, "restore", "again", "harness", "pom.xml") == 0
    assert (tmp_path / "again" / "lib" / "a.jar").read_bytes() == b"jar two"
    assert len(list((tmp_path / "cache").iterdir())) == 1  # the build of v1 is gone
    assert cache(tmp_path, "unpack", "out", "harness", "pom.xml") == 2
