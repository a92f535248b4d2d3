"""Recovery from lost files (reference §4): commit-log files, consume queues and the index lost (by a crash, or
after a clean stop), and the crash artefacts of a file's creation."""

from __future__ import annotations

import os
import shutil

import pytest

from pocketmq.common import decode_all
from pocketmq.storage import GetMessageStatus

from .conftest import (
    COMMIT_LOG_FILE_SIZE,
    CQ_FILE_SIZE,
    commit_log_files,
    cq_dir,
    msg,
    put_ok,
    read_cq_entries,
)
from .recovery_helpers import (
    EXITS,
    FAR_FUTURE,
    assert_all_readable,
    assert_consistent,
    populate,
    reopen,
    snapshot_queues,
)

# -- (b) lost commit-log files -----------------------------------------------------------------------

@pytest.mark.parametrize("exit_kind", EXITS)
def test_deleted_tail_commit_log_files_truncate_the_queues(stores, store_root, exit_kind):
    store = stores.open()
    puts = populate(store, 600, body_size=500)
    assert len(commit_log_files(store_root)) >= 5
    store.shutdown()
    files = commit_log_files(store_root)
    for path in files[-3:]:
        os.unlink(path)
    remaining_end = int(os.path.basename(files[-3]))
    survivors = [(r, b) for r, b in puts if r.wrote_offset + r.wrote_bytes <= remaining_end]
    lost = [(r, b) for r, b in puts if r.wrote_offset >= remaining_end]
    assert survivors and lost and len(survivors) + len(lost) == len(puts)

    store = reopen(stores, exit_kind)
    assert store.get_max_phy_offset() == remaining_end
    for qid in range(3):
        entries = read_cq_entries(store_root, "TopicA", qid)
        assert all(p + s <= remaining_end for p, s, _ in entries)
        expect = sum(1 for n, (r, _) in enumerate(puts) if n % 3 == qid and r.wrote_offset < remaining_end)
        assert store.get_max_offset_in_queue("TopicA", qid) == expect == len(entries)
    assert_consistent(store, store_root)
    assert_all_readable(store, survivors)
    assert store.query_message("TopicA", "key-0", 32, 0, FAR_FUTURE).buffers
    lost_key = f"key-{len(survivors)}"
    assert store.query_message("TopicA", lost_key, 32, 0, FAR_FUTURE).buffers == []
    next_qid = len(survivors) % 3  # the first lost message's queue
    r = put_ok(store, msg(queue_id=next_qid, body=b"new"))
    assert r.wrote_offset == remaining_end
    assert r.logics_offset == lost[0][0].logics_offset  # the counter continues from the truncated queue
    assert store.wait_dispatched()
    assert_consistent(store, store_root)


# -- (c) lost consume queues -------------------------------------------------------------------------

def queue_counts(store) -> dict:
    return {k: cq.get_max_offset_in_queue() for k, cq in store.consume_queue_table.items()}


def assert_queues_rebuilt(stores, store_root, exit_kind, before, counts) -> None:
    """Reopened, the queues are as they were (``before``, ``counts``) and TopicA's queue 1 goes on from its count."""
    store = reopen(stores, exit_kind)
    assert snapshot_queues(store_root) == before
    assert queue_counts(store) == counts
    assert put_ok(store, msg(queue_id=1, body=b"next")).logics_offset == counts[("TopicA", 1)]
    assert_consistent(store, store_root)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_deleted_consumequeue_dir_is_rebuilt_identically(stores, store_root, exit_kind):
    store = stores.open()
    populate(store, 400, queues=4)
    put_ok(store, msg(body=b"delayed", DELAY="4"))
    put_ok(store, msg(topic="%RETRY%group", body=b"retry"))
    assert store.wait_dispatched()
    before = snapshot_queues(store_root)
    counts = queue_counts(store)
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "consumequeue"))

    assert_queues_rebuilt(stores, store_root, exit_kind, before, counts)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_queue_entries_lost_at_the_tail_are_redispatched(stores, store_root, exit_kind):
    """A crash while dispatch lagged: the queues miss entries for the last records of the log."""
    store = stores.open()
    puts = populate(store, 300, queues=3)
    before = snapshot_queues(store_root)
    store.shutdown()
    cut = puts[220][0].wrote_offset
    for qid in range(3):
        d = os.path.join(str(store_root), "consumequeue", "TopicA", str(qid))
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            with open(path, "r+b") as f:
                data = bytearray(f.read())
                for pos in range(0, len(data), 20):
                    if int.from_bytes(data[pos:pos + 8], "big") >= cut and any(data[pos:pos + 20]):
                        data[pos:pos + 20] = bytes(20)
                f.seek(0)
                f.write(data)
    assert snapshot_queues(store_root) != before

    store = reopen(stores, exit_kind)
    assert snapshot_queues(store_root) == before
    assert_all_readable(store, puts)
    assert put_ok(store, msg(queue_id=2, body=b"next")).logics_offset == 100


# -- crash artefacts of file creation ----------------------------------------------------------------

@pytest.mark.parametrize("exit_kind", EXITS)
def test_zero_filled_file_after_the_last_is_dropped(stores, store_root, exit_kind):
    """Killed right after the next commit-log file was created, before anything was written to it."""
    store = stores.open()
    populate(store, 100)
    end = store.get_max_phy_offset()
    store.shutdown()
    last = commit_log_files(store_root)[-1]
    nxt = os.path.join(os.path.dirname(last), f"{int(os.path.basename(last)) + COMMIT_LOG_FILE_SIZE:020d}")
    with open(nxt, "wb") as f:
        f.truncate(COMMIT_LOG_FILE_SIZE)

    store = reopen(stores, exit_kind)
    assert store.get_max_phy_offset() == end
    assert put_ok(store, msg(body=b"x")).wrote_offset == end
    assert_consistent(store, store_root)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_empty_file_left_by_a_crash_during_creation_does_not_block_restart(stores, store_root, exit_kind):
    """Killed between creating the next file and sizing it: a 0-byte file, holding no data."""
    store = stores.open()
    i = 0
    while len(commit_log_files(store_root)) < 2:
        put_ok(store, msg(body=b"q" * 1000, queue_id=0))
        i += 1
    assert store.wait_dispatched()
    end = store.get_max_phy_offset()
    store.shutdown()
    last = commit_log_files(store_root)[-1]
    nxt = os.path.join(os.path.dirname(last), f"{int(os.path.basename(last)) + COMMIT_LOG_FILE_SIZE:020d}")
    open(nxt, "wb").close()
    cq = os.path.join(str(store_root), "consumequeue", "TopicA", "0")
    open(os.path.join(cq, f"{(i // 50 + 1) * 1000:020d}"), "wb").close()

    store = reopen(stores, exit_kind)
    assert store.get_max_phy_offset() == end
    assert store.get_max_offset_in_queue("TopicA", 0) == i
    assert put_ok(store, msg(body=b"x")).logics_offset == i
    assert store.wait_dispatched()
    assert_consistent(store, store_root)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_consume_queue_rebuilt_after_early_log_files_were_cleaned(stores, store_root, exit_kind):
    """The queues are rebuilt from a log whose first files are gone: the first surviving record of
    a queue has a queue offset > 0, so the rebuilt queue starts with pre-blank slots."""
    store = stores.open()
    puts = populate(store, 500, queues=2, body_size=400)
    store.disk_usage = lambda path: 0.88
    assert store.clean_service.run_once() >= 2
    min_phy = store.get_min_phy_offset()
    mins = {q: store.get_min_offset_in_queue("TopicA", q) for q in (0, 1)}
    maxs = {q: store.get_max_offset_in_queue("TopicA", q) for q in (0, 1)}
    assert all(m > 0 for m in mins.values())
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "consumequeue"))

    store = reopen(stores, exit_kind)
    assert store.get_min_phy_offset() == min_phy
    for q in (0, 1):
        assert store.get_min_offset_in_queue("TopicA", q) == mins[q]
        assert store.get_max_offset_in_queue("TopicA", q) == maxs[q]
        res = store.get_message("g", "TopicA", q, 0, 32)
        assert res.status == GetMessageStatus.OFFSET_TOO_SMALL and res.next_begin_offset == mins[q]
    assert_consistent(store, store_root)
    assert_all_readable(store, [(r, b) for r, b in puts if r.wrote_offset >= min_phy])
    assert put_ok(store, msg(queue_id=1, body=b"next")).logics_offset == maxs[1]
    # and once more through a plain restart of the rebuilt queues
    store.shutdown()
    store = stores.open()
    for q in (0, 1):
        assert store.get_min_offset_in_queue("TopicA", q) == mins[q]
    assert store.get_max_offset_in_queue("TopicA", 1) == maxs[1] + 1
    assert_consistent(store, store_root)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_all_commit_log_files_gone_empties_the_queues(stores, store_root, exit_kind):
    store = stores.open()
    populate(store, 200)
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "commitlog"))

    store = reopen(stores, exit_kind)
    assert store.get_max_phy_offset() == 0
    for q in range(3):
        assert store.get_max_offset_in_queue("TopicA", q) == 0
    assert store.query_message("TopicA", "key-5", 32, 0, FAR_FUTURE).buffers == []
    r = put_ok(store, msg(queue_id=1, body=b"fresh", KEYS="fresh"))
    assert (r.wrote_offset, r.logics_offset) == (0, 0)
    assert store.wait_dispatched()
    assert_consistent(store, store_root)
    assert len(store.query_message("TopicA", "fresh", 32, 0, FAR_FUTURE).buffers) == 1


@pytest.mark.parametrize("last_file", ["half", "full"])
@pytest.mark.parametrize("exit_kind", EXITS)
def test_next_queue_file_made_ahead_and_left_by_a_crash(stores, store_root, exit_kind, last_file):
    """The flush service creates a queue's next file ahead of the dispatcher; killed before the dispatcher
    reached it, the store leaves a full-size file of zeros after the queue's last one."""
    store = stores.open()
    count = 30 if last_file == "half" else 50
    puts = [(put_ok(store, msg(queue_id=0, body=f"m{i}".encode())), f"m{i}".encode()) for i in range(count)]
    assert store.wait_dispatched()
    store.shutdown()
    cq = os.path.join(str(store_root), "consumequeue", "TopicA", "0")
    with open(os.path.join(cq, f"{CQ_FILE_SIZE:020d}"), "wb") as f:
        f.truncate(CQ_FILE_SIZE)

    store = reopen(stores, exit_kind)
    assert store.get_max_offset_in_queue("TopicA", 0) == count
    more = [(put_ok(store, msg(queue_id=0, body=f"n{i}".encode())), f"n{i}".encode()) for i in range(30)]
    assert [r.logics_offset for r, _ in more] == list(range(count, count + 30))
    assert store.wait_dispatched()
    assert_all_readable(store, puts + more)
    assert_consistent(store, store_root)


# -- (i) files lost after a clean stop (issue 18, failure 7) ------------------------------------------

@pytest.mark.parametrize("lost", ["first", "last"])
@pytest.mark.parametrize("exit_kind", EXITS)
def test_deleted_consume_queue_file_is_rebuilt(stores, store_root, exit_kind, lost):
    store = stores.open()
    populate(store, 400, queues=4)  # 100 entries per queue: two 50-entry files each
    assert store.wait_dispatched()
    before = snapshot_queues(store_root)
    counts = queue_counts(store)
    store.shutdown()
    files = sorted(os.listdir(cq_dir(store_root, "TopicA", 1)))
    assert len(files) == 2
    os.unlink(os.path.join(cq_dir(store_root, "TopicA", 1), files[0 if lost == "first" else -1]))

    assert_queues_rebuilt(stores, store_root, exit_kind, before, counts)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_deleted_consume_queue_directory_of_one_queue_is_rebuilt(stores, store_root, exit_kind):
    store = stores.open()
    populate(store, 300, queues=3)
    assert store.wait_dispatched()
    before = snapshot_queues(store_root)
    store.shutdown()
    shutil.rmtree(cq_dir(store_root, "TopicA", 2))

    store = reopen(stores, exit_kind)
    assert snapshot_queues(store_root) == before
    assert_consistent(store, store_root)


@pytest.mark.parametrize("exit_kind", EXITS)
def test_deleted_index_directory_is_rebuilt(stores, store_root, exit_kind):
    store = stores.open()
    for i in range(20):
        put_ok(store, msg(body=f"k{i}".encode(), KEYS=f"key{i}"))
    assert store.wait_dispatched()
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "index"))

    store = reopen(stores, exit_kind)
    assert store.wait_dispatched()
    for i in range(20):
        found = store.query_message("TopicA", f"key{i}", 10, 0, 2**62)
        assert [m.body for m in decode_all(found.body)] == [f"k{i}".encode()], i
