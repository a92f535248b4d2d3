"""Recovery after a crash starts dispatch from the checkpoint: from the newest commit-log file whose first record
was stored at or before min(physic, logics) - 3 s. A queue that lost its tail in the crash (its pages never
written) gets it back from there; a later start would leave those messages out of the queue for good.

The crash is made from a clean stop: the abort file put back and the clean stop's manifest removed (a crashed
store has none), the checkpoint set to what the flushes had reached, and topic A's queue cut short."""

from __future__ import annotations

import os
import struct
import time

import pytest

from pocketmq.common import decode_all
from pocketmq.common.record_layout import field_positions
from pocketmq.storage.dispatch_manifest import drop_manifest

from .conftest import COMMIT_LOG_FILE_SIZE, commit_log_files, cq_dir, msg, put_ok, wait_until

MARGIN = 3000  # (StoreCheckpoint.get_min_timestamp)


def _fill(store) -> list:
    """Topics A and B alternately over three commit-log files, each record in a millisecond of its own (so the
    files' first records are ordered in time); first of all, the one message of topic Solo, at offset 0."""
    assert put_ok(store, msg(topic="Solo", body=b"solo")).wrote_offset == 0
    puts = []
    i = 0
    while not puts or puts[-1][1].wrote_offset < 2 * COMMIT_LOG_FILE_SIZE + 4096:
        topic = "TopicA" if i % 2 == 0 else "TopicB"
        r = put_ok(store, msg(topic=topic, body=b"m%d-" % i + b"~" * 400))
        puts.append((topic, r))
        wait_until(lambda ts=r.store_timestamp: time.time_ns() // 1_000_000 > ts, interval=0.0005)
        i += 1
    assert store.wait_dispatched()
    return puts


def _first_store_times(root) -> list[int]:
    at = field_positions()["STORETIMESTAMP"]  # (IPv4 hosts)
    out = []
    for path in commit_log_files(root):
        with open(path, "rb") as f:
            out.append(struct.unpack_from(">q", f.read(at + 8), at)[0])
    return out


def _cut_queue(root, topic: str, below_phys: int) -> int:
    """Zero the queue's entries from the first one pointing at or past ``below_phys``; the entries kept."""
    kept = 0
    cut = False
    for name in sorted(os.listdir(cq_dir(root, topic, 0))):
        path = os.path.join(cq_dir(root, topic, 0), name)
        if cut:
            os.unlink(path)
            continue
        with open(path, "r+b") as f:
            data = f.read()
            for i, (phys, size, _tags) in enumerate(struct.iter_unpack(">qiq", data)):
                if size == 0 or phys >= below_phys:
                    f.seek(i * 20)
                    f.write(bytes(len(data) - i * 20))
                    cut = True
                    break
                kept += 1
    return kept


def _crash(root, physic: int, logics: int) -> None:
    open(os.path.join(str(root), "abort"), "w").close()
    drop_manifest(str(root))
    with open(os.path.join(str(root), "checkpoint"), "r+b") as f:
        f.write(struct.pack(">qq", physic, logics))


@pytest.mark.parametrize("case", ["queues-flushed-less-far-than-the-log", "within-the-margin"])
def test_a_crash_restart_dispatches_again_from_the_checkpoint(stores, store_root, case):
    store = stores.open()
    puts = _fill(store)
    store.shutdown()
    firsts = _first_store_times(store_root)
    assert len(firsts) == 3 and firsts[0] < firsts[1] < firsts[2]
    last_ts = puts[-1][1].store_timestamp
    if case == "queues-flushed-less-far-than-the-log":
        # The log flushed to its end, the queues to the first record of the second file: dispatch again from the
        # second file, where topic A's queue lost its entries.
        physic, logics, lost_from = last_ts + MARGIN, firsts[1] + MARGIN, COMMIT_LOG_FILE_SIZE
    else:
        # Both flushed to 1 s after the second file began: less than the margin, so from the first file.
        physic = logics = firsts[1] + 1000
        lost_from = 0
    kept = _cut_queue(store_root, "TopicA", lost_from + 4096)
    a_puts = [r for topic, r in puts if topic == "TopicA"]
    assert 0 < kept < len(a_puts)
    _crash(store_root, physic, logics)

    store = stores.open()
    assert store.last_exit_ok is False
    assert store.wait_dispatched()
    assert store.get_max_offset_in_queue("TopicA", 0) == len(a_puts)
    got = []
    offset = 0
    while offset < len(a_puts):
        result = store.get_message("g", "TopicA", 0, offset, 32)
        assert result.message_count, (offset, result.status)
        got += [m.commit_log_offset for m in decode_all(result.body)]
        offset = result.next_begin_offset
    assert got == [r.wrote_offset for r in a_puts]
    # (a queue's entry of the log's first record, at offset 0, is a valid entry: its queue is kept as it was)
    solo = store.get_message("g", "Solo", 0, 0, 32)
    assert [(m.body, m.commit_log_offset) for m in decode_all(solo.body)] == [(b"solo", 0)]
