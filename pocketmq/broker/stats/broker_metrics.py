"""BrokerMetrics: the counters behind /metrics' traffic families, counted where RocketMQ 5's BrokerMetricsManager
counts them, which is not where its BrokerStatsManager (the TPS figures) does.

RocketMQ 5 counts a message in (rocketmq_messages_in_total, throughput_in, message_size) when a client's send
stored it, unless its topic is a retry or dead-letter one, and again under its real topic when the scheduler
delivers a delayed message (a consumer's retry too: it waits in the schedule topic); the real message a
committed transaction stores counts only in rocketmq_commit_messages_total. A message out counts when a pull
found it, unless the topic is a retry or dead-letter one, when a pop found it (under the topic the client
asked for, is_retry telling whether it came from the pop retry topic), and when the scheduler took it out of
the schedule topic. The histogram counts one sample a put, at the put's mean size, as RocketMQ's does.
"""

from __future__ import annotations

from bisect import bisect_left

from pocketmq.common.mix_all import (
    CID_RMQ_SYS_PREFIX,
    SCHEDULE_CONSUMER_GROUP,
    is_retry_or_dlq_topic,
)
from pocketmq.common.topic_attributes import METRICS_DELAY as DELAY
from pocketmq.common.topic_attributes import METRICS_MESSAGE_TYPES as MESSAGE_TYPES
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC, SYSTEM_TOPIC_PREFIX, SYSTEM_TOPICS

# RocketMQ 5's rocketmq_message_size buckets (le_1_kb ... le_4_mb, then overflow), in bytes.
MESSAGE_SIZE_BOUNDS = (1024, 4096, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)

# Rows of rocketmq_send_to_dlq_messages_total kept at most.
MAX_DLQ_ROWS = 10_000

# An in row: [messages, bytes, sum of the samples, count per MESSAGE_SIZE_BOUNDS bucket ..., overflow].
IN_ROW = 3 + len(MESSAGE_SIZE_BOUNDS) + 1
# An out row: [messages, bytes] of pulls (no is_retry label), of pops from the topic, of pops from its retry topic.
PULL, POP, POP_RETRY = 0, 2, 4



def is_system_topic(topic: str) -> bool:
    """RocketMQ 5's TopicValidator.isSystemTopic: its own topics, not the groups' retry and dead-letter ones."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_system_group(group: str) -> bool:
    return group.upper().startswith(CID_RMQ_SYS_PREFIX)


def is_system(topic: str, group: str) -> bool:
    return is_system_topic(topic) or is_system_group(group)


class BrokerMetrics:
    def __init__(self) -> None:
        # message type -> topic -> IN_ROW (no key allocated per put: the type's table is one of four)
        self.messages_in: dict[str, dict[str, list[int]]] = {t: {} for t in MESSAGE_TYPES}
        # group -> topic -> out row
        self.messages_out: dict[str, dict[str, list[int]]] = {}
        self.send_to_dlq: dict[tuple[str, str], int] = {}  # (group, original topic) -> messages
        self.commits: dict[str, int] = {}  # topic -> committed transactions
        self.rollbacks: dict[str, int] = {}

    def put(self, topic: str, mtype: str, msgs: int, size: int) -> None:
        rows = self.messages_in[mtype]
        row = rows.get(topic)
        if row is None:
            row = rows[topic] = [0] * IN_ROW
        row[0] += msgs
        row[1] += size
        mean = size // msgs if msgs > 1 else size
        row[2] += mean
        row[3 if mean <= 1024 else 3 + bisect_left(MESSAGE_SIZE_BOUNDS, mean)] += 1

    def sent(self, topic: str, mtype: str, msgs: int, size: int) -> None:
        """A client's send, stored (a retry topic's row is the scheduler's deliveries)."""
        if not is_retry_or_dlq_topic(topic):
            self.put(topic, mtype, msgs, size)

    def delivered_delayed(self, topic: str, msgs: int, size: int) -> None:
        """The scheduler stored a delayed message under its real topic."""
        self.get(SCHEDULE_CONSUMER_GROUP, RMQ_SYS_SCHEDULE_TOPIC, msgs, size, PULL)
        self.put(topic, DELAY, msgs, size)

    def get(self, group: str, topic: str, msgs: int, size: int, kind: int) -> None:
        topics = self.messages_out.get(group)
        if topics is None:
            topics = self.messages_out[group] = {}
        row = topics.get(topic)
        if row is None:
            row = topics[topic] = [0] * 6
        row[kind] += msgs
        row[kind + 1] += size

    def pulled(self, group: str, topic: str, msgs: int, size: int) -> None:
        if not is_retry_or_dlq_topic(topic):
            self.get(group, topic, msgs, size, PULL)

    def to_dlq(self, group: str, topic: str) -> None:
        key = (group, topic)
        count = self.send_to_dlq.get(key)
        if count is None and len(self.send_to_dlq) >= MAX_DLQ_ROWS:
            return  # (the original topic is the client's word: a row per name it makes up would grow for good)
        self.send_to_dlq[key] = (count or 0) + 1

    def on_topic_deleted(self, topic: str) -> None:
        for rows in self.messages_in.values():
            rows.pop(topic, None)
        for topics in self.messages_out.values():
            topics.pop(topic, None)
        for key in [k for k in self.send_to_dlq if k[1] == topic]:
            del self.send_to_dlq[key]
        self.commits.pop(topic, None)
        self.rollbacks.pop(topic, None)

    def on_group_deleted(self, group: str) -> None:
        self.messages_out.pop(group, None)
        for key in [k for k in self.send_to_dlq if k[0] == group]:
            del self.send_to_dlq[key]

    def committed(self, topic: str) -> None:
        self.commits[topic] = self.commits.get(topic, 0) + 1

    def rolled_back(self, topic: str) -> None:
        self.rollbacks[topic] = self.rollbacks.get(topic, 0) + 1
