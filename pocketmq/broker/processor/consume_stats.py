"""What GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS and QUERY_CONSUME_TIME_SPAN answer, read from the store and
the offsets on a pull thread (RocketMQ's AdminBrokerProcessor.getConsumeStats, fetchAllConsumeStatsInBroker and
queryConsumeTimeSpan)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms
from pocketmq.common.mq_version import V5_0_0
from pocketmq.common.pop_ack_constants import parse_normal_topic
from pocketmq.remoting.admin_body import ConsumeStats, ConsumeStatsList, OffsetWrapper, QueueTimeSpan
from pocketmq.remoting.client_body import MessageQueue

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

# From V5_0_0 on a client reads a queue's pullOffset (4.x's OffsetWrapper has none, and its broker sends none: each
# client gets the body its own version's broker would send).


def consume_stats(c: BrokerController, group: str, topic: str | None, offset_keys: list[str],
                  client_version: int = V5_0_0) -> ConsumeStats:
    """GET_CONSUME_STATS's table: each queue's max offset against the group's (ConsumeStats), of ``topic``, or
    of every topic the group has offsets of when it is None (found among ``offset_keys``, a copy of the offset
    table's keys); each queue's pull offset for a 5.x client."""
    topics = {topic} if topic is not None else topics_of_group(offset_keys, group)
    stats = ConsumeStats()
    for t in sorted(topics):
        tc = c.topic_config_manager.select_topic_config(t)
        if tc is None or _not_subscribed(c, group, t):
            continue
        _add_queues(c, stats, group, t, tc.read_queue_nums, True if client_version >= V5_0_0 else None)
    return stats


def broker_consume_stats(c: BrokerController, is_order: bool, groups: list[str], by_group: dict[str, set[str]],
                         out: ConsumeStatsList, client_version: int = V5_0_0, read_queues: bool = False) -> None:
    """GET_BROKER_CONSUME_STATS (AdminBrokerProcessor.fetchAllConsumeStatsInBroker) of ``groups``, added to
    ``out``: a ConsumeStats for each group and topic it has offsets of (``by_group``, from topics_by_group: one
    scan of the offset table's keys, not one a group), over the topic's write queues, only order topics if
    ``is_order``; a group without offsets is listed with an empty list. ``read_queues``: over the read queues
    instead (pocketmq's console asks so)."""
    for group in groups:
        listed: list[ConsumeStats] = []
        for t in sorted(by_group.get(group, ())):
            tc = c.topic_config_manager.select_topic_config(t)
            if tc is None or (is_order and not tc.order) or _not_subscribed(c, group, t):
                continue
            stats = ConsumeStats()
            queues = tc.read_queue_nums if read_queues else tc.write_queue_nums
            _add_queues(c, stats, group, t, queues, False if client_version >= V5_0_0 else None)
            out.total_diff += stats.compute_total_diff()
            listed.append(stats)
        out.consume_stats_list.append({group: listed})


def _not_subscribed(c: BrokerController, group: str, topic: str) -> bool:
    """RocketMQ leaves out a topic that an online group does not subscribe to. A POP retry topic of the group
    (``%RETRY%group_topic``, ``%RETRY%group+topic``) counts as subscribed with the topic it retries: no client
    subscribes to it, and RocketMQ 5's pop adds a subscription of it (ConsumerManager.compensateSubscribeData),
    so that the revived messages still waiting show in the group's backlog while it runs."""
    online = c.consumer_manager.get_consumer_group_info(group)
    if online is None or not online.subscription_table or topic in online.subscription_table:
        return False
    retried = parse_normal_topic(topic, group)
    return retried == topic or retried not in online.subscription_table


def _add_queues(c: BrokerController, stats: ConsumeStats, group: str, topic: str, queues: int,
                pulled: bool | None) -> None:
    """Each queue's offsets; with ``pulled`` True, the group's pull offset too, never behind its commit (RocketMQ
    5's getConsumeStats sets it), False 0 (its fetchAllConsumeStatsInBroker leaves it so), None none (4.x's)."""
    store, com = c.store, c.consumer_offset_manager
    for i in range(queues):
        broker_offset = max(store.get_max_offset_in_queue(topic, i), 0)
        consumer_offset = max(com.query_offset(group, topic, i), 0)
        last = 0
        if consumer_offset > 0:
            last = max(store.get_message_store_timestamp(topic, i, consumer_offset - 1), 0)
        mq = MessageQueue(topic, c.broker_config.broker_name, i)
        pull_offset = None if pulled is None else max(com.query_pull_offset(group, topic, i), consumer_offset) \
            if pulled else 0
        stats.offset_table[mq] = OffsetWrapper(broker_offset, consumer_offset, last, pull_offset)
    stats.consume_tps += c.broker_stats_manager.group_get_in_minute(topic, group).tps


def topics_of_group(offset_keys: list[str], group: str) -> set[str]:
    """ConsumerOffsetManager.whichTopicByConsumer, over the ``topic@group`` keys of the offset table."""
    suffix = "@" + group
    return {k[: -len(suffix)] for k in offset_keys if k.endswith(suffix)}


def topics_by_group(offset_keys: list[str]) -> dict[str, set[str]]:
    """topics_of_group of every group at once. A topic may hold an "@" (RocketMQ's TopicValidator refuses it, an
    older store may not have), a group may not: the group is after the last one."""
    out: dict[str, set[str]] = {}
    for k in offset_keys:
        topic, at, group = k.rpartition("@")
        if at:
            out.setdefault(group, set()).add(topic)
    return out


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
