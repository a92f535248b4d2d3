"""The storage page's record view says "pending" (not dispatched yet) only while dispatch may not have reached the
record: once the checkpoint or any consume queue shows dispatch went past it, a missing entry will never be written
(its topic was deleted, or re-created with a queue that does not reach it). Stores written by the store itself,
then read as the console reads them, with the file that proves dispatch passed removed one at a time."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

from pocketmq.console.storage_view import record_view  # noqa: E402
from tests.console.small_store import small_store  # noqa: E402


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """Two messages of topic Gone, the topic deleted, then one message of topic Other."""
    root = tmp_path_factory.mktemp("dispatch") / "store"
    with small_store(root) as (store, put):
        gone = [put("Gone", f"gone-{i}") for i in range(2)]
        store.delete_topics({"Gone"})
        put("Other", "other")
    return root, gone


def copy_without(written: tuple[Path, list[int]], tmp_path: Path, *removed: str) -> Path:
    root = tmp_path / "store"
    shutil.copytree(written[0], root)
    for rel in removed:
        path = root / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return root


def state_of(root: Path, offset: int) -> tuple[str, str | None]:
    cq = record_view(str(root), offset, 64, 256)["consume_queue"]
    assert cq["dispatched"] is False
    return cq["state"], cq.get("reason")


def test_a_deleted_topic_s_record_is_not_pending(written, tmp_path: Path) -> None:
    root = copy_without(written, tmp_path)
    assert [state_of(root, o) for o in written[1]] == [("none", "topic deleted")] * 2


def test_a_later_queue_entry_proves_dispatch_passed(written, tmp_path: Path) -> None:
    root = copy_without(written, tmp_path, "checkpoint")
    assert state_of(root, written[1][0]) == ("none", "topic deleted")


def test_the_checkpoint_proves_dispatch_passed(written, tmp_path: Path) -> None:
    root = copy_without(written, tmp_path, "consumequeue/Other")
    assert state_of(root, written[1][1]) == ("none", "topic deleted")


def test_a_re_created_empty_queue_is_an_older_queue(written, tmp_path: Path) -> None:
    root = copy_without(written, tmp_path)
    os.makedirs(root / "consumequeue" / "Gone" / "0")
    assert state_of(root, written[1][0]) == ("none", "older queue")


def test_without_proof_dispatch_passed_the_record_is_pending(written, tmp_path: Path) -> None:
    # No checkpoint and no queue: a restart dispatches the commit log again, and writes the entry.
    root = copy_without(written, tmp_path, "checkpoint", "consumequeue/Other")
    assert state_of(root, written[1][0]) == ("pending", None)
