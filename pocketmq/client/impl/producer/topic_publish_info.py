"""TopicPublishInfo (where a producer may send) and the conversions from a name server's TopicRouteData."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pocketmq.common.java_hash import java_string_order
from pocketmq.remoting.body import TopicRouteData
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import MASTER_ID, PermName

_POSITIVE_MASK = 0x7FFFFFFF


def _mq_sort_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    return (java_string_order(mq.topic), java_string_order(mq.broker_name), mq.queue_id)


@dataclass(slots=True)
class TopicPublishInfo:
    """RocketMQ's TopicPublishInfo: the queues a producer may send a topic's messages to, and whose turn is next."""

    order_topic: bool = False
    have_topic_router_info: bool = False
    message_queue_list: list[MessageQueue] = field(default_factory=list)
    # RocketMQ's ThreadLocalIndex: a random start so that many producers do not all begin on queue 0.
    # One event loop per producer replaces the per-thread copy.
    send_which_queue: int = field(default_factory=lambda: random.randrange(_POSITIVE_MASK))
    topic_route_data: TopicRouteData | None = None

    def ok(self) -> bool:
        return bool(self.message_queue_list)

    def next_index(self) -> int:
        self.send_which_queue = (self.send_which_queue + 1) & _POSITIVE_MASK
        return self.send_which_queue

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue | None:
        """Round-robin; on a retry (``last_broker_name`` set) skip that broker's queues if another has any."""
        queues = self.message_queue_list
        if not queues:
            return None
        if last_broker_name is not None:
            for _ in range(len(queues)):
                mq = queues[self.next_index() % len(queues)]
                if mq.broker_name != last_broker_name:
                    return mq
        return queues[self.next_index() % len(queues)]

    def get_queue_id_by_broker(self, broker_name: str) -> int:
        """The broker's write queue count for this topic, -1 if the route does not list it."""
        if self.topic_route_data is not None:
            for qd in self.topic_route_data.queue_datas:
                if qd.broker_name == broker_name:
                    return qd.write_queue_nums
        return -1


def topic_route_data_to_publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """Write queues of writeable brokers that have a master, brokers in name order (stable for selectors).

    An ``orderTopicConf`` ("brokerName:queueNums;...") overrides the queue data and marks an order topic.
    """
    info = TopicPublishInfo(topic_route_data=route)
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            name, _, nums = item.partition(":")
            if name and nums.strip().isdigit():
                info.message_queue_list.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        info.order_topic = True
        return info
    masters = {bd.broker_name for bd in route.broker_datas if MASTER_ID in bd.broker_addrs}
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if PermName.is_writeable(qd.perm) and qd.broker_name in masters:
            info.message_queue_list.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return info


def topic_route_data_to_subscribe_info(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Read queues of readable brokers, sorted."""
    mqs = {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if PermName.is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    }
    return sorted(mqs, key=_mq_sort_key)
