"""Many more consume queues than mapped files allowed (ConsumeQueueLru, issue 18: 10,000 topics under a 1,024
descriptor limit): readers of parked queues read with pread, so pulling every topic in turn must neither map
files again nor make other queues give way (a thrash that would cost a map and an unmap per pull), and must
leave no descriptor open behind it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pocketmq.common import decode_all

from .conftest import msg, put_ok

REPO = Path(__file__).resolve().parents[2]


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


_PULL_WITHOUT_DESCRIPTORS = """
import os, resource, sys
from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig
store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_consume_queue=100 * 20,
                                               max_mapped_consume_queue_files=2, mapped_file_size_commit_log=1 << 20,
                                               timer_wheel_enable=False))
store.load(); store.start()
for i in range(10):
    for q in range(6):
        store.put_message(MessageExtBrokerInner(topic="T", body=b"m%d" % i, queue_id=q))
store.wait_dispatched()
assert store.get_consume_queue("T", 0).parked
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 2, hard))
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
r = store.get_message("g", "T", 0, 3, 32)
for fd in held:
    os.close(fd)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
again = store.get_message("g", "T", 0, r.next_begin_offset, 32)
print(r.status.name, r.next_begin_offset, again.status.name, again.message_count)
store.shutdown()
"""


def test_a_parked_queue_that_cannot_be_read_for_want_of_a_descriptor_is_read_again_later(tmp_path):
    # Its pread failed with EMFILE and the read answered as for a file that was gone: nothing here, go on at the
    # next file's first entry. Consumers skipped every message left in the file. (In a process of its own: the
    # descriptor limit is the process's.)
    done = subprocess.run([sys.executable, "-c", _PULL_WITHOUT_DESCRIPTORS, str(tmp_path)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["OFFSET_FOUND_NULL", "3", "FOUND", "7"]  # (the same offset, read once it can be)
