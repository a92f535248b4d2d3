"""cleanUnusedTopic and cleanExpiredCQ on a store (tests/broker/test_broker_queue_cleanup.py asks a broker)."""

from __future__ import annotations

import os

from pocketmq.common import decode_all
from pocketmq.storage.queue_cleanup import clean_expired_consume_queues, clean_unused_topics

from .conftest import cq_dir, msg, put_ok


def test_clean_unused_topics_destroys_the_queues_of_topics_not_named_and_keeps_the_schedule_topic(
        store, store_root) -> None:
    for topic in ("Used", "Unused", "SCHEDULE_TOPIC_XXXX"):
        for qid in (0, 1):
            put_ok(store, msg(topic, queue_id=qid))
    assert store.wait_dispatched()

    def in_use() -> set[str]:
        # Read under the put lock: a topic a send creates meanwhile has its config before its first put.
        assert store.commit_log.put_lock.locked()
        return {"Used"}

    assert clean_unused_topics(store, in_use) == 2
    assert sorted(store.consume_queue_table) == [("SCHEDULE_TOPIC_XXXX", 0), ("SCHEDULE_TOPIC_XXXX", 1),
                                                 ("Used", 0), ("Used", 1)]
    assert store.get_max_offset_in_queue("Used", 1) == 1
    assert not os.path.exists(cq_dir(store_root, "Unused", 0))

    # Its next message starts the queue again at offset 0.
    assert put_ok(store, msg("Unused", b"later")).logics_offset == 0
    assert store.wait_dispatched()
    got = store.get_message("G", "Unused", 0, 0, 32)
    assert [m.body for m in decode_all(got.body)] == [b"later"]
    assert clean_unused_topics(store, lambda: {"Used", "Unused"}) == 0


def test_clean_expired_consume_queues_keeps_a_queue_whose_messages_are_still_in_the_commit_log(store) -> None:
    put_ok(store, msg("Live"))
    assert store.wait_dispatched()
    assert clean_expired_consume_queues(store) == 0
    assert store.get_max_offset_in_queue("Live", 0) == 1
