"""DefaultMessageStore: the facade the broker talks to, in the shape of RocketMQ's MessageStore.

    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=path))
    store.load(); store.start()
    store.put_message(MessageExtBrokerInner(topic="T", body=b"hi"))
    store.get_message("group", "T", 0, 0, 32)
    store.shutdown()

or `with DefaultMessageStore(...) as store:` which does load + start + shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from pocketmq.common.constants import PROPERTY_WAIT_STORE_MSG_OK
from pocketmq.common.java_numbers import INT_MAX, INT_MIN
from pocketmq.common.java_text import parse_integer
from pocketmq.common.message import MessageExtBatch, MessageExtBrokerInner, raw_property
from pocketmq.common.validators import VALID_TOPICS, store_topic_error

from .checkpoint import StoreCheckpoint
from .clean_service import CleanService, disk_free_bytes, disk_usage_ratio
from .commit_log import CommitLog
from .config import FlushDiskType, MessageStoreConfig
from .consume_queue import ConsumeQueue
from .consume_queue_lru import ConsumeQueueLru
from .consume_queue_store import ConsumeQueueStore
from .dispatch_hold import DispatchHold
from .dispatch_manifest import drop_manifest
from .flush_service import FlushConsumeQueueService, FlushRealTimeService, GroupCommitService
from .flush_stats import FlushStats
from .index_service import IndexService
from .message_store_lookup import MessageStoreLookup
from .reput_service import ReputMessageService
from .results import (
    PutMessageResult,
    PutMessageStatus,
)
from .running_flags import DISK_FULL_BIT, RunningFlags
from .store_disk_space import StoreDiskSpace
from .store_lock import StoreLock
from .store_recovery import MessageStoreRecovery
from .timer.timer_message_store import TimerMessageStore
from .warm_service import WarmMappedFileService

log = logging.getLogger(__name__)
_PUT_OK = PutMessageStatus.PUT_OK  # (an Enum member read off its class runs Python code in 3.11)

def _as_future(result: PutMessageResult | Future) -> Future:
    if isinstance(result, Future):
        return result
    done: Future = Future()
    done.set_result(result)
    return done


def _wait_store_msg_ok(msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> bool:
    """WAIT (waitStoreMsgOK) of a batch, which its first message carries: False only when it says "false"."""
    if isinstance(msgs, MessageExtBatch):
        return raw_property(msgs.properties[0], b"WAIT\x01") != b"false"
    return msgs[0].properties.get(PROPERTY_WAIT_STORE_MSG_OK) != "false"


def _empty_batch() -> PutMessageResult:
    """(An empty list has no topic to check: say what is wrong with it rather than that its topic is blank.)"""
    return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch: no messages")


def _batch_topic(msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> str:
    if isinstance(msgs, MessageExtBatch):
        return msgs.topic
    return msgs[0].topic if msgs else ""



class DefaultMessageStore(ConsumeQueueStore, MessageStoreRecovery, StoreDiskSpace, DispatchHold, MessageStoreLookup):
    """The store's parts in one facade: its lifecycle and puts here; the consume queues and topic deletion
    (consume_queue_store.py), recovery (store_recovery.py), the disk-full rule (store_disk_space.py), the dispatch
    hold (dispatch_hold.py) and the reads (message_store_lookup.py) beside it."""

    def __init__(self, config: MessageStoreConfig | None = None, **overrides) -> None:
        if config is None:
            config = MessageStoreConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a config or keyword overrides, not both")
        self.config = config
        self.commit_log = CommitLog(config)
        self.delay_levels = self.commit_log.delay_levels
        self.consume_queue_table: dict[tuple[str, int], ConsumeQueue] = {}
        self.dispatch_cq_table: dict[tuple[bytes, int], ConsumeQueue] = {}
        self.cq_lru = ConsumeQueueLru(config.effective_max_mapped_consume_queue_files())
        self.index_service = IndexService(config.store_path_index, config.max_hash_slot_num, config.max_index_num,
                                          config.max_msgs_num_batch)
        self.checkpoint: StoreCheckpoint | None = None
        self.running_flags = RunningFlags()
        self.reput_service = ReputMessageService(self)
        self.commit_log.on_append = self.reput_service.wakeup
        self.sync_flush = config.flush_disk_type == FlushDiskType.SYNC_FLUSH
        self._max_dispatch_lag = config.max_dispatch_lag_bytes
        # Seconds a writer waits at most for a dispatcher that fell behind (_dispatch_hold_target).
        self.dispatch_hold_timeout = 0.05
        self._pending_hold: Future | None = None  # the hold writers wait on (_dispatch_hold), while not done
        self.flush_service = GroupCommitService(self) if self.sync_flush else FlushRealTimeService(self)
        self.flush_cq_service = FlushConsumeQueueService(self)
        self.flush_stats = FlushStats()  # commit-log flushes that wrote something, by latency
        self.clean_service = CleanService(self)
        self.warm_service = (WarmMappedFileService(self.commit_log.mapped_file_queue, config.warm_mapped_file_ahead)
                             if config.warm_mapped_file_ahead > 0 and WarmMappedFileService.available() else None)
        # Injectable for tests: path -> used fraction of its disk (0..1); path -> free bytes.
        self.disk_usage = disk_usage_ratio
        self.disk_free = disk_free_bytes
        self.commit_log.on_space_check = self._check_space
        self.commit_log.on_file_failed = self._file_failed
        self._free_needed = 0  # bytes a store file failed to reserve: writes wait until that much is free
        self._next_disk_recheck = 0.0  # (monotonic) while the disk is full, when a put looks again
        self.last_exit_ok = True
        self.set_deleted_topics({})  # (the broker's, before start(): store_recovery.py)
        # The names topic_error passed (common.validators' cache, shared with the broker and the client): a hit is
        # a name the rule passed, and a miss asks the rule (_check_store_status).
        self._valid_topics = VALID_TOPICS
        self._lock: StoreLock | None = None
        # RocketMQ 5's timer messages (storage/timer/): loaded and started once dispatch has caught up.
        self.timer_message_store = TimerMessageStore(self, config) if config.timer_wheel_enable else None
        self._loaded = False
        self._running = False

    def set_store_address(self, host: str, port: int) -> None:
        """The address a message put without a store host of its own is stored with (the timer's deliveries, a
        store used alone): a broker on an ephemeral port (listen port 0) knows its own only once it listens, and
        an offset msg id naming port 0 leads no client anywhere."""
        self.config.store_host, self.config.store_port = host, port
        self.commit_log.set_store_host(self.config.store_host_bytes)

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def root(self) -> str:
        return self.config.store_path_root_dir

    @property
    def abort_file(self) -> str:
        return os.path.join(self.root, "abort")

    def __enter__(self) -> DefaultMessageStore:
        self.load()
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def load(self) -> bool:
        """Map every file and recover; after a crash (abort file present) re-check from the checkpoint."""
        self._lock = StoreLock.acquire(self.root)
        self.consume_queue_table.clear()
        self.dispatch_cq_table.clear()
        # (the bound is read now: the broker raises the open-files limit before it loads the store)
        self.cq_lru = ConsumeQueueLru(self.config.effective_max_mapped_consume_queue_files())
        try:
            self.last_exit_ok = not os.path.exists(self.abort_file)
            self.commit_log.load()
            self._load_consume_queues()
            self.checkpoint = StoreCheckpoint(os.path.join(self.root, "checkpoint"))
            self.index_service.load()
            self._recover()
        except BaseException:
            self._close_files()
            self._release_lock()
            raise
        self._loaded = True
        return True

    def start(self) -> None:
        if not self._loaded:
            self.load()
        self._destroy_deleted_queues()
        self.reput_service.start()
        # Like RocketMQ, serve nothing until dispatch has caught up with the recovered log.
        self.reput_service.wait_caught_up(self.commit_log.get_max_offset(), None)
        self._recover_topic_queue_table()
        if self.timer_message_store is not None:
            self.timer_message_store.load()
        self.flush_service.start()
        self.flush_cq_service.start()
        self.clean_service.start()
        if self.warm_service is not None:
            self.warm_service.start()
        with open(self.abort_file, "w"):
            pass
        drop_manifest(self.config.store_path_root_dir)  # (after the abort file: one of the two is always there)
        self._running = True
        if self.timer_message_store is not None:
            self.timer_message_store.start()  # (it puts messages: after the store runs)

    def shutdown(self) -> None:
        if not self._loaded:
            return
        was_running = self._running
        if was_running and self.timer_message_store is not None:
            # First, while the store still takes puts: the timer threads finish the slot in hand (a slot cut
            # short by refused puts would be delivered again, in full, at the next start).
            self.timer_message_store.shutdown()
        self._running = False
        caught_up = True
        if was_running:
            self.clean_service.shutdown()
            if self.warm_service is not None:
                self.warm_service.shutdown()
            self.flush_service.shutdown()
            caught_up = self.reput_service.wait_caught_up(self.commit_log.get_max_offset(), 10.0)
            self.reput_service.shutdown()
            self.flush_cq_service.shutdown()
        self.commit_log.mapped_file_queue.flush_all()
        for cq in self.consume_queue_table.values():
            cq.mapped_file_queue.flush_all()
        self.index_service.flush()
        cp = self.checkpoint
        assert cp is not None  # cleared only below
        cp.physic_msg_timestamp = max(cp.physic_msg_timestamp, self.commit_log._last_store_timestamp)
        last_index = self.index_service.files[-1] if self.index_service.files else None
        if last_index is not None:
            cp.index_msg_timestamp = last_index.end_timestamp
        cp.flush()
        if was_running and caught_up and self.running_flags.is_writeable():
            self._write_manifest()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.abort_file)
        self._close_files()
        self._release_lock()
        self._loaded = False

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _close_files(self) -> None:
        self.commit_log.shutdown()
        for cq in self.consume_queue_table.values():
            cq.shutdown()
        self.index_service.shutdown()
        if self.checkpoint is not None:
            self.checkpoint.shutdown()
            self.checkpoint = None

    @property
    def is_running(self) -> bool:
        return self._running

    def delivery_timestamp(self, props: bytes, store_ts: int) -> int:
        """Tags code of a SCHEDULE_TOPIC_XXXX entry: when the delayed message is due."""
        raw = raw_property(props, b"DELAY\x01")
        try:
            level = parse_integer(raw.decode(), INT_MIN, INT_MAX) if raw else 0
        except ValueError:  # (UnicodeDecodeError is one)
            level = 0
        if level <= 0:
            return store_ts
        return store_ts + self.delay_levels[min(level, len(self.delay_levels)) - 1]

    # -- put --------------------------------------------------------------------------------------
    def _check_store_status(self, topic: str) -> PutMessageResult | None:
        """Why a put to ``topic`` is refused now, or None (the usual answer first: running, writeable, a topic
        already seen)."""
        if self._running and not self.running_flags.flag and topic in self._valid_topics:
            return None
        if not self._running:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="the message store is not running")
        if self.running_flags.flag == DISK_FULL_BIT:
            self._recheck_disk()
        if not self.running_flags.is_writeable():
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE,
                                    remark=self.running_flags.why_not_writeable())
        reason = store_topic_error(topic)
        if reason is not None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=reason)
        return None


    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message. Under SYNC_FLUSH this returns once the flush covers it."""
        bad = self._check_store_status(msg.topic)
        if bad is not None:
            return bad
        result = self.commit_log.put_message(msg)
        if result.status is _PUT_OK or result.is_ok:
            self._hold_for_dispatch(result)
            if self.sync_flush:
                self._wait_flush(result, msg.properties.get(PROPERTY_WAIT_STORE_MSG_OK) != "false")
        return result

    def put_messages(self, msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> PutMessageResult:
        """Append a batch atomically (one file, consecutive queue offsets)."""
        bad = self._check_store_status(_batch_topic(msgs)) if len(msgs) else _empty_batch()
        if bad is not None:
            return bad
        result = self.commit_log.put_messages(msgs)
        if result.is_ok:
            self._hold_for_dispatch(result)
            if self.sync_flush:
                self._wait_flush(result, _wait_store_msg_ok(msgs))
        return result


    def _wait_flush(self, result: PutMessageResult, wait: bool) -> None:
        ar = result.append_result
        # Called only under SYNC_FLUSH (a GroupCommitService) and for an ok result, which has its append result.
        flushed = self.flush_service.submit(ar.wrote_offset + ar.wrote_bytes)  # type: ignore[union-attr]
        if wait:
            try:
                ok = flushed.result(self.config.sync_flush_timeout)
            except FutureTimeout:
                ok = False
            if not ok:
                result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT

    def async_put_message(self, msg: MessageExtBrokerInner) -> Future:
        """asyncPutMessage: put_message_nowait's answer, always as a Future."""
        return _as_future(self.put_message_nowait(msg))

    def async_put_messages(self, msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> Future:
        return _as_future(self.put_messages_nowait(msgs))

    def put_message_nowait(self, msg: MessageExtBrokerInner) -> PutMessageResult | Future:
        """Append one message without ever blocking the caller (an event loop): the PutMessageResult when
        nothing is left to wait for, else a Future of it. The Future is done once the group commit covers the
        message (SYNC_FLUSH, unless WAIT=false) and, if this put left the dispatcher too far behind, once the
        dispatcher caught up (_dispatch_hold_target): the caller awaits it instead of blocking as put_message
        does. Under ASYNC_FLUSH with the dispatcher keeping up, the answer is the result itself (no Future to
        build and complete)."""
        bad = self._check_store_status(msg.topic)
        if bad is not None:
            return bad
        result = self.commit_log.put_message(msg)
        if not self.sync_flush and result.status is _PUT_OK and self._dispatch_hold_target(result) is None:
            return result  # nothing to wait for: the common case, answered without the call below
        return self._after_put(result, msg)

    def put_messages_nowait(self, msgs: list[MessageExtBrokerInner] | MessageExtBatch) -> PutMessageResult | Future:
        """put_message_nowait for a batch (put_messages)."""
        bad = self._check_store_status(_batch_topic(msgs)) if len(msgs) else _empty_batch()
        if bad is not None:
            return bad
        result = self.commit_log.put_messages(msgs)
        if not self.sync_flush and result.status is _PUT_OK and self._dispatch_hold_target(result) is None:
            return result
        return self._after_put(result, msgs)

    def _after_put(
        self, result: PutMessageResult, msgs: MessageExtBrokerInner | list[MessageExtBrokerInner] | MessageExtBatch
    ) -> PutMessageResult | Future:
        """The rest of a nowait put that may have something to wait for: the result, or a Future of it."""
        if not (result.status is _PUT_OK or result.is_ok):
            return result
        target = self._dispatch_hold_target(result)
        held = None if target is None else self._dispatch_hold(target)
        flushed = None
        if self.sync_flush:
            ar = result.append_result
            # Called only under SYNC_FLUSH (a GroupCommitService) and for an ok result, which has its append result.
            flushed = self.flush_service.submit(ar.wrote_offset + ar.wrote_bytes)  # type: ignore[union-attr]
            if isinstance(msgs, MessageExtBrokerInner):
                wait_store_msg_ok = msgs.properties.get(PROPERTY_WAIT_STORE_MSG_OK) != "false"
            else:
                wait_store_msg_ok = bool(msgs) and _wait_store_msg_ok(msgs)
            if not wait_store_msg_ok:
                flushed = None
        if held is None and flushed is None:
            return result
        out: Future = Future()

        # One after the other (the hold, then the flush), so that only one thread completes `out`.
        def after_hold(_held: Future) -> None:
            if flushed is None:
                out.set_result(result)
            else:
                flushed.add_done_callback(after_flush)

        def after_flush(f: Future) -> None:
            if not f.result():
                result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            out.set_result(result)

        if held is not None:
            held.add_done_callback(after_hold)
        elif flushed is not None:
            flushed.add_done_callback(after_flush)
        return out

    def flush_commit_log(self, least_pages: int) -> None:
        ts = self.commit_log._last_store_timestamp
        before = self.commit_log.mapped_file_queue.flushed_where
        started = time.monotonic()
        self.commit_log.flush(least_pages)
        if self.commit_log.mapped_file_queue.flushed_where != before:
            self.flush_stats.record(time.monotonic() - started)
        if self.checkpoint is not None and ts:
            self.checkpoint.physic_msg_timestamp = ts


    # -- dispatch progress ------------------------------------------------------------------------
    def dispatch_behind_bytes(self) -> int:
        return self.reput_service.behind()

    def wait_dispatched(self, timeout: float | None = 10.0) -> bool:
        """Block until everything appended so far is in the consume queues and index."""
        return self.reput_service.wait_caught_up(self.commit_log.get_max_offset(), timeout)

    @property
    def message_arriving_listener(self):
        return self.reput_service.listener

    @message_arriving_listener.setter
    def message_arriving_listener(self, listener) -> None:
        self.reput_service.listener = listener

    # -- cleanup ----------------------------------------------------------------------------------
    def execute_delete_files_manually(self) -> None:
        """TRIGGER_DELETE_FILES: the next 20 cleaning rounds delete expired files at any hour."""
        self.clean_service.manual_delete_remaining = 20
