"""ConsumerOffsetManager: the next offset to consume per ``topic@group`` and queue; ``consumerOffset.json``.

The file carries a ``dataVersion``, as RocketMQ 5.x's does (4.9.x's does not). pocketmq wrote none before it
committed the POP revive offset as RocketMQ 5 does (the last revive record processed, not the next one to read;
pop/pop_revive_service.py), so a file without one has the revive offsets of an earlier pocketmq, or of a 4.9.x
broker that carried them over (4.9.x has no POP): they are moved back one record as they are loaded. Were the file
in fact RocketMQ 5's with its dataVersion lost, one processed record is read again: a checkpoint revived twice (at
least once), never one skipped (a message lost).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from pocketmq.common.java_text import is_blank
from pocketmq.common.pop_ack_constants import REVIVE_GROUP
from pocketmq.remoting.topic_config import DataVersion

from .config import BrokerConfig
from .config_file import ConfigManager

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"
_REVIVE_KEY_SUFFIX = TOPIC_GROUP_SEPARATOR + REVIVE_GROUP


class ConsumerOffsetManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "consumerOffset.json"))
        self.offset_table: dict[str, dict[int, int]] = {}
        # RocketMQ 5's pullOffsetTable: the next offset each pull answered, per topic@group and queue (in memory
        # only). GET_CONSUME_STATS reports it as the queue's pullOffset: pulled ahead of the commit is in flight.
        self.pull_offset_table: dict[str, dict[int, int]] = {}
        # RocketMQ 5's resetOffsetTable: the queues an admin reset one by one (INVOKE_BROKER_TO_RESET_OFFSET with a
        # queue id), per topic@group, until the group next pulls or pops the queue (in memory only). Meanwhile a
        # commit of the queue is ignored, so that a consumer still at the old position does not undo the reset.
        self.reset_offset_table: dict[str, dict[int, int]] = {}
        self.data_version = DataVersion()

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

    def commit_pull_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        table = self.pull_offset_table.get(key := self.key(topic, group))
        if table is None:
            table = self.pull_offset_table[key] = {}
        table[queue_id] = offset

    def query_pull_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The offset the group's last pull of the queue answered, else its committed offset (or -1)."""
        offset = self.pull_offset_table.get(self.key(topic, group), {}).get(queue_id)
        return self.query_offset(group, topic, queue_id) if offset is None else offset

    def remove_pull_offsets(self, group: str) -> None:
        suffix = TOPIC_GROUP_SEPARATOR + group
        for key in [k for k in self.pull_offset_table if k.endswith(suffix)]:
            del self.pull_offset_table[key]

    def assign_reset_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """ConsumerOffsetManager.assignResetOffset: the queue's offset set, and held until the group's next pull."""
        self.reset_offset_table.setdefault(self.key(topic, group), {})[queue_id] = offset
        self.commit_offset("admin reset", group, topic, queue_id, offset)

    def drop_reset_offsets(self, topic: str, group: str) -> None:
        """The holds of the group's queues of ``topic`` let go (a reset of the whole topic replaces them)."""
        self.reset_offset_table.pop(self.key(topic, group), None)

    def has_offset_reset(self, topic: str, group: str, queue_id: int) -> bool:
        return queue_id in self.reset_offset_table.get(self.key(topic, group), {})

    def query_then_erase_reset_offset(self, topic: str, group: str, queue_id: int) -> int | None:
        table = self.reset_offset_table.get(key := self.key(topic, group))
        if table is None:
            return None
        offset = table.pop(queue_id, None)
        if not table:
            del self.reset_offset_table[key]
        return offset

    def remove_group(self, group: str) -> bool:
        """Forget the group's offsets of every topic; whether it had any stored."""
        suffix = TOPIC_GROUP_SEPARATOR + group
        keys = [k for k in self.offset_table if k.endswith(suffix)]
        for key in keys:
            del self.offset_table[key]
        for key in [k for k in self.reset_offset_table if k.endswith(suffix)]:
            del self.reset_offset_table[key]
        self.remove_pull_offsets(group)
        if keys:
            self.mark_changed()
        return bool(keys)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1 when the group never committed one for this queue."""
        table = self.offset_table.get(self.key(topic, group))
        if table is None:
            return -1
        return table.get(queue_id, -1)

    def query_offset_table(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(self.key(topic, group), {}))

    def which_topic_by_consumer(self, group: str) -> set[str]:
        """ConsumerOffsetManager.whichTopicByConsumer: the topics ``group`` has offsets of."""
        out = set()
        for key in list(self.offset_table):
            parts = key.split(TOPIC_GROUP_SEPARATOR)
            if len(parts) == 2 and parts[1] == group:
                out.add(parts[0])
        return out

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> bool:
        """ConsumerOffsetManager.cloneOffset: ``dest_group``'s offsets of ``topic`` replaced by a copy of
        ``src_group``'s; whether the source had any."""
        offsets = self.offset_table.get(self.key(topic, src_group))
        if offsets is None:
            return False
        self.offset_table[self.key(topic, dest_group)] = dict(offsets)
        self.mark_changed()
        return True

    def query_min_offset_in_all_group(
        self, topic: str, filter_groups: frozenset[str], min_offset_in_queue: Callable[[int], int]
    ) -> dict[int, int]:
        """ConsumerOffsetManager.queryMinOffsetInAllGroup: per queue of ``topic``, the lowest offset of the groups
        not in ``filter_groups`` (filter_groups_of), counting only offsets at or past the queue's first one.

        RocketMQ removes the filtered groups' offsets of every topic from the table as it leaves them out (it
        iterates the table's keySet and removes from it); pocketmq only leaves them out: a query does not
        lose a group's progress."""
        out: dict[int, int] = {}
        for key, queues in list(self.offset_table.items()):
            if key.split(TOPIC_GROUP_SEPARATOR)[0] != topic or is_filtered(key, filter_groups):
                continue
            for queue_id, offset in list(queues.items()):
                if offset >= min_offset_in_queue(queue_id):
                    lowest = out.get(queue_id)
                    out[queue_id] = offset if lowest is None else min(lowest, offset)
        return out

    def remove_topic(self, topic: str) -> int:
        """Forget every group's offsets of ``topic`` (used when the topic is deleted)."""
        prefix = topic + TOPIC_GROUP_SEPARATOR
        keys = [k for k in self.offset_table if k.startswith(prefix)]
        for k in keys:
            del self.offset_table[k]
        for table in (self.pull_offset_table, self.reset_offset_table):
            for k in [k for k in table if k.startswith(prefix)]:
                del table[k]
        if keys:
            self.mark_changed()
        return len(keys)

    def encode(self) -> dict[str, Any]:
        # JSON keys are strings; RocketMQ's fastjson writes the queue ids unquoted, which load() also accepts.
        return {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.offset_table.items()},
                "dataVersion": self.data_version.to_dict()}

    def decode(self, data: Any) -> None:
        table = data.get("offsetTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            raise ValueError("no offsetTable map")
        out: dict[str, dict[int, int]] = {}
        for key, queues in table.items():
            if not isinstance(queues, dict) or TOPIC_GROUP_SEPARATOR not in key:
                raise ValueError(f"bad offsetTable entry {key!r}")
            out[key] = {_in_range(int(q), 32, key): _in_range(int(o), 64, key) for q, o in queues.items()}
        version = data.get("dataVersion")
        if isinstance(version, dict):
            self.data_version = DataVersion.from_dict(version, "dataVersion")
        else:
            _revive_offsets_to_last_processed(out)
            self.mark_changed()  # (the next write gives the file its dataVersion: it is not moved back twice)
        self.offset_table = out


def filter_groups_of(text: str | None) -> frozenset[str]:
    """QueryCorrectionOffsetHeader.filterGroups as RocketMQ splits it: ","-separated groups; blank for none."""
    if text is None or is_blank(text):
        return frozenset()
    return frozenset(text.split(","))


def is_filtered(key: str, filter_groups: frozenset[str]) -> bool:
    """Whether the ``topic@group`` key is one RocketMQ leaves out for ``filter_groups``: its second part (the
    group, split at every separator as Java's String.split) is one of them."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    return len(parts) > 1 and parts[1] in filter_groups


def _in_range(value: int, bits: int, key: str) -> int:
    """A queue id (Java int) or offset (long) as Java reads it: one outside its range is refused at load, so that
    no answer carrying the table fails later."""
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{key}: {value} is out of the range of a {bits}-bit integer")
    return value


def _revive_offsets_to_last_processed(table: dict[str, dict[int, int]]) -> None:
    """An earlier pocketmq's revive offsets (the next record to read) as RocketMQ 5's (the last one processed); one
    at 0 (nothing read) is dropped, as RocketMQ has none then."""
    for key in [k for k in table if k.endswith(_REVIVE_KEY_SUFFIX)]:
        moved = {q: o - 1 for q, o in table[key].items() if o > 0}
        if moved != table[key]:
            log.info("%s: revive offsets of an earlier pocketmq, moved back one record: %s", key, moved)
        if moved:
            table[key] = moved
        else:
            del table[key]
