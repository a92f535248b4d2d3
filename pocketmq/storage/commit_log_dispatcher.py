"""The dispatchers a DispatchRequest is handed to, in order (RocketMQ's CommitLogDispatcher and
DefaultMessageStore's CommitLogDispatcherBuildConsumeQueue / CommitLogDispatcherBuildIndex).

RocketMQ builds the consume queue first and the index second. Here the index comes first: after a crash,
dispatch resumes after the last consume-queue entry, so every record up to it must already be indexed (the
fast twin in reput_fast_twin.py keeps the same order). RocketMQ's ReputMessageService calls the message arriving
listener right after doDispatch; here that call is the last dispatcher, so a store with more dispatchers
(timer, POP) runs them before a parked pull is woken.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE

from .dispatch_request import DispatchRequest

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore

log = logging.getLogger(__name__)

# Listener: (topic, queue id, next logic offset, tags code, store timestamp, raw properties)
ArrivingListener = Callable[[str, int, int, int, int, bytes], None]


class CommitLogDispatcher(Protocol):
    def dispatch(self, request: DispatchRequest) -> None: ...


class CommitLogDispatcherBuildIndex:
    """Index the record by its KEYS and UNIQ_KEY (IndexService.buildIndex, which skips rolled-back records)."""

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    def dispatch(self, request: DispatchRequest) -> None:
        if self.store.config.message_index_enable and (request.keys or request.uniq_key):
            self.store.index_service.build_index_raw(
                request.topic, request.topic_bytes, request.keys, request.uniq_key, request.commit_log_offset,
                request.store_timestamp, request.sys_flag)


class CommitLogDispatcherBuildConsumeQueue:
    """Write the record's consume-queue entry; prepared and rolled-back transactional records take none."""

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    def dispatch(self, request: DispatchRequest) -> None:
        if request.sys_flag & TRANSACTION_PREPARED_TYPE:  # (PREPARED 0x4 and ROLLBACK 0xC; not COMMIT 0x8)
            return
        offset = request.commit_log_offset
        if offset < self.store.deleted_records_end and offset < self.store.deleted_topic_offsets.get(request.topic, -1):
            return  # a deleted topic's record (store_recovery.py: set_deleted_topics)
        cq = self.store.find_consume_queue_for_dispatch(request.topic, request.queue_id)
        self.store.cq_lru.touch(cq)  # mapped, most recently used (ConsumeQueueLru)
        cq.put_entry_reference(offset, request.msg_size, request.tags_code,
                               request.consume_queue_offset)


class CommitLogDispatcherNotifyArriving:
    """Tell the listener (the broker's long polling) of every record, prepared ones included. ``listener`` is
    read at each call: the broker sets it after the store is built."""

    def __init__(self, listener: Callable[[], ArrivingListener | None]) -> None:
        self.listener = listener

    def dispatch(self, request: DispatchRequest) -> None:
        listener = self.listener()
        if listener is None:
            return
        try:
            listener(request.topic, request.queue_id, request.consume_queue_offset + 1, request.tags_code,
                     request.store_timestamp, request.properties)
        except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
            log.exception("message arriving listener failed")
