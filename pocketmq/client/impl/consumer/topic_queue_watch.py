"""The lite pull consumer's watch over its topics' queues (DefaultLitePullConsumerImpl's
topicMessageQueueChangeListenerMap and its periodic fetchTopicMessageQueuesAndCompare): a registered listener hears
of a topic's new queue set, e.g. to ``assign`` the new queues."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingError

from ...consumer.lite_pull_consumer_config import LitePullConsumerConfig
from ...exceptions import MQClientException

log = logging.getLogger("pocketmq.client.consumer.lite_pull_consumer")  # (the consumer's log, as before the split)

TopicMessageQueueChangeListener = Callable[[str, set[MessageQueue]], object]


class TopicQueueWatch:
    """Mixed into LitePullConsumer (its state declared here for the type checker)."""

    group: str
    running: bool
    config: LitePullConsumerConfig
    _topic_listeners: dict[str, TopicMessageQueueChangeListener]
    _queues_for_topic: dict[str, set[MessageQueue]]

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        raise NotImplementedError

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        raise NotImplementedError

    def register_topic_message_queue_change_listener(
        self, topic: str, listener: TopicMessageQueueChangeListener
    ) -> None:
        """``listener(topic, queues)`` whenever the topic's queues change (checked every
        ``topic_metadata_check_interval``), e.g. to ``assign`` the new ones."""
        self._topic_listeners[topic] = listener
        if self.running:
            self._spawn(self._remember_queues(topic))

    async def _remember_queues(self, topic: str) -> None:
        self._queues_for_topic[topic] = set(await self.fetch_message_queues(topic))

    async def _monitor_topic_queues(self) -> None:
        while self.running:
            await asyncio.sleep(self.config.topic_metadata_check_interval)
            for topic, listener in list(self._topic_listeners.items()):
                try:
                    now = set(await self.fetch_message_queues(topic))
                except (RemotingError, MQClientException) as e:
                    log.warning("%s: queues of %s not checked: %s", self.group, topic, e)
                    continue
                if now != self._queues_for_topic.get(topic):
                    self._queues_for_topic[topic] = now
                    try:
                        answer = listener(topic, now)
                        if inspect.isawaitable(answer):  # (an async def listener: called, it has not run yet)
                            await answer
                    except Exception:
                        log.exception("queue-change listener of %s failed", topic)
