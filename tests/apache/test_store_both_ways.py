"""The store, both ways: Apache RocketMQ 4.9.7 serves a store pocketmq wrote, and pocketmq one that 4.9.7 wrote.

A workload of mixed messages (tests/apache/store_handover.py: plain with keys, tags and properties, compressed
bodies, batches, transactions, delays, retries, a group's committed offsets) is written by one broker and read back
through pocketmq's client; the other broker is then started on the same folder (same broker name, same file sizes)
and must serve the same messages at the same queue and commit-log offsets, with the same keys, tags, properties,
store times and ids, find the same messages by key through the index files the first one wrote, give the group the
same committed offsets, fire the delayed messages still pending (once), and go on appending where the first one
stopped. Apache's store is handed over after a clean shutdown and after a kill -9; pocketmq's, after Apache
appended to it, comes back to pocketmq.

The suite runs the issue's size: 100,000 messages, 400 of them sent one by one (keys, tags, properties, compressed
bodies) and the rest in batches of 100, on files small enough (STORE_100K) that the commit log spans several files
with blank end records, each queue several consume-queue files and the index several index files;
bench/store_handover.py times the phases (`make store-handover`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.apache.store_handover import (
    BATCH,
    STORE,
    store_from_apache_rocketmq_to_pocketmq,
    store_from_pocketmq_to_apache_rocketmq,
)

MESSAGES, BATCHED = 400, 99_600
# ~10 MB of commit log for 100,000 messages: files of a size that makes several of each kind.
STORE_100K = {
    **STORE,
    "mappedFileSizeCommitLog": str(1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 8000),
    "maxIndexNum": "60000",
    "maxHashSlotNum": "20000",
}


def several_files(store: Path) -> None:
    assert len(list((store / "commitlog").iterdir())) >= 3
    assert len(list((store / "index").iterdir())) >= 2
    assert len(list((store / "consumequeue" / BATCH / "0").iterdir())) >= 2


async def test_apache_4_serves_a_store_pocketmq_wrote(tmp_path: Path) -> None:
    # ...and back: pocketmq takes the store again and serves what Apache appended too.
    await store_from_pocketmq_to_apache_rocketmq(tmp_path, MESSAGES, STORE_100K, several_files, and_back=True,
                                                 batched=BATCHED)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["clean", "kill-9"])
async def test_pocketmq_serves_a_store_apache_4_wrote(tmp_path: Path, stop: signal.Signals) -> None:
    await store_from_apache_rocketmq_to_pocketmq(tmp_path, MESSAGES, STORE_100K, stop, several_files, batched=BATCHED)
