"""Starts and puts cut short by a process that dies (a child process that exits without shutting the store
down, or is SIGKILLed): what the next start finds must still say what to rebuild, and a batch is kept whole or
not at all."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from pocketmq.common import decode
from pocketmq.storage import DefaultMessageStore

from .conftest import msg, put_ok, small_config

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The child: loads the store (which decides what to rebuild) and dies before start() rebuilds it.
LOAD_AND_DIE = """
import os, sys
from tests.storage.conftest import small_config
from pocketmq.storage import DefaultMessageStore
DefaultMessageStore(small_config(sys.argv[1])).load()
os._exit(0)
"""

# The child: puts batches of 2,000 records until it is killed.
BATCHES = """
import sys
from tests.storage.conftest import small_config
from pocketmq.common.message import MessageExtBatch
from pocketmq.storage import DefaultMessageStore
store = DefaultMessageStore(small_config(sys.argv[1], mapped_file_size_commit_log=8 << 20))
store.load(); store.start()
print("READY", flush=True)
n = 0
while True:
    bodies = [b"%d:%d" % (n, i) for i in range(2000)]
    store.put_messages(MessageExtBatch(topic="Batched", queue_id=0, flags=[0] * 2000, bodies=bodies,
                                       properties=[b""] * 2000))
    n += 1
"""


def child(script: str, root: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", script, root], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": REPO_ROOT})


def test_a_start_that_dies_before_its_rebuild_leaves_the_rebuild_to_the_next_one(stores, store_root) -> None:
    # The manifest of the clean stop was deleted at load and the damaged queue cut; the abort file comes only
    # once the rebuild is done: the next start saw a clean stop and nothing missing, the queue stayed short and
    # its next put took an offset the log already held.
    store = stores.open()
    for i in range(300):
        put_ok(store, msg(body=b"q%d" % i))
    put_ok(store, msg(topic="TopicB", body=b"last"))  # (its queue ends at the end of the log)
    assert store.wait_dispatched()
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "consumequeue", "TopicA"))
    assert child(LOAD_AND_DIE, str(store_root)).wait(60) == 0
    store = stores.open()
    assert store.wait_dispatched() and store.get_max_offset_in_queue("TopicA", 0) == 300
    assert put_ok(store, msg(body=b"next")).logics_offset == 300


def test_a_batch_cut_by_a_kill_is_kept_whole_or_not_at_all(tmp_path) -> None:
    # The first record's magic is written after all the others': a kill in the middle of a batch leaves the
    # log ending where the batch began (its producer was never told PUT_OK, and sends it all again).
    for trial in range(3):
        root = str(tmp_path / f"trial{trial}")
        proc = child(BATCHES, root)
        assert proc.stdout is not None and proc.stdout.readline() == b"READY\n"
        time.sleep(0.6 + 0.3 * trial)
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        store = DefaultMessageStore(small_config(root, mapped_file_size_commit_log=8 << 20))
        store.load()
        store.start()
        try:
            assert store.wait_dispatched()
            count = store.get_max_offset_in_queue("Batched", 0)
            assert count % 2000 == 0, f"trial {trial}: {count} records kept, not a whole number of batches"
            if count:
                last = store.get_message("G", "Batched", 0, count - 1, 1)
                assert decode(last.buffers[0]).body.endswith(b":1999")
        finally:
            store.shutdown()
