"""What MQClientInstance asks of a consumer (RocketMQ's MQConsumerInner): the part the push and lite pull consumers
answer alike from their RebalanceImpl's tables, and the part the consumers without one answer alike from their own
subscriptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pocketmq.remoting.client_body import ConsumerData, MessageQueue, SubscriptionData

if TYPE_CHECKING:
    from .rebalance_impl import RebalanceImpl


class RebalancedConsumerInner:
    """Mixed into a consumer whose ``_rebalance_impl`` is its RebalanceImpl, or None before it starts."""

    _rebalance_impl: RebalanceImpl | None

    def subscription_topics(self) -> set[str]:
        r = self._rebalance_impl
        return set(r.subscription_inner) if r is not None else set()

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        r = self._rebalance_impl
        return r is not None and topic in r.subscription_inner and not r.topic_subscribe_info_table.get(topic)

    def update_topic_subscribe_info(self, topic: str, mqs: list[MessageQueue]) -> None:
        r = self._rebalance_impl
        if r is not None and topic in r.subscription_inner:
            r.topic_subscribe_info_table[topic] = mqs


class SubscribedConsumerInner:
    """Mixed into a consumer that keeps its subscriptions itself and owns no RebalanceImpl (the pull consumer, the
    simple consumer, and the push consumer that pops): ``subscriptions`` (topic -> SubscriptionData), the queues
    the client instance found for them in ``topic_subscribe_info_table``, and the heartbeat's ConsumerData."""

    group: str
    subscriptions: dict[str, SubscriptionData]
    topic_subscribe_info_table: dict[str, list[MessageQueue]]
    consume_type: ClassVar[str] = "CONSUME_ACTIVELY"  # the application asks for messages; a push consumer: PASSIVELY

    def consume_from_where(self) -> str:
        return "CONSUME_FROM_LAST_OFFSET"

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=self.consume_type,
            message_model="CLUSTERING",
            consume_from_where=self.consume_from_where(),
            subscription_data_set=list(self.subscriptions.values()),
        )

    def subscription_topics(self) -> set[str]:
        return set(self.subscriptions)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        return topic in self.subscriptions and not self.topic_subscribe_info_table.get(topic)

    def update_topic_subscribe_info(self, topic: str, mqs: list[MessageQueue]) -> None:
        if topic in self.subscriptions:
            self.topic_subscribe_info_table[topic] = mqs
