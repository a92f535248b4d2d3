"""File cleanup (reference §6): expiry at the deleteWhen hour, disk-usage levels, disk full,
queue and index files following the commit log. Disk usage is injected (`store.disk_usage`):
a full disk cannot be produced for real in a test."""

from __future__ import annotations

import os
import time

import pytest

from pocketmq.common import decode_all
from pocketmq.storage import GetMessageStatus, PutMessageStatus

from .conftest import COMMIT_LOG_FILE_SIZE, commit_log_files, cq_dir, msg, put_ok, wait_until

HOUR_MS = 3600 * 1000


def _hour(now_ms: int) -> int:
    return time.localtime(now_ms / 1000).tm_hour


def _open(stores, now_ms, *, at_delete_hour=True, **overrides):
    hour = _hour(now_ms) if at_delete_hour else (_hour(now_ms) + 12) % 24
    store = stores.open(file_reserved_time=1.0, delete_when=f"{(hour + 5) % 24:02d};{hour:02d}", **overrides)
    store.disk_usage = lambda path: 0.10
    return store


def _fill(store, root, files: int, keys: bool = False):
    """Messages until the log has `files` files; returns the put results."""
    puts = []
    while len(commit_log_files(root)) < files:
        props = {"KEYS": f"k{len(puts)}"} if keys else {}
        puts.append(put_ok(store, msg(queue_id=len(puts) % 2, body=f"{len(puts)}".encode().ljust(600, b"."),
                                      **props)))
    assert store.wait_dispatched()
    store.commit_log.mapped_file_queue.flush_all()  # no write may touch mtimes after they are set
    return puts


def _age(paths, now_ms, hours: float) -> None:
    t = now_ms / 1000 - hours * 3600
    for p in paths:
        os.utime(p, (t, t))


def test_expired_files_deleted_at_delete_hour_never_the_last(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now)
    _fill(store, store_root, 4)
    files = commit_log_files(store_root)
    _age(files, now, 2)  # all of them, the last one too
    assert store.clean_service.run_once(now) == 3
    assert commit_log_files(store_root) == files[-1:]
    assert store.get_min_phy_offset() == 3 * COMMIT_LOG_FILE_SIZE
    assert store.clean_service.run_once(now) == 0


def test_deletion_stops_at_the_first_young_file(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now)
    _fill(store, store_root, 4)
    files = commit_log_files(store_root)
    _age([files[0], files[2]], now, 2)
    _age([files[1]], now, 0.5)  # younger than file_reserved_time (1 h)
    assert store.clean_service.run_once(now) == 1
    assert commit_log_files(store_root) == files[1:]


def test_expired_files_are_kept_outside_the_delete_hour(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False)
    _fill(store, store_root, 3)
    files = commit_log_files(store_root)
    _age(files, now, 5)
    assert store.clean_service.run_once(now) == 0
    assert commit_log_files(store_root) == files
    store.execute_delete_files_manually()  # TRIGGER_DELETE_FILES: at any hour
    assert store.clean_service.run_once(now) == 2
    assert commit_log_files(store_root) == files[2:]


def test_usage_above_75_percent_deletes_expired_files_at_any_hour(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False)
    _fill(store, store_root, 4)
    files = commit_log_files(store_root)
    _age(files[:2], now, 2)
    store.disk_usage = lambda path: 0.80
    assert store.clean_service.run_once(now) == 2  # the young third file stays
    assert commit_log_files(store_root) == files[2:]
    assert store.put_message(msg()).status == PutMessageStatus.PUT_OK


def test_unknown_disk_usage_counts_as_due(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False)
    _fill(store, store_root, 3)
    files = commit_log_files(store_root)
    _age(files[:1], now, 2)
    store.disk_usage = lambda path: -1.0
    assert store.clean_service.run_once(now) == 1


def test_usage_above_85_percent_deletes_young_files_too(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False)
    _fill(store, store_root, 4)
    files = commit_log_files(store_root)
    store.disk_usage = lambda path: 0.87
    assert store.clean_service.run_once(now) == 3  # all young, all but the last go
    assert commit_log_files(store_root) == files[-1:]
    assert store.put_message(msg()).status == PutMessageStatus.PUT_OK  # 85-90 %: still writable


def test_young_files_kept_above_85_percent_when_forcible_cleaning_is_off(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False, clean_file_forcibly_enable=False)
    _fill(store, store_root, 3)
    store.disk_usage = lambda path: 0.87
    assert store.clean_service.run_once(now) == 0


def test_at_most_a_batch_of_files_per_round(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, delete_files_batch_max=2)
    _fill(store, store_root, 5)
    files = commit_log_files(store_root)
    _age(files, now, 3)
    assert store.clean_service.run_once(now) == 2
    assert store.clean_service.run_once(now) == 2
    assert commit_log_files(store_root) == files[-1:]


def test_disk_full_refuses_puts_without_crashing_and_recovers(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now, at_delete_hour=False)
    before = put_ok(store, msg(body=b"before"))
    store.disk_usage = lambda path: 0.95
    store.clean_service.run_once(now)
    r = store.put_message(msg(body=b"refused"))
    assert r.status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "disk" in r.remark.lower() and "full" in r.remark.lower()
    r = store.put_messages([msg(body=b"refused batch")])
    assert r.status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    fut = store.async_put_message(msg(body=b"refused async"))
    assert fut.result(timeout=10).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.get_max_phy_offset() == before.wrote_offset + before.wrote_bytes
    # reads keep working while writes are refused
    assert store.wait_dispatched()
    assert store.get_message("g", "TopicA", 0, 0, 32).message_count == 1
    # between 85 % and 90 % the flag stays as it is (RocketMQ clears it only below 85 %)
    store.disk_usage = lambda path: 0.87
    store.clean_service.run_once(now)
    assert store.put_message(msg(body=b"still refused")).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    store.disk_usage = lambda path: 0.50
    store.clean_service.run_once(now)
    after = put_ok(store, msg(body=b"after"))
    assert after.logics_offset == before.logics_offset + 1
    assert store.wait_dispatched()
    assert [m.body for m in decode_all(store.get_message("g", "TopicA", 0, 0, 32).body)] == [b"before", b"after"]


def test_queue_and_index_files_below_the_log_minimum_are_removed(stores, store_root):
    now = int(time.time() * 1000)
    store = _open(stores, now)
    puts = _fill(store, store_root, 9, keys=True)
    puts += [put_ok(store, msg(queue_id=q, body=b"tail", KEYS=f"k{len(puts) + q}")) for q in (0, 1)]
    assert store.wait_dispatched()
    index_dir = os.path.join(str(store_root), "index")
    index_before = sorted(os.listdir(index_dir))
    assert len(index_before) >= 3
    cq_before = {q: sorted(os.listdir(cq_dir(store_root, "TopicA", q))) for q in (0, 1)}
    files = commit_log_files(store_root)
    _age(files, now, 2)
    assert store.clean_service.run_once(now) == 8
    min_phy = store.get_min_phy_offset()
    assert min_phy == 8 * COMMIT_LOG_FILE_SIZE
    for q in (0, 1):
        cq = store.get_consume_queue("TopicA", q)
        remaining = sorted(os.listdir(cq_dir(store_root, "TopicA", q)))
        assert remaining and remaining == cq_before[q][len(cq_before[q]) - len(remaining):]
        assert len(remaining) < len(cq_before[q])
        # every deleted queue file only pointed below the new minimum; the first kept one does not
        first_kept = cq.mapped_file_queue.first()
        last_entry_phys = int.from_bytes(first_kept.mm[cq.file_size - 20:cq.file_size - 12], "big")
        assert last_entry_phys >= min_phy or first_kept is cq.mapped_file_queue.last()
        min_off = store.get_min_offset_in_queue("TopicA", q)
        phys, _size, _ = cq.get_entry(min_off)
        assert phys >= min_phy
        prev = cq.get_entry(min_off - 1)  # gone with its file, or pointing at deleted data
        assert prev is None or prev[0] < min_phy
        res = store.get_message("g", "TopicA", q, 0, 32)
        assert res.status == GetMessageStatus.OFFSET_TOO_SMALL and res.next_begin_offset == min_off
        res = store.get_message("g", "TopicA", q, min_off, 32)
        assert res.status == GetMessageStatus.FOUND
        assert store.get_offset_in_queue_by_time("TopicA", q, 0) == min_off
    index_after = sorted(os.listdir(index_dir))
    assert index_after and len(index_after) < len(index_before)
    assert index_after == index_before[len(index_before) - len(index_after):]
    survivors = [i for i, r in enumerate(puts) if r.wrote_offset >= min_phy]
    assert store.query_message("TopicA", f"k{survivors[0]}", 32, 0, 2**62).buffers
    assert store.query_message("TopicA", "k0", 32, 0, 2**62).buffers == []
    # and it all holds after a restart
    store.shutdown()
    store = stores.open()
    assert store.get_min_phy_offset() == min_phy
    assert store.get_message("g", "TopicA", 0, 0, 32).status == GetMessageStatus.OFFSET_TOO_SMALL
    put_ok(store, msg(body=b"after restart"))


@pytest.mark.parametrize("usage", [0.80, 0.87])
def test_background_clean_service_runs_on_its_own(stores, store_root, usage):
    store = stores.open(clean_resource_interval=0.05, file_reserved_time=1.0, delete_when="99")
    store.disk_usage = lambda path: 0.10
    _fill(store, store_root, 3)
    files = commit_log_files(store_root)
    _age(files, int(time.time() * 1000), 2)
    store.disk_usage = lambda path: usage

    wait_until(lambda: commit_log_files(store_root) == files[-1:])


def test_disk_usage_is_what_df_and_rocketmq_show(store_root):
    """The ratio the clean service and the disk check go by is df's Use% (RocketMQ's
    getDiskPartitionSpaceUsedPercent computes the same): used over used plus available, rounded up. Root's
    reserved blocks count in neither; counting them as used once made a 59 %-full disk read 85 % and the store
    deleted young commit-log files."""
    import subprocess

    from pocketmq.storage.clean_service import disk_usage_ratio

    os.makedirs(store_root, exist_ok=True)
    for _ in range(3):  # another process may write between the two readings: they must agree once
        df = subprocess.run(["df", "--output=pcent", str(store_root)], capture_output=True, text=True, check=True)
        percent = int(df.stdout.splitlines()[1].strip().rstrip("%"))
        ratio = disk_usage_ratio(str(store_root))
        if round(ratio * 100) == percent:
            break
    assert round(ratio * 100) == percent, (ratio, df.stdout)
    assert disk_usage_ratio(os.path.join(str(store_root), "not", "yet", "made")) == ratio


def test_a_queue_file_whose_last_entry_is_the_logs_first_record_is_kept(stores, store_root):
    """Only queue files whose entries all point below the commit log's minimum go: one whose last entry is the
    log's first record after a clean is kept, and that message stays readable."""
    now = int(time.time() * 1000)
    store = _open(stores, now)
    puts = [put_ok(store, msg(topic="TopicB", body=b"b%d" % i)) for i in range(49)]
    rest = COMMIT_LOG_FILE_SIZE - (puts[-1].wrote_offset + puts[-1].wrote_bytes)
    edge_body = b"edge".ljust(rest, b".")  # (more than the first file has left: the next one's first record)
    edge = put_ok(store, msg(topic="TopicB", body=edge_body))
    assert (edge.wrote_offset, edge.logics_offset) == (COMMIT_LOG_FILE_SIZE, 49)
    put_ok(store, msg(topic="TopicB", body=b"after"))  # (offset 50: the queue's second file)
    assert store.wait_dispatched()
    store.commit_log.mapped_file_queue.flush_all()
    files = commit_log_files(store_root)
    _age(files, now, 2)
    assert store.clean_service.run_once(now) == 1  # (never the last)
    assert store.get_min_phy_offset() == edge.wrote_offset
    assert len(os.listdir(cq_dir(store_root, "TopicB", 0))) == 2
    assert store.get_min_offset_in_queue("TopicB", 0) == 49
    res = store.get_message("g", "TopicB", 0, 49, 32)
    assert res.status == GetMessageStatus.FOUND
    assert decode_all(res.body)[0].body == edge_body


def test_a_queue_whose_one_file_points_below_the_logs_minimum_starts_at_its_end(stores, store_root):
    """The queue's only file is its last, never deleted: its min offset moves past its entries, whose messages
    are gone, so that a consumer is not sent to read them."""
    now = int(time.time() * 1000)
    store = _open(stores, now)
    for i in range(3):
        put_ok(store, msg(topic="TopicB", body=b"b%d" % i))
    _fill(store, store_root, 3)
    files = commit_log_files(store_root)
    _age(files[:1], now, 2)
    assert store.clean_service.run_once(now) == 1
    assert store.get_min_offset_in_queue("TopicB", 0) == store.get_max_offset_in_queue("TopicB", 0) == 3
    res = store.get_message("g", "TopicB", 0, 0, 32)
    assert (res.message_count, res.next_begin_offset) == (0, 3), res.status
