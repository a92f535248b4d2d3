"""What MQClientInstance asks of the consumers that own a rebalance (RocketMQ's MQConsumerInner, the part the
push and lite pull consumers answer alike from their RebalanceImpl's tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.remoting.client_body import MessageQueue

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
