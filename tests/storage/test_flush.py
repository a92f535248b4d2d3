"""Flush (reference §5.2, §5.3) and the checkpoint file (§4.1)."""

from __future__ import annotations

import os
import struct

from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import PutMessageStatus

from .conftest import COMMIT_LOG_FILE_SIZE, msg, put_ok, wait_until


def _flushed_through(store, r) -> bool:
    end = r.wrote_offset + r.wrote_bytes
    mf = store.commit_log.mapped_file_queue.find_mapped_file_by_offset(r.wrote_offset)
    return mf.file_from_offset + mf.flushed_position >= end


def test_sync_flush_put_returns_after_the_record_is_flushed(stores):
    store = stores.open(flush_disk_type="SYNC_FLUSH")
    results = []
    while store.get_max_phy_offset() < 2 * COMMIT_LOG_FILE_SIZE + 100:  # across two rolls
        r = store.put_message(msg(body=os.urandom(1500)))
        assert r.status == PutMessageStatus.PUT_OK
        assert _flushed_through(store, r.append_result)  # at the moment put returns
        assert store.commit_log.mapped_file_queue.flushed_where >= r.append_result.wrote_offset +\
            r.append_result.wrote_bytes
        results.append(r.append_result)
    # a full file is flushed to its end (blank record included)
    first = store.commit_log.mapped_file_queue.files[0]
    assert first.flushed_position == COMMIT_LOG_FILE_SIZE


def test_sync_flush_batch_and_async_put(stores):
    store = stores.open(flush_disk_type="SYNC_FLUSH")
    r = store.put_messages([msg(body=b"b" * 3000) for _ in range(5)])
    assert r.status == PutMessageStatus.PUT_OK and _flushed_through(store, r.append_result)
    fut = store.async_put_message(msg(body=b"async" * 100))
    res = fut.result(timeout=10)
    assert res.status == PutMessageStatus.PUT_OK and _flushed_through(store, res.append_result)
    fut = store.async_put_messages([msg(body=b"async batch")] * 3)
    res = fut.result(timeout=10)
    assert res.status == PutMessageStatus.PUT_OK and _flushed_through(store, res.append_result)


def test_sync_flush_without_wait_returns_at_once_and_is_flushed_soon(stores):
    store = stores.open(flush_disk_type="SYNC_FLUSH")
    r = store.put_message(MessageExtBrokerInner(topic="TopicA", body=b"no wait", properties={"WAIT": "false"}))
    assert r.status == PutMessageStatus.PUT_OK
    wait_until(lambda: _flushed_through(store, r.append_result))


def test_sync_flush_timeout_when_the_flush_service_is_gone(stores):
    # the group-commit thread is stopped for real, so no flush can ever answer the put
    store = stores.open(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=0.2)
    store.flush_service.shutdown()
    r = store.put_message(msg(body=b"unflushed"))
    assert r.status == PutMessageStatus.FLUSH_DISK_TIMEOUT
    assert r.is_ok  # stored, only not known to be on disk
    assert store.wait_dispatched()
    assert store.get_message("g", "TopicA", 0, 0, 32).message_count == 1


def test_async_flush_catches_up(stores):
    store = stores.open(flush_interval_commit_log=0.01, flush_commit_log_least_pages=0)
    last = None
    for _ in range(100):
        last = put_ok(store, msg(body=os.urandom(1000)))
    wait_until(lambda: _flushed_through(store, last))


def test_async_flush_waits_for_least_pages(stores):
    store = stores.open(flush_interval_commit_log=0.01, flush_commit_log_least_pages=4,
                        flush_commit_log_thorough_interval=3600)
    small = put_ok(store, msg(body=b"tiny"))
    mfq = store.commit_log.mapped_file_queue
    mfq.flush(4)  # less than 4 dirty pages: nothing to do
    assert mfq.flushed_where == 0 and not _flushed_through(store, small)
    while store.get_max_phy_offset() < 5 * 4096:
        put_ok(store, msg(body=b"z" * 1000))
    wait_until(lambda: mfq.flushed_where >= 4 * 4096)  # the background service got there
    assert _flushed_through(store, small)


def test_checkpoint_file_after_shutdown(stores, store_root):
    store = stores.open()
    put_ok(store, msg(body=b"a"))
    keyed = put_ok(store, msg(body=b"b", KEYS="k"))
    last = put_ok(store, msg(body=b"c"))
    assert store.wait_dispatched()
    store.shutdown()
    path = os.path.join(str(store_root), "checkpoint")
    with open(path, "rb") as f:
        data = f.read()
    assert len(data) == 4096
    physic, logics, index = struct.unpack_from(">qqq", data, 0)
    assert physic == last.store_timestamp
    assert logics == last.store_timestamp
    assert index == keyed.store_timestamp
    assert data[24:] == bytes(4096 - 24)
    # and a reopened store reads it back
    store = stores.open()
    cp = store.checkpoint
    assert (cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp) == (physic, logics, index)
    assert cp.get_min_timestamp() == min(physic, logics) - 3000


def test_sync_flush_concurrent_producers_across_many_rolls_never_time_out(stores):
    """Group commit serves many waiters at once; their data may span more than two files."""
    import threading

    store = stores.open(flush_disk_type="SYNC_FLUSH")
    statuses = []
    lock = threading.Lock()

    def produce(worker: int) -> None:
        for i in range(40):
            r = store.put_message(msg(queue_id=worker, body=bytes([i]) * 20_000))
            with lock:
                statuses.append((r.status, r.append_result))

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(statuses) == 320
    bad = [s for s, _ in statuses if s != PutMessageStatus.PUT_OK]
    assert not bad, f"{len(bad)} puts answered {bad[0]}"
    assert all(_flushed_through(store, ar) for _, ar in statuses)


def test_async_put_completes_with_timeout_when_the_flush_service_is_gone(stores):
    # RocketMQ's FlushDiskWatcher answers overdue flush requests; an awaiting broker must not hang
    store = stores.open(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=0.2)
    store.flush_service.shutdown()
    fut = store.async_put_message(msg(body=b"unflushed"))
    res = fut.result(timeout=30)
    assert res.status == PutMessageStatus.FLUSH_DISK_TIMEOUT
    fut = store.async_put_messages([msg(body=b"unflushed batch")])
    assert fut.result(timeout=30).status == PutMessageStatus.FLUSH_DISK_TIMEOUT


def test_flushed_pages_stay_readable_and_reach_the_file(stores):
    # The flush unmaps whole written pages before fdatasync; their data must stay in the mapping
    # (faulted in again from the page cache) and be in the file itself.
    store = stores.open()
    results = [put_ok(store, msg(body=os.urandom(700))) for _ in range(40)]
    store.flush_commit_log(0)
    mf = store.commit_log.mapped_file_queue.files[0]
    assert mf.flushed_position == mf.wrote_position > 6 * 4096
    with open(mf.path, "rb") as f:
        on_disk = f.read(mf.wrote_position)
    assert on_disk == mf.read(0, mf.wrote_position)
    for r in results:
        assert store.commit_log.get_message(r.wrote_offset, r.wrote_bytes) == on_disk[r.wrote_offset:
                                                                                    r.wrote_offset + r.wrote_bytes]
    r = put_ok(store, msg(body=b"after"))  # appending goes on after the unmapped run
    assert store.commit_log.get_message(r.wrote_offset, r.wrote_bytes).endswith(b"after\x06TopicA\x00\x00")
