"""ConsumerOffsetManager: the next offset to consume per ``topic@group`` and queue; ``consumerOffset.json``."""

from __future__ import annotations

import logging
import os
from typing import Any

from .config import BrokerConfig
from .config_file import ConfigManager

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "consumerOffset.json"))
        self.offset_table: dict[str, dict[int, int]] = {}

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        table = self.offset_table.get(key := self.key(topic, group))
        if table is None:
            table = self.offset_table[key] = {}
        prev = table.get(queue_id)
        if prev is not None and offset < prev:
            # Legitimate after a reset, but worth seeing when a client goes backwards by accident.
            log.debug("offset of %s queue %d moved back from %d to %d by %s", key, queue_id, prev, offset, client_host)
        table[queue_id] = offset
        self.mark_changed()  # written every flushConsumerOffsetInterval, not per commit

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1 when the group never committed one for this queue."""
        table = self.offset_table.get(self.key(topic, group))
        if table is None:
            return -1
        return table.get(queue_id, -1)

    def query_offset_table(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(self.key(topic, group), {}))

    def remove_topic(self, topic: str) -> int:
        """Forget every group's offsets of ``topic`` (used when the topic is deleted)."""
        prefix = topic + TOPIC_GROUP_SEPARATOR
        keys = [k for k in self.offset_table if k.startswith(prefix)]
        for k in keys:
            del self.offset_table[k]
        if keys:
            self.mark_changed()
        return len(keys)

    def encode(self) -> dict[str, Any]:
        # JSON keys are strings; RocketMQ's fastjson writes the queue ids unquoted, which load() also accepts.
        return {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.offset_table.items()}}

    def decode(self, data: Any) -> None:
        table = data.get("offsetTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            raise ValueError("no offsetTable map")
        out: dict[str, dict[int, int]] = {}
        for key, queues in table.items():
            if not isinstance(queues, dict) or TOPIC_GROUP_SEPARATOR not in key:
                raise ValueError(f"bad offsetTable entry {key!r}")
            out[key] = {int(q): int(o) for q, o in queues.items()}
        self.offset_table = out
