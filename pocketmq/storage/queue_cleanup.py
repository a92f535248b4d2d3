"""Two clean-ups an administrator asks for (mqadmin cleanExpiredCQ and cleanUnusedTopic): RocketMQ's
DefaultMessageStore.cleanExpiredConsumerQueue and cleanUnusedTopic, done through DefaultMessageStore.destroy_queues
so that a message put meanwhile is never dropped with a queue."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from pocketmq.common.topic_validator import (
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
)

if TYPE_CHECKING:
    from .message_store import DefaultMessageStore

# RocketMQ keeps these whatever the broker's topic table says: the schedule service and the transaction check
# write to them without a topic config of their own on some brokers.
_ALWAYS_USED = frozenset({RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC})


def _is_system(topic: str) -> bool:
    """TopicValidator.isSystemTopic (5.x): its names and its prefixes; a group's retry and DLQ topics are not."""
    return topic in SYSTEM_TOPICS or topic.startswith((SYSTEM_TOPIC_PREFIX, "RMQ_SYS_"))


def clean_expired_consume_queues(store: DefaultMessageStore) -> int:
    """Destroy every consume queue (but a system topic's, as RocketMQ 5 spares them: the timer, the revive log and
    the schedule service keep offsets of their own in theirs) whose last message lies wholly before the commit
    log's first byte: all it indexes is gone. The queue starts again at offset 0 with its next message, and a
    consumer beyond that is corrected to it, as RocketMQ does. The number of queues destroyed."""
    min_offset = store.commit_log.get_min_offset()

    def expired() -> set[tuple[str, int]]:
        pending = store.commit_log.topic_queue_table
        return {key for key, cq in list(store.consume_queue_table.items())
                if not _is_system(key[0]) and 0 <= cq.max_physic_offset < min_offset
                and pending.get(key, 0) <= cq.get_max_offset_in_queue()}

    return store.destroy_queues(expired)


def clean_unused_topics(store: DefaultMessageStore, topics_in_use: Callable[[], Collection[str]]) -> int:
    """Destroy the consume queues of every topic not in ``topics_in_use()`` (the broker's topic table, read under
    the put lock: a topic a send creates has its config before its first put, so one created meanwhile is never
    taken for unused); the number of queues destroyed. Their records stay in the commit log until it expires."""

    def unused() -> set[tuple[str, int]]:
        in_use = set(topics_in_use()) | _ALWAYS_USED
        return {key for key in list(store.consume_queue_table) if key[0] not in in_use}

    return store.destroy_queues(unused)
