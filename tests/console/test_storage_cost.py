"""The storage page's cost does not grow with the store: one record is read by itself (as RocketMQ's
lookMessageByOffset reads it), the file list stops after a bound and says so, and only a few storage reads run at
once. Small stores of real files, written by the store itself."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.common import MessageExtBrokerInner  # noqa: E402
from pocketmq.console import ConsoleServer  # noqa: E402
from pocketmq.console.storage_view import files_view, record_view  # noqa: E402
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig  # noqa: E402
from pocketmq.storage.inspect.commitlog import CommitLogFiles  # noqa: E402
from pocketmq.storage.inspect.files import ReadOnlyFiles  # noqa: E402

FILE_SIZE = 4096  # a few records per commit-log file, so the walk crosses files and blank records
NO_NAMESRV = "127.0.0.1:1"  # the storage page reads files only; no cluster is asked


def fill(root: Path, count: int) -> list[int]:
    """A store of ``count`` messages on two queues, dispatched; the commit-log offset of each."""
    config = MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=FILE_SIZE,
                                max_hash_slot_num=64, max_index_num=256, clean_resource_interval=3600.0)
    store = DefaultMessageStore(config)
    store.load()
    store.start()
    try:
        offsets = []
        for i in range(count):
            msg = MessageExtBrokerInner(topic="CostT", body=f"body-{i}".encode(), queue_id=i % 2,
                                        properties={"KEYS": f"k{i}"})
            result = store.put_message(msg)
            assert result.is_ok and result.append_result is not None, result
            offsets.append(result.append_result.wrote_offset)
        deadline = time.monotonic() + 10
        while store.dispatch_behind_bytes() > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        store.shutdown()
    return offsets


def damage_magic(root: Path, offset: int) -> None:
    """Overwrite the MAGICCODE of the record at ``offset``: recovery's check, and so the walk, stop there."""
    names = sorted(os.listdir(root / "commitlog"))
    name = max(n for n in names if int(n) <= offset)
    with open(root / "commitlog" / name, "r+b") as f:
        f.seek(offset - int(name) + 4)
        f.write(b"\xde\xad\xbe\xef")


def test_one_record_is_read_by_itself(tmp_path):
    root = tmp_path / "store"
    offsets = fill(root, 12)
    damage_magic(root, offsets[2])
    # The walk from the file's start stops at the damaged record; the record after it is still read, alone.
    later = next(o for o in offsets[3:] if o // FILE_SIZE == offsets[2] // FILE_SIZE)
    view = record_view(str(root), later, 64, 256)
    assert view["offset"] == later and view["keys"] == [f"k{offsets.index(later)}"]
    assert view["consume_queue"]["commitlog_offset"] == later
    for bad in (offsets[2], later + 1, offsets[-1] + 10**6):
        with pytest.raises(LookupError):
            record_view(str(root), bad, 64, 256)


def test_a_record_s_index_entries_come_from_the_index_file_that_holds_it(tmp_path):
    # 300 keys in index files of 256 entries: the last record is in the second file only; the first, full, file
    # is not shown as one whose chain lacks it ("not indexed yet").
    root = tmp_path / "store"
    offsets = fill(root, 300)
    assert len(os.listdir(root / "index")) == 2
    for offset, first_file in ((offsets[-1], False), (offsets[0], True)):
        entries = record_view(str(root), offset, 64, 256)["index"]
        assert len(entries) == 1 and entries[0]["found"] is not None
        assert (entries[0]["file"] == sorted(os.listdir(root / "index"))[0]) == first_file


def test_reading_one_record_agrees_with_walking_the_file(tmp_path):
    root = tmp_path / "store"
    fill(root, 30)
    with ReadOnlyFiles() as files:
        log = CommitLogFiles(str(root), files)
        end = int(log.names[-1]) + FILE_SIZE
        starts = [o for o in range(end) if log.locate(o) is not None]
        assert len(starts) == 30
        assert [o for o in range(end) if log.find(o) is not None] == starts
        assert all(log.find(o) == log.locate(o) for o in starts)


def test_the_file_list_stops_after_its_bound_and_says_so(tmp_path):
    root = tmp_path / "store"
    fill(root, 30)
    view = files_view(str(root), max_records=3, max_entries=4)
    first = view["files"][0]
    assert first["more"] is True and first["record_count"] == 3 and len(first["records"]) == 3
    assert first["end"]["kind"] == "more"
    queues = view["consume_queues"]
    assert all(q["more"] and q["entry_count"] == 4 and len(q["entries"]) == 4 for q in queues)
    whole = files_view(str(root))
    assert sum(f["record_count"] for f in whole["files"]) == 30
    assert not any(f["more"] for f in whole["files"]) and not any(q["more"] for q in whole["consume_queues"])


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with session.get(url) as r:
        return r.status, await r.json()


async def test_storage_reads_beyond_the_limit_are_refused(tmp_path):
    root = tmp_path / "store"
    offsets = fill(root, 3)
    async with ConsoleServer(NO_NAMESRV, port=0, store_roots={"b": str(root)}) as console, \
            aiohttp.ClientSession() as session:
        url = console.url + f"api/storage/record?offset={offsets[1]}"
        reads = console.api.storage_reads
        held = [reads.slot() for _ in range(reads.limit)]
        for slot in held:
            await slot.__aenter__()
        for path in (url, console.url + "api/storage/files"):
            status, answer = await get(session, path)
            assert status == 503 and "limit" in answer["error"]
        for slot in held:
            await slot.__aexit__(None, None, None)
        status, answer = await get(session, url)
        assert status == 200 and answer["offset"] == offsets[1]
