"""DefaultMessageStore's load-time recovery (RocketMQ's loadConsumeQueue, recover and recoverTopicQueueTable):
map the consume queues, cut what points past the recovered end of the log, check the files against the manifest of
the last clean stop, and decide where dispatch resumes."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from pocketmq.common.validators import store_topic_error

from .checkpoint import StoreCheckpoint
from .commit_log import CommitLog
from .config import MessageStoreConfig
from .consume_queue import ConsumeQueue
from .consume_queue_lru import ConsumeQueueLru
from .dispatch_manifest import read_manifest, write_manifest
from .index_service import IndexService
from .recovery import recover_abnormally, recover_normally

if TYPE_CHECKING:
    from .reput_service import ReputMessageService

log = logging.getLogger("pocketmq.storage.message_store")


def _first_gap(files: list, file_size: int, first: int) -> int | None:
    """Offset of the first file missing from a queue whose files should start at `first`, or None."""
    want = first
    for mf in files:
        if mf.file_from_offset > want:
            return want
        want = mf.file_from_offset + file_size
    return None


class MessageStoreRecovery:
    """The recovery steps of DefaultMessageStore.load and start (a mixin: the state is the store's)."""

    config: MessageStoreConfig
    commit_log: CommitLog
    consume_queue_table: dict[tuple[str, int], ConsumeQueue]
    cq_lru: ConsumeQueueLru
    checkpoint: StoreCheckpoint | None
    index_service: IndexService
    reput_service: ReputMessageService
    last_exit_ok: bool
    deleted_topic_offsets: dict[str, int]
    deleted_records_end: int

    if TYPE_CHECKING:
        def _new_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue: ...
        def _destroy_queues(self, keys: set[tuple[str, int]], topics: set[str] | None = None) -> int: ...

    def set_deleted_topics(self, offsets: dict[str, int]) -> None:
        """The deleted topics (the broker's DeletedTopicManager), each with the commit-log offset below which its
        records were deleted: dispatch from the log (a crash restart's, from a file's start) writes no queue entry for
        those records, and start() destroys the queues that index nothing else (a crash in the middle of the delete).
        So a deleted topic's queues are not built again, and only what was sent to it after the delete comes back."""
        self.deleted_topic_offsets = dict(offsets)
        self.deleted_records_end = max(offsets.values(), default=0)

    def _destroy_deleted_queues(self) -> None:
        deleted = self.deleted_topic_offsets
        keys = {key for key, cq in self.consume_queue_table.items()
                if key[0] in deleted and 0 <= cq.max_physic_offset <= deleted[key[0]]}
        if keys:
            log.warning("destroying %d consume queue(s) of deleted topics that hold only deleted messages: %s",
                        len(keys), ", ".join(sorted(f"{t}/{q}" for t, q in keys)[:20]))
            self._destroy_queues(keys)

    def _load_consume_queues(self) -> None:
        root = self.config.store_path_consume_queue
        if not os.path.isdir(root):
            return
        for topic in sorted(os.listdir(root)):
            if store_topic_error(topic) is not None or not os.path.isdir(os.path.join(root, topic)):
                # (a file, e.g. a .DS_Store the Finder leaves, is no topic either: Apache's listFiles() skips it)
                log.warning("ignoring %s in %s: not a topic's folder", topic, root)
                continue
            for qid in sorted(os.listdir(os.path.join(root, topic))):
                if qid.isdigit():
                    cq = self._new_consume_queue(topic, int(qid))
                    cq.load()
                    cq.recover()
                    self.cq_lru.touch(cq)  # (parks the least recent past the bound: load maps one queue at a time)

    def _recover(self) -> None:
        check_crc = self.config.check_crc_on_recover
        dispatch_from = None
        if self.last_exit_ok:
            end = recover_normally(self.commit_log, check_crc)
        else:
            assert self.checkpoint is not None  # made by load() above
            end, dispatch_from = recover_abnormally(self.commit_log, self.checkpoint.get_min_timestamp(), check_crc)
        # Nothing may point past the recovered end of the log.
        for cq in self.consume_queue_table.values():
            if cq.max_physic_offset > end:
                self.cq_lru.touch(cq)
                cq.truncate_dirty_logic_files(end)
        rebuild_index_from = self.index_service.drop_files_after(end)
        min_offset = max(self.commit_log.get_min_offset(), 0)
        reput_from = max((cq.max_physic_offset for cq in self.consume_queue_table.values()), default=-1)
        if reput_from < 0:
            reput_from = min_offset
        rebuild_from = self._verify_files(read_manifest(self.config.store_path_root_dir), min_offset)
        if rebuild_from is not None:
            dispatch_from = rebuild_from if dispatch_from is None else min(dispatch_from, rebuild_from)
        for candidate in (dispatch_from, rebuild_index_from):
            if candidate is not None:
                reput_from = min(reput_from, candidate)
        self.reput_service.reput_from_offset = max(reput_from, min_offset)

    def _verify_files(self, manifest: tuple[dict[tuple[str, int], tuple[int, int]], list[str]] | None,
                      min_offset: int) -> int | None:
        """Check that every consume-queue and index file the store had at its last clean stop is here (the
        manifest written then; there is none after a crash, where the checkpoint decides what to re-dispatch),
        and that no queue has a gap; cut a damaged queue at its first missing file. Returns the commit-log
        offset to re-dispatch from (its start) when anything is missing."""
        damaged: list[str] = []
        expected_queues, expected_index = manifest if manifest is not None else ({}, [])
        for key, cq in self.consume_queue_table.items():
            files = cq.mapped_file_queue.files
            expect = expected_queues.get(key)
            first = expect[0] if expect is not None else (files[0].file_from_offset if files else 0)
            end = expect[1] if expect is not None else 0
            gap = _first_gap(files, cq.file_size, first)
            if gap is not None or cq.mapped_file_queue.get_max_offset() < end:
                self.cq_lru.touch(cq)
                cq.truncate_to_file_start(gap if gap is not None else files[-1].file_end_offset if files else first)
                damaged.append(f"{key[0]}/{key[1]}")
        for key in expected_queues.keys() - self.consume_queue_table.keys():
            if expected_queues[key][1] > 0:
                damaged.append(f"{key[0]}/{key[1]} (all of it)")
        present = {f.name for f in self.index_service.files}
        lost_index = [name for name in expected_index if name not in present]
        if lost_index:
            self.index_service.destroy()
            damaged.append(f"index files {', '.join(lost_index)}")
        if not damaged:
            return None
        log.warning("store files missing after a clean stop, rebuilding them from the commit log (from offset %d): "
                    "%s", min_offset, "; ".join(damaged[:20]) + (f" and {len(damaged) - 20} more" if len(damaged) > 20
                                                                  else ""))
        return min_offset

    def _write_manifest(self) -> None:
        queues = {}
        for key, cq in self.consume_queue_table.items():
            first = cq.mapped_file_queue.first()
            if first is not None:
                queues[key] = (first.file_from_offset, cq.mapped_file_queue.get_max_offset())
        write_manifest(self.config.store_path_root_dir, queues, [f.name for f in self.index_service.files])

    def _recover_topic_queue_table(self) -> None:
        min_phy = self.commit_log.get_min_offset()
        table = {}
        for key, cq in self.consume_queue_table.items():
            table[key] = cq.get_max_offset_in_queue()
            if min_phy > 0:
                cq.correct_min_offset(min_phy)
        self.commit_log.topic_queue_table = table
