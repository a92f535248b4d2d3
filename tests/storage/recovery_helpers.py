"""What test_recovery.py and test_recovery_lost_files.py share: a store filled, reopened after a clean or a crash
exit, and its queues and records checked."""

from __future__ import annotations

import os

from pocketmq.common import decode_all
from pocketmq.storage import DefaultMessageStore, GetMessageStatus

from .conftest import (
    COMMIT_LOG_FILE_SIZE,
    commit_log_files,
    msg,
    put_ok,
    scan_commit_log,
)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAR_FUTURE = 2**62
EXITS = ["normal", "abnormal"]


def reopen(stores, exit_kind: str, **overrides) -> DefaultMessageStore:
    abort = os.path.join(str(stores.root), "abort")
    if exit_kind == "abnormal":
        open(abort, "w").close()
    else:
        assert not os.path.exists(abort)
    store = stores.open(**overrides)
    assert store.last_exit_ok is (exit_kind == "normal")
    return store


def populate(store, count: int, queues: int = 3, body_size: int = 300):
    """Messages over `queues` queues with keys and tags; returns [(AppendMessageResult, body)]."""
    out = []
    for i in range(count):
        body = f"msg-{i}-".encode().ljust(body_size + i % 50, b"~")
        r = put_ok(store, msg(queue_id=i % queues, body=body, KEYS=f"key-{i}", TAGS=f"Tag{i % 2}"))
        out.append((r, body))
    assert store.wait_dispatched()
    return out


def snapshot_queues(root) -> dict[str, bytes]:
    base = os.path.join(str(root), "consumequeue")
    out = {}
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, base)] = f.read()
    return out


def assert_tail_zero(root, end: int) -> None:
    last = commit_log_files(root)[-1]
    start = int(os.path.basename(last))
    assert start <= end <= start + COMMIT_LOG_FILE_SIZE
    with open(last, "rb") as f:
        data = f.read()
    assert data[end - start:] == bytes(len(data) - (end - start))


def assert_consistent(store, root) -> None:
    """Every queue entry points at a valid record of its topic/queue/offset, none past the log,
    and every record of the log (but prepared/rollback ones) is in its queue."""
    assert store.wait_dispatched()
    records = dict(scan_commit_log(root))
    max_phy = store.get_max_phy_offset()
    assert all(p + m.store_size <= max_phy for p, m in records.items())
    covered = set()
    for (topic, qid), cq in store.consume_queue_table.items():
        lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
        for n in range(lo, hi):
            phys, size, _code = cq.get_entry(n)
            assert phys + size <= max_phy, (topic, qid, n)
            m = records[phys]
            assert (m.topic, m.queue_id, m.queue_offset, m.store_size) == (topic, qid, n, size)
            covered.add(phys)
    expected = {p for p, m in records.items() if not m.sys_flag & 0x4}
    assert covered == expected, "records missing from their queues"


def assert_all_readable(store, puts, topic="TopicA"):
    """Each (put result, body) is at its queue offset, byte for byte."""
    for r, body in puts:
        qid = decode_all(store.select_one_message_by_offset(r.wrote_offset, r.wrote_bytes))[0].queue_id
        res = store.get_message("g", topic, qid, r.logics_offset, 1)
        assert res.status == GetMessageStatus.FOUND
        (m,) = decode_all(res.body)
        assert m.body == body and m.commit_log_offset == r.wrote_offset
