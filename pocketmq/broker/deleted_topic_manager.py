"""DeletedTopicManager: the topics DELETE_TOPIC_IN_BROKER deleted, each with the commit log's end at the delete
(``deletedTopics.json``, a file of pocketmq's own beside ``topics.json``; RocketMQ has none and ignores it).

A deleted topic's records stay in the commit log until it expires, and a crash restart re-dispatches from the start
of a file before the checkpoint (as RocketMQ does), so the deleted topic's consume queues would be built again, and
the start, which rebuilds a topic the store has queues of but ``topics.json`` lacks (its config lost), would bring
the topic back. This file tells a deleted topic from a lost one: the store dispatches no record of a topic below its
offset here (DefaultMessageStore.deleted_topic_offsets), so only what was sent after the delete (to the topic created
again) can come back. It is written, fsynced, before the delete is answered. An entry stays when the topic is created
again, since its old records are still in the log; it goes once the commit log's first byte is past its offset (those
records are gone), so the file never holds more than the deletes the live commit log still remembers.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .config import BrokerConfig
from .config_file import ConfigManager

log = logging.getLogger(__name__)


class DeletedTopicManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "deletedTopics.json"))
        # topic -> commit-log offset: its records below it were deleted.
        self.deleted_topic_table: dict[str, int] = {}

    async def record_deletion(self, topic: str, offset: int, min_offset: int) -> None:
        """Remember that ``topic``'s records below ``offset`` are deleted, on disk before returning; forget the
        deletions the commit log (first byte at ``min_offset``) no longer holds a record of."""
        self.deleted_topic_table[topic] = max(offset, self.deleted_topic_table.get(topic, 0))
        self.prune(min_offset)
        await self.persist()

    def prune(self, min_offset: int) -> bool:
        """Forget the deletions below ``min_offset``; whether any was forgotten (the caller persists)."""
        gone = [topic for topic, offset in self.deleted_topic_table.items() if offset <= min_offset]
        for topic in gone:
            del self.deleted_topic_table[topic]
        if gone:
            self.mark_changed()
            log.info("forgot %d deleted topic(s) whose records the commit log no longer holds", len(gone))
        return bool(gone)

    def encode(self) -> dict[str, Any]:
        return {"deletedTopicTable": dict(self.deleted_topic_table)}

    def decode(self, data: Any) -> None:
        self.deleted_topic_table.update({str(k): int(v) for k, v in data["deletedTopicTable"].items()})
