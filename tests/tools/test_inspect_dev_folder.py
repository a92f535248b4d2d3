"""`inspect` given the folder of `pocketmq dev --store F` (README: `make run` keeps its files in ./.pocketmq) reads
the store inside it, F/store, rather than reporting an empty store; a folder that holds no store is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketmq.storage.inspect import main as inspect_main

from .conftest import demo, inspect_json, run_tool


def test_the_dev_folder_is_read_as_its_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo(tmp_path / "store", "--small", "--messages", "20")
    direct, via_dev_folder = inspect_json(tmp_path / "store"), inspect_json(tmp_path)
    assert via_dev_folder == direct and direct["commitlog"]["files"]
    assert "the store of `pocketmq dev --store" in capsys.readouterr().err
    code, out = run_tool(inspect_main, [str(tmp_path)])
    assert code == 0 and "Commit log (commitlog/): no files" not in out


def test_a_folder_that_is_not_a_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It was reported as a store whose "last shutdown was clean", exit code 0.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.txt").write_text("hi")
    code, out = run_tool(inspect_main, [str(tmp_path)])
    assert (code, out) == (2, "")
    assert capsys.readouterr().err == (f"inspect: {tmp_path} is not a RocketMQ store: it holds none of commitlog/, "
                                       "consumequeue/, index/ and checkpoint\n")
