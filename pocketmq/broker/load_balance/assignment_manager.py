"""AssignmentManager (RocketMQ 5's TopicRouteInfoManager part of it): a topic's readable queues across the cluster,
read from the name server and kept for ``load_balance_poll_name_server_interval``, for QUERY_ASSIGNMENT.

Without a name server (or when none answers) the broker answers from its own topic table: the queues it holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pocketmq.remoting.body import TopicConfig, TopicRouteData
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import PermName
from pocketmq.remoting.errors import RemotingError

from ..broker_outer_api import BrokerOuterAPI

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Cached:
    """A topic's queues as last read, until ``expires``."""

    queues: set[MessageQueue] | None
    expires: float


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """The read queues of the brokers that let the topic be read."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if PermName.is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    }


class AssignmentManager:
    def __init__(
        self,
        outer_api: BrokerOuterAPI,
        namesrv_addrs: Callable[[], list[str]],
        broker_name: str,
        local_topic: Callable[[str], TopicConfig | None],
        interval: float,
    ) -> None:
        self.outer_api = outer_api
        self.namesrv_addrs = namesrv_addrs
        self.broker_name = broker_name
        self.local_topic = local_topic
        self.interval = interval
        self._cache: dict[str, _Cached] = {}

    async def get_topic_subscribe_info(self, topic: str) -> set[MessageQueue] | None:
        """The topic's queues; None when no one knows the topic."""
        cached = self._cache.get(topic)
        now = time.monotonic()
        if cached is not None and cached.expires > now:
            return cached.queues
        queues = await self._from_name_servers(topic)
        if queues is None:
            queues = self._from_local(topic)
        if not queues:
            # (asked again next time, as RocketMQ 5's TopicRouteInfoManager asks for a topic it holds no queues
            # of: a topic created since is found at once)
            return queues
        if len(self._cache) > 10_000:  # topics come from clients: keep the table bounded
            self._cache.clear()
        self._cache[topic] = _Cached(queues, now + self.interval)
        return queues

    async def _from_name_servers(self, topic: str) -> set[MessageQueue] | None:
        for addr in self.namesrv_addrs():
            try:
                route = await self.outer_api.get_topic_route_info_from_name_server(addr, topic)
            except (RemotingError, OSError, ValueError) as e:
                log.info("route of %s from name server %s: %s", topic, addr, e)
                continue
            return None if route is None else subscribe_queues(topic, route)
        return None

    def _from_local(self, topic: str) -> set[MessageQueue] | None:
        tc = self.local_topic(topic)
        if tc is None or not PermName.is_readable(tc.perm):
            return None
        return {MessageQueue(topic, self.broker_name, i) for i in range(tc.read_queue_nums)}
