"""What GET_CONSUME_STATS and QUERY_CONSUME_TIME_SPAN answer, read from the store and the offsets on a pull thread
(RocketMQ's AdminBrokerProcessor.getConsumeStats and queryConsumeTimeSpan)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms
from pocketmq.remoting.admin_body import ConsumeStats, OffsetWrapper, QueueTimeSpan
from pocketmq.remoting.client_body import MessageQueue

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


def consume_stats(c: BrokerController, group: str, topic: str | None, offset_keys: list[str]) -> ConsumeStats:
    """GET_CONSUME_STATS's table: each queue's max offset against the group's (ConsumeStats), of ``topic``, or
    of every topic the group has offsets of when it is None (found among ``offset_keys``, a copy of the offset
    table's keys)."""
    topics = {topic} if topic is not None else topics_of_group(offset_keys, group)
    store, com = c.store, c.consumer_offset_manager
    stats = ConsumeStats()
    subscribed = c.consumer_manager.get_consumer_group_info(group)
    for t in sorted(topics):
        tc = c.topic_config_manager.select_topic_config(t)
        if tc is None:
            continue
        if subscribed is not None and subscribed.subscription_table and t not in subscribed.subscription_table:
            continue  # (RocketMQ: an online group that does not subscribe to the topic is left out)
        for i in range(tc.read_queue_nums):
            broker_offset = max(store.get_max_offset_in_queue(t, i), 0)
            consumer_offset = max(com.query_offset(group, t, i), 0)
            last = 0
            if consumer_offset > 0:
                last = max(store.get_message_store_timestamp(t, i, consumer_offset - 1), 0)
            mq = MessageQueue(t, c.broker_config.broker_name, i)
            stats.offset_table[mq] = OffsetWrapper(broker_offset, consumer_offset, last)
        stats.consume_tps += c.broker_stats_manager.group_get_in_minute(t, group).tps
    return stats


def topics_of_group(offset_keys: list[str], group: str) -> set[str]:
    """ConsumerOffsetManager.whichTopicByConsumer, over the ``topic@group`` keys of the offset table."""
    suffix = "@" + group
    return {k[: -len(suffix)] for k in offset_keys if k.endswith(suffix)}


def consume_time_spans(c: BrokerController, group: str, topic: str, queues: int) -> list[QueueTimeSpan]:
    """AdminBrokerProcessor.queryConsumeTimeSpan, value for value (-1 where the store has no message)."""
    store = c.store
    out = []
    for i in range(queues):
        min_time = store.get_earliest_message_time(topic, i)
        max_offset = store.get_max_offset_in_queue(topic, i)
        consumer_offset = c.consumer_offset_manager.query_offset(group, topic, i)
        span = QueueTimeSpan(MessageQueue(topic, c.broker_config.broker_name, i), min_time,
                             store.get_message_store_timestamp(topic, i, max_offset - 1))
        span.consume_time_stamp = (store.get_message_store_timestamp(topic, i, consumer_offset - 1)
                                   if consumer_offset > 0 else min_time)
        if consumer_offset < max_offset:
            span.delay_time = now_ms() - store.get_message_store_timestamp(topic, i, consumer_offset)
        out.append(span)
    return out
