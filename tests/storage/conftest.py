"""Shared fixtures for the storage tests: small-file stores on real files under tmp_path.

File sizes are tiny (64 KiB commit-log files, 50-entry consume-queue files, 64-slot / 256-entry
index files) so that rolling, cleanup and recovery across files happen with a few hundred messages.
The background clean service is parked (clean_resource_interval = 1 h): cleanup tests drive it
explicitly with `store.clean_service.run_once(now_ms)`.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterator

import pytest

from pocketmq.common import MessageExtBrokerInner
from pocketmq.common.codec import decode
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig

COMMIT_LOG_FILE_SIZE = 64 * 1024
CQ_FILE_SIZE = 50 * 20
HASH_SLOTS = 64
INDEX_NUM = 256

MESSAGE_MAGIC = 0xDAA320A7
BLANK_MAGIC = 0xCBD43194


def small_config(root, **overrides) -> MessageStoreConfig:
    params = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=COMMIT_LOG_FILE_SIZE,
        mapped_file_size_consume_queue=CQ_FILE_SIZE,
        max_hash_slot_num=HASH_SLOTS,
        max_index_num=INDEX_NUM,
        clean_resource_interval=3600.0,
    )
    params.update(overrides)
    return MessageStoreConfig(**params)


class StoreFactory:
    """Opens stores (load + start) and shuts down at teardown whatever a test left open."""

    def __init__(self, root) -> None:
        self.root = root
        self.opened: list[DefaultMessageStore] = []

    def config(self, **overrides) -> MessageStoreConfig:
        return small_config(self.root, **overrides)

    def open(self, config: MessageStoreConfig | None = None, **overrides) -> DefaultMessageStore:
        store = DefaultMessageStore(config or self.config(**overrides))
        self.opened.append(store)
        store.load()
        store.start()
        return store

    def close_all(self) -> None:
        for store in self.opened:
            try:
                store.shutdown()
            except Exception:  # teardown of a store a test broke on purpose
                pass


@pytest.fixture
def store_root(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def stores(store_root) -> Iterator[StoreFactory]:
    factory = StoreFactory(store_root)
    yield factory
    factory.close_all()


@pytest.fixture
def store(stores) -> DefaultMessageStore:
    return stores.open()


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.005) -> None:
    """Poll `predicate` until it is true; fail after `timeout` s (a generous bound, not a sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def msg(topic: str = "TopicA", body: bytes = b"hello", queue_id: int = 0, **props: str) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(topic=topic, body=body, queue_id=queue_id, properties=dict(props))


def put_ok(store: DefaultMessageStore, m: MessageExtBrokerInner):
    r = store.put_message(m)
    assert r.status.name == "PUT_OK", (r.status, r.remark)
    return r.append_result


def commit_log_dir(root) -> str:
    return os.path.join(str(root), "commitlog")


def commit_log_files(root) -> list[str]:
    d = commit_log_dir(root)
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(d))


def cq_dir(root, topic: str, queue_id: int) -> str:
    return os.path.join(str(root), "consumequeue", topic, str(queue_id))


def read_cq_entries(root, topic: str, queue_id: int) -> list[tuple[int, int, int]]:
    """Every non-zero 20-byte entry of a queue's files, read straight from disk, in order."""
    d = cq_dir(root, topic, queue_id)
    out = []
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        for phys, size, tags in struct.iter_unpack(">qiq", data):
            if phys == 0 and size == 0 and tags == 0:
                break
            out.append((phys, size, tags))
    return out


def walk_file(path: str):
    """[(pos, size, magic)] of the entries of one commit-log file up to the first zero TOTALSIZE."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    pos = 0
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">iI", data, pos)
        if size == 0:
            break
        out.append((pos, size, magic))
        if magic == BLANK_MAGIC:
            break
        pos += size
    return data, out


def scan_commit_log(root) -> list[tuple[int, object]]:
    """(physical offset, MessageExt) of every record, walking the files as recovery does."""
    out = []
    for path in commit_log_files(root):
        base = int(os.path.basename(path))
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 8 <= len(data):
            size, magic = struct.unpack_from(">iI", data, pos)
            if magic != MESSAGE_MAGIC:
                break
            out.append((base + pos, decode(data, pos, check_crc=True)))
            pos += size
    return out
