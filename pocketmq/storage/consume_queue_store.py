"""DefaultMessageStore's consume queues, made on first dispatch and destroyed with their topic: RocketMQ 5's
ConsumeQueueStore (findOrCreateConsumeQueue, destroy) and DefaultMessageStore.deleteTopics."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from pocketmq.common.validators import InvalidTopicError, store_topic_error

from .commit_log import CommitLog
from .config import MessageStoreConfig
from .consume_queue import ConsumeQueue
from .consume_queue_lru import ConsumeQueueLru
from .reput_service import ReputMessageService


class ConsumeQueueStore:
    """The consume-queue table of DefaultMessageStore (a mixin: the state is the store's)."""

    config: MessageStoreConfig
    commit_log: CommitLog
    consume_queue_table: dict[tuple[str, int], ConsumeQueue]
    dispatch_cq_table: dict[tuple[bytes, int], ConsumeQueue]
    cq_lru: ConsumeQueueLru
    reput_service: ReputMessageService

    def _new_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        # The topic becomes a directory under consumequeue: never one a put would refuse (a "../" would leave it).
        reason = store_topic_error(topic)
        if reason is not None:
            raise InvalidTopicError(reason)
        cq = ConsumeQueue(topic, queue_id, self.config.store_path_consume_queue,
                          self.config.mapped_file_size_consume_queue)
        self.consume_queue_table[(topic, queue_id)] = cq
        self.dispatch_cq_table[(topic.encode(), queue_id)] = cq
        return cq

    def find_consume_queue_for_dispatch(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.consume_queue_table.get((topic, queue_id))
        return cq if cq is not None else self._new_consume_queue(topic, queue_id)

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.consume_queue_table.get((topic, queue_id))

    def delete_topics(self, topics: set[str], timeout: float = 10.0) -> tuple[int, int]:
        """Destroy the consume queues of `topics` (their commit-log records expire as usual); the number of
        queues destroyed, and the commit log's end at the moment below which every record of theirs is deleted.

        The topics' queue offsets restart at 0 for every put after this call begins (under the put lock), and
        their queues are destroyed on the dispatcher thread, exactly when everything put before that moment is
        dispatched and nothing put after it (ReputMessageService.run_at). So a topic used again right away
        keeps every message acknowledged afterwards."""
        commit_log = self.commit_log
        with commit_log.put_lock:
            for key in [k for k in commit_log.topic_queue_table if k[0] in topics]:
                del commit_log.topic_queue_table[key]
            end = commit_log.get_max_offset()
            if not self.reput_service.running:  # not started, or called by the dispatcher itself
                return self._destroy_topics(topics), end
            done = self.reput_service.run_at(end, lambda: self._destroy_topics(topics))
        return done.result(timeout), end

    def destroy_queues(self, select: Callable[[], set[tuple[str, int]]], timeout: float = 10.0) -> int:
        """Destroy the consume queues that ``select`` names, called under the put lock; the number destroyed.

        As for delete_topics: their offsets restart at 0 for every later put, and the queues are destroyed on
        the dispatcher thread once everything put before is dispatched. ``select`` must leave out a queue with
        puts not dispatched yet (its offset in the commit log's topic queue table above its max offset)."""
        commit_log = self.commit_log
        with commit_log.put_lock:
            keys = select()
            for key in keys:
                commit_log.topic_queue_table.pop(key, None)
            if not self.reput_service.running:
                return self._destroy_queues(keys)
            done = self.reput_service.run_at(commit_log.get_max_offset(), lambda: self._destroy_queues(keys))
        return done.result(timeout)

    def _destroy_topics(self, topics: set[str]) -> int:
        return self._destroy_queues({k for k in self.consume_queue_table if k[0] in topics}, topics)

    def _destroy_queues(self, keys: set[tuple[str, int]], topics: set[str] | None = None) -> int:
        count = 0
        for key in keys:
            cq = self.consume_queue_table.pop(key, None)
            if cq is None:
                continue
            self.dispatch_cq_table.pop((key[0].encode(), key[1]), None)
            self.cq_lru.forget(cq)
            cq.destroy()
            count += 1
        for topic in topics if topics is not None else {k[0] for k in keys}:
            path = os.path.join(self.config.store_path_consume_queue, topic)
            if store_topic_error(topic) is None and os.path.isdir(path):
                with contextlib.suppress(OSError):
                    for qid in os.listdir(path):
                        if topics is not None or (qid.isdigit() and (topic, int(qid)) in keys):
                            os.rmdir(os.path.join(path, qid))
                    os.rmdir(path)
        return count
