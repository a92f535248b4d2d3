"""The spare file (the next consume-queue or commit-log file, made ahead by the flush thread) against the writer and
the LRU's parking, and the flush threads against files deleted under them.

Two of these races need one thread to run at one point of another. The tests run the real flush-thread step from
inside the writer's (or the parking's) own file operation, where the GIL would let it run now and then: a stress
run of three writers, three readers and 24 queues under a limit of two mapped files lost a live file within
seconds, every time. Nothing is faked but that timing.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from pocketmq.storage import mapped_file_queue as mfq_module
from pocketmq.storage.consume_queue import ConsumeQueue
from pocketmq.storage.mapped_file import MappedFile

from .conftest import msg, put_ok, wait_until

ENTRIES = 10  # a consume-queue file of ten entries


def full_queue(root: Any) -> ConsumeQueue:
    cq = ConsumeQueue("T", 0, str(root), 20 * ENTRIES)
    for i in range(ENTRIES):
        cq.put_entry(i, 1000 + i * 100, 100, 0)
    return cq


def test_a_spare_made_while_the_writer_makes_the_same_file_is_not_deleted_with_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cq = full_queue(tmp_path)
    mfq = cq.mapped_file_queue
    published = []

    def writer_makes_its_file(path: str, *args: Any, **kwargs: Any) -> MappedFile:
        # The writer found no spare and creates the next file; meanwhile the flush thread prepares that same file
        # (the writer has not appended its own yet, so the flush thread still sees the old last file).
        monkeypatch.setattr(mfq_module, "MappedFile", MappedFile)
        flusher = threading.Thread(target=lambda: published.append(mfq.prepare_next_file()))
        flusher.start()
        flusher.join()
        return MappedFile(path, *args, **kwargs)

    monkeypatch.setattr(mfq_module, "MappedFile", writer_makes_its_file)
    cq.put_entry(ENTRIES, 2000, 100, 0)  # the writer rolls over to the next file
    live = mfq.files[-1]
    assert published == [True] and live.file_from_offset == 20 * ENTRIES
    cq.park()  # the LRU unmaps the queue (and drops its spare); shutdown does the same
    assert os.path.exists(live.path)
    assert cq.get_entry(ENTRIES) == (2000, 100, 0)
    cq.unpark()
    cq.put_entry(ENTRIES + 1, 2100, 100, 0)
    assert cq.get_max_offset_in_queue() == ENTRIES + 2


def test_a_spare_made_while_the_parking_deletes_one_is_never_a_deleted_file(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path), 20 * ENTRIES)
    for i in range(ENTRIES // 2 + 1):
        cq.put_entry(i, 1000 + i * 100, 100, 0)
    mfq = cq.mapped_file_queue
    assert cq.prepare_next_file()
    spare_path = mfq._spare.path
    real_destroy = MappedFile.destroy

    def parking_deletes_the_spare(self: MappedFile) -> None:
        # While the spare is being deleted, the flush thread (which sees no spare and a queue not parked yet)
        # prepares the next file again. It may wait for the deletion; it must not publish the file being deleted.
        flusher = threading.Thread(target=mfq.prepare_next_file)
        flusher.start()
        flusher.join(0.3)
        real_destroy(self)
        parking_deletes_the_spare.flusher = flusher  # type: ignore[attr-defined]

    monkeypatch.setattr(MappedFile, "destroy", parking_deletes_the_spare)
    cq.park()
    monkeypatch.setattr(MappedFile, "destroy", real_destroy)
    parking_deletes_the_spare.flusher.join()  # type: ignore[attr-defined]
    spare = mfq._spare
    assert spare is None or os.path.exists(spare.path), spare_path
    cq.unpark()
    for i in range(ENTRIES // 2 + 1, ENTRIES + 3):  # into the next file, through the spare if one was kept
        cq.put_entry(i, 1000 + i * 100, 100, 0)
    cq.park()
    assert [cq.get_entry(i) for i in (ENTRIES, ENTRIES + 2)] == [(2000, 100, 0), (2200, 100, 0)]


def test_flushing_goes_on_after_the_files_it_was_in_are_deleted(tmp_path: Any) -> None:
    # The clean service, forced by a full disk, deletes every file but the last, the one the flush had got to
    # included: the flush found no file for its position and stopped for good (a commit log never synced again).
    cq = ConsumeQueue("T", 0, str(tmp_path), 20 * ENTRIES)
    for i in range(3 * ENTRIES):
        cq.put_entry(i, 1000 + i * 100, 100, 0)
    mfq = cq.mapped_file_queue
    mfq.flush(0)
    assert mfq.flushed_where == 20 * ENTRIES  # the first file's end: the next round starts the second
    assert len(mfq.delete_first_files(2)) == 2
    for _ in range(5):
        mfq.flush(0)
    assert mfq.flushed_where == mfq.get_max_offset() == 3 * 20 * ENTRIES


def test_a_consume_queue_file_deleted_under_the_flush_does_not_end_the_flush_thread(stores: Any) -> None:
    store = stores.open(flush_interval_consume_queue=0.005, flush_consume_queue_least_pages=0)
    put_ok(store, msg(topic="Gone", queue_id=0))
    put_ok(store, msg(topic="Kept", queue_id=0))
    assert store.wait_dispatched()
    gone = store.get_consume_queue("Gone", 0).mapped_file_queue.files[0]
    os.unlink(gone.path)  # deleted between the flush's look at the file and its sync
    put_ok(store, msg(topic="Gone", queue_id=0))  # dirty pages the flush will try to write
    kept = store.get_consume_queue("Kept", 0).mapped_file_queue
    for i in range(5):
        put_ok(store, msg(topic="Kept", queue_id=0, body=b"k%d" % i))
    assert store.wait_dispatched()
    wait_until(lambda: kept.flushed_where == kept.get_max_offset())
    service = store.flush_cq_service
    assert service._thread is not None and service._thread.is_alive()
