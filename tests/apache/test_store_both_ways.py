"""The store, both ways: Apache RocketMQ 4.9.7 serves a store pocketmq wrote, and pocketmq one that 4.9.7 wrote.

A workload of mixed messages (tests/apache/store_handover.py: plain with keys, tags and properties, compressed
bodies, batches, transactions, delays, retries, a group's committed offsets) is written by one broker and read back
through pocketmq's client; the other broker is then started on the same folder (same broker name, same file sizes)
and must serve the same messages at the same queue and commit-log offsets, with the same keys, tags, properties,
store times and ids, find the same messages by key through the index files the first one wrote, give the group the
same committed offsets, fire the delayed messages still pending (once), and go on appending where the first one
stopped. Apache's store is handed over after a clean shutdown and after a kill -9; pocketmq's, after Apache
appended to it, comes back to pocketmq.

The suite runs a few hundred messages, with files small enough (STORE) that the commit log spans several files with
blank end records, each queue several consume-queue files and the index several index files;
bench/store_handover.py runs the same with 100,000 (`make store-handover`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.apache.store_handover import (
    NORMAL,
    STORE,
    store_from_apache_rocketmq_to_pocketmq,
    store_from_pocketmq_to_apache_rocketmq,
)

MESSAGES = 400


def several_files(store: Path) -> None:
    assert len(list((store / "commitlog").iterdir())) >= 3
    assert len(list((store / "index").iterdir())) >= 2
    assert len(list((store / "consumequeue" / NORMAL / "0").iterdir())) >= 2


async def test_apache_4_serves_a_store_pocketmq_wrote(tmp_path: Path) -> None:
    # ...and back: pocketmq takes the store again and serves what Apache appended too.
    await store_from_pocketmq_to_apache_rocketmq(tmp_path, MESSAGES, STORE, several_files, and_back=True)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["clean", "kill-9"])
async def test_pocketmq_serves_a_store_apache_4_wrote(tmp_path: Path, stop: signal.Signals) -> None:
    await store_from_apache_rocketmq_to_pocketmq(tmp_path, MESSAGES, STORE, stop, several_files)
