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


def test_clean_expired_consume_queues_spares_system_topics(stores) -> None:
    # RocketMQ 5 spares them: the timer and the revive service keep offsets of their own into theirs.
    store = stores.open(file_reserved_time=0.0)
    for topic in ("Gone", "rmq_sys_wheel_timer", "%RETRY%G"):
        put_ok(store, msg(topic))
    while len(store.commit_log.mapped_file_queue.files) < 3:
        put_ok(store, msg("Filler", b"f" * 4000))
    assert store.wait_dispatched()
    store.execute_delete_files_manually()
    store.clean_service.run_once()
    assert store.commit_log.get_min_offset() > store.get_consume_queue("Gone", 0).max_physic_offset
    assert clean_expired_consume_queues(store) == 2
    assert {key[0] for key in store.consume_queue_table} == {"rmq_sys_wheel_timer", "Filler"}
