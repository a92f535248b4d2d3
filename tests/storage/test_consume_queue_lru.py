"""Many more consume queues than mapped files allowed (ConsumeQueueLru, issue 18: 10,000 topics under a 1,024
descriptor limit): readers of parked queues read with pread, so pulling every topic in turn must neither map
files again nor make other queues give way (a thrash that would cost a map and an unmap per pull), and must
leave no descriptor open behind it."""

from __future__ import annotations

import os

from pocketmq.common import decode_all

from .conftest import msg, put_ok


def open_descriptors(under: str) -> int:
    """This process's descriptors open on a file under ``under``. (Not all of them: the suite's worker runs other
    tests' leftovers and this store's own threads, which open and close descriptors of their own meanwhile, such as
    the commit log's warm-up reads.)"""
    root = os.path.realpath(under) + os.sep
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        found += target.startswith(root)
    return found


def test_pulling_every_one_of_many_parked_queues_maps_nothing_and_keeps_no_descriptor(stores):
    store = stores.open(max_mapped_consume_queue_files=8)
    topics = [f"TopicLru{i}" for i in range(60)]
    for topic in topics:
        for i in range(2):
            put_ok(store, msg(topic=topic, body=f"{topic}-{i}".encode()))
    assert store.wait_dispatched()
    lru = store.cq_lru
    assert lru.mapped <= 8
    parked_before = {topic for (topic, _q), cq in store.consume_queue_table.items() if cq.parked}
    assert len(parked_before) > 40  # most queues are parked: the reads below go through pread
    queues_dir = os.path.join(store.config.store_path_root_dir, "consumequeue")
    parks_before, descriptors_before = lru.parked_total, open_descriptors(queues_dir)
    assert descriptors_before >= 1  # (each mapped queue file keeps one: the count sees the store's files)

    for _round in range(3):
        for topic in topics:
            got = store.get_message("G", topic, 0, 0, 32)
            assert [m.body for m in decode_all(got.body)] == [f"{topic}-{i}".encode() for i in range(2)], topic

    assert lru.parked_total == parks_before
    assert {topic for (topic, _q), cq in store.consume_queue_table.items() if cq.parked} == parked_before
    assert lru.mapped <= 8
    assert open_descriptors(queues_dir) == descriptors_before
