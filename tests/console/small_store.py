"""A small store written by the store itself and shut down, for the storage page's tests to read as the console
reads it: each put is dispatched before the next (so a test can delete a topic between puts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig

Put = Callable[..., int]


@contextmanager
def small_store(root: Path) -> Iterator[tuple[DefaultMessageStore, Put]]:
    """The store under ``root``, and ``put(topic, body, sys_flag=0)`` returning the record's commit-log offset."""
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=64 * 1024,
                                                   max_hash_slot_num=64, max_index_num=256))
    store.load()
    store.start()

    def put(topic: str, body: str, sys_flag: int = 0) -> int:
        msg = MessageExtBrokerInner(topic=topic, body=body.encode(), queue_id=0, sys_flag=sys_flag)
        result = store.put_message(msg)
        assert result.is_ok and result.append_result is not None, result
        assert store.wait_dispatched(10.0)
        return result.append_result.wrote_offset

    try:
        yield store, put
    finally:
        store.shutdown()
