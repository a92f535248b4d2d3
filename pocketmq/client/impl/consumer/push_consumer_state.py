"""What the push consumer's mixins (push_consumer_admin.py, push_consumer_retry.py, push_consumer_pull.py) read
of DefaultMQPushConsumerImpl: declarations only, for the type checker; the consumer itself holds the state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...consumer.push_consumer_config import PushConsumerConfig

if TYPE_CHECKING:
    from ..mq_client_instance import MQClientInstance
    from .rebalance_push_impl import RebalancePushImpl


class PushConsumerState:
    group: str
    config: PushConsumerConfig

    if TYPE_CHECKING:
        @property
        def instance(self) -> MQClientInstance: ...

        @property
        def rebalance_impl(self) -> RebalancePushImpl: ...
