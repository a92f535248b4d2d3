"""DefaultMessageStore.set_deleted_topics: recovery builds no queue entry for a deleted topic's records below the
offset of its deletion, and destroys the queues that index only such records (store_recovery.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from pocketmq.common import decode_all
from pocketmq.storage import DefaultMessageStore

from .conftest import msg, put_ok

EXITS = ["normal", "abnormal"]


def _open(stores, deleted: dict[str, int], exit_kind: str = "normal") -> DefaultMessageStore:
    if exit_kind == "abnormal":
        open(os.path.join(str(stores.root), "abort"), "w").close()
    store = DefaultMessageStore(stores.config())
    stores.opened.append(store)
    store.load()
    store.set_deleted_topics(deleted)
    store.start()
    return store


def _bodies(store: DefaultMessageStore, topic: str, queue_id: int) -> list[bytes]:
    offset, out = store.get_min_offset_in_queue(topic, queue_id), []
    while offset < store.get_max_offset_in_queue(topic, queue_id):
        res = store.get_message("g", topic, queue_id, offset, 32)
        assert res.body, res.status
        out += [m.body for m in decode_all(res.body)]
        offset = res.next_begin_offset
    return out


@pytest.mark.parametrize("exit_kind", EXITS)
def test_a_deleted_topics_old_records_are_not_dispatched_again(stores, store_root, exit_kind) -> None:
    store = _open(stores, {})
    for i in range(300):  # (several commit-log files)
        put_ok(store, msg("Dead", f"old-{i}".encode(), queue_id=i % 3))
        put_ok(store, msg("Live", f"live-{i}".encode(), queue_id=i % 2))
    assert store.wait_dispatched()
    deleted_at = store.commit_log.get_max_offset()
    assert store.delete_topics({"Dead"}) == (3, deleted_at)  # (the log's end where the queues were reset)
    for i in range(5):  # the topic created again: its queue 0 only
        put_ok(store, msg("Dead", f"new-{i}".encode(), queue_id=0))
    assert store.wait_dispatched()
    store.shutdown()
    # Every queue lost: dispatch goes over the whole log again, the deleted records included.
    shutil.rmtree(os.path.join(str(store_root), "consumequeue"))

    store = _open(stores, {"Dead": deleted_at}, exit_kind)
    assert _bodies(store, "Dead", 0) == [f"new-{i}".encode() for i in range(5)]
    assert store.get_max_offset_in_queue("Dead", 0) == 5
    assert {key for key in store.consume_queue_table if key[0] == "Dead"} == {("Dead", 0)}
    for q in range(2):
        assert _bodies(store, "Live", q) == [f"live-{i}".encode() for i in range(q, 300, 2)]
    # Sent to after the restart: queue 1 starts at 0 again, as it did after the delete.
    put_ok(store, msg("Dead", b"after", queue_id=1))
    assert store.wait_dispatched()
    assert _bodies(store, "Dead", 1) == [b"after"]


def test_queues_holding_only_deleted_records_are_destroyed_at_start(stores, store_root) -> None:
    # A crash after the deletion was recorded and before the queues were destroyed leaves them behind.
    store = _open(stores, {})
    for i in range(20):
        put_ok(store, msg("Live", f"live-{i}".encode(), queue_id=0))
        put_ok(store, msg("Dead", f"old-{i}".encode(), queue_id=i % 4))
    assert store.wait_dispatched()
    deleted_at = store.commit_log.get_max_offset()
    # (the log's last record is Dead's: its queue 3 indexes up to the deletion's offset exactly)
    assert store.consume_queue_table["Dead", 3].max_physic_offset == deleted_at
    store.shutdown()

    store = _open(stores, {"Dead": deleted_at})
    assert not [key for key in store.consume_queue_table if key[0] == "Dead"]
    assert not os.path.exists(os.path.join(str(store_root), "consumequeue", "Dead"))
    assert store.get_max_offset_in_queue("Dead", 0) == 0
    assert _bodies(store, "Live", 0) == [f"live-{i}".encode() for i in range(20)]
