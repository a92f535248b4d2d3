"""Child process of test_crash.py: appends messages to a SYNC_FLUSH store until it is killed.

    python tests/storage/crash_writer.py STORE_DIR SEED

Prints "READY" once the store has started, then after every PUT_OK one line per message,
flushed before the next put:

    ACK <queue_id> <queue_offset> <hex of body>

A message counts as acknowledged only when its complete line (newline included) was read.
Any other put status prints "ERR <status> <remark>" and exits with status 2.
"""

from __future__ import annotations

import os
import random
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from pocketmq.common import MessageExtBrokerInner  # noqa: E402
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig  # noqa: E402

TOPIC = "CrashTopic"
QUEUES = 4


def writer_config(root: str) -> MessageStoreConfig:
    """Shared with the parent: it must reopen the store with the same file sizes."""
    return MessageStoreConfig(
        store_path_root_dir=root,
        flush_disk_type="SYNC_FLUSH",
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=50 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
        clean_resource_interval=3600.0,
    )


def main() -> int:
    root, seed = sys.argv[1], int(sys.argv[2])
    rnd = random.Random(seed)
    store = DefaultMessageStore(writer_config(root))
    store.load()
    store.start()
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    n = 0
    while n < 1_000_000:
        qid = rnd.randrange(QUEUES)
        count = rnd.randint(2, 5) if rnd.random() < 0.1 else 1
        msgs = []
        for _ in range(count):
            body = f"{seed}:{n}:".encode() + rnd.randbytes(rnd.choice((0, 10, 200, 1500, 3000)))
            props = {"KEYS": f"s{seed}-{n}", "TAGS": f"T{n % 3}"}
            msgs.append(MessageExtBrokerInner(topic=TOPIC, body=body, queue_id=qid, properties=props))
            n += 1
        r = store.put_message(msgs[0]) if count == 1 else store.put_messages(msgs)
        if r.status.name != "PUT_OK":
            out.write(f"ERR {r.status.name} {r.remark}\n")
            out.flush()
            return 2
        base = r.append_result.logics_offset
        out.write("".join(f"ACK {qid} {base + i} {m.body.hex()}\n" for i, m in enumerate(msgs)))
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
