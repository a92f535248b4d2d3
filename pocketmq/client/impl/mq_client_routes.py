"""MQClientInstance's routes: the name servers' topic routes it caches (updateTopicRouteInfoFromNameServer), the
publish and subscribe queue lists it derives from them for its producers and consumers, and the broker addresses
they name (findBrokerAddressInPublish, findBrokerAddressInSubscribe)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pocketmq.remoting.body import BrokerData, QueueData, TopicRouteData
from pocketmq.remoting.codes import MASTER_ID, ResponseCode
from pocketmq.remoting.errors import RemotingError

from ..client_config import ClientConfig
from ..exceptions import MQClientException, NameServerAddressError, NameServerProtocolError
from .mq_client_api import MQClientAPIImpl
from .producer.topic_publish_info import topic_route_data_to_publish_info, topic_route_data_to_subscribe_info

if TYPE_CHECKING:
    from .mq_client_instance import ConsumerInner, ProducerInner

# (the instance's logger, as before the routes had a module of their own: log settings name it)
log = logging.getLogger("pocketmq.client.impl.mq_client_instance")

# How long the default topic's (TBW102's) route is reused for new topics (_default_topic_route).
DEFAULT_TOPIC_ROUTE_REUSE_S = 1.0


@dataclass(frozen=True, slots=True)
class FindBrokerResult:
    """RocketMQ's FindBrokerResult: the address of the broker found, and whether it is a slave."""

    broker_addr: str
    slave: bool


def _normalized(route: TopicRouteData) -> tuple[list[QueueData], list[BrokerData], str | None]:
    """The parts of a route whose change matters, in a canonical order."""
    return (
        sorted(route.queue_datas, key=lambda q: q.broker_name),
        sorted(route.broker_datas, key=lambda b: b.broker_name),
        route.order_topic_conf,
    )


class MQClientRoutes:
    """The route cache of MQClientInstance (a mixin: the state is the instance's)."""

    config: ClientConfig
    mq_client_api: MQClientAPIImpl
    producer_table: dict[str, ProducerInner]
    consumer_table: dict[str, ConsumerInner]
    topic_route_table: dict[str, TopicRouteData]
    broker_addr_table: dict[str, dict[int, str]]
    _route_lock: asyncio.Lock
    _default_topic_routes: dict[str, tuple[float, TopicRouteData]]

    if TYPE_CHECKING:
        def rebalance_immediately(self) -> None: ...

    async def update_topic_route_info_from_name_server(
        self, topic: str, default_topic: str | None = None, default_topic_queue_nums: int = 4,
        *, unreachable_raises: bool = False,
    ) -> bool:
        """Refresh ``topic``'s route; False (logged) when the name servers have none or cannot be reached.

        With ``default_topic`` (TBW102) the default topic's route stands in for ``topic``, its queue counts
        capped at ``default_topic_queue_nums``: sending there makes the broker create the topic.
        ``unreachable_raises`` is for a user's call: when no name server can be connected to, the
        NameServerAddressError that names the address(es) is raised instead of logged, and so is the
        NameServerProtocolError of one that does not speak the client's protocol.
        """
        try:
            await self.fetch_and_apply_route(topic, default_topic, default_topic_queue_nums)
            return True
        except (NameServerAddressError, NameServerProtocolError) as e:
            if unreachable_raises:
                raise
            log.warning("route of %s not updated: %s", topic, e)
        except MQClientException as e:
            level = logging.DEBUG if e.response_code == ResponseCode.TOPIC_NOT_EXIST else logging.WARNING
            log.log(level, "route of %s not updated: %s", topic, e)
        except RemotingError as e:
            log.warning("route of %s not updated: %s", topic, e)
        return False

    async def fetch_and_apply_route(
        self, topic: str, default_topic: str | None = None, default_topic_queue_nums: int = 4
    ) -> TopicRouteData:
        """Like update_topic_route_info_from_name_server, but errors propagate."""
        timeout = self.config.mq_client_api_timeout
        async with self._route_lock:
            api = self.mq_client_api
            if default_topic is not None:
                default = await self._default_topic_route(default_topic, timeout)
                route = replace(default, queue_datas=[
                    replace(qd, read_queue_nums=min(default_topic_queue_nums, qd.read_queue_nums),
                            write_queue_nums=min(default_topic_queue_nums, qd.read_queue_nums))
                    for qd in default.queue_datas])
            else:
                route = await api.get_topic_route_info_from_name_server(topic, timeout)
            self.apply_topic_route(topic, route)
            return route

    async def _default_topic_route(self, default_topic: str, timeout: float) -> TopicRouteData:
        """The default topic's route, asked of the name server at most once a second (callers hold _route_lock).

        A producer's first send to a topic the name server does not know asks for the topic's route, then
        for the default topic's, whose brokers create the topic. Sending to many new topics in a burst asked
        for the same default route once per topic: half the name server's requests, and a round trip each.
        """
        cached = self._default_topic_routes.get(default_topic)
        if cached is not None and time.monotonic() - cached[0] < DEFAULT_TOPIC_ROUTE_REUSE_S:
            return cached[1]
        route = await self.mq_client_api.get_topic_route_info_from_name_server(default_topic, timeout)
        self._default_topic_routes[default_topic] = (time.monotonic(), route)
        return route

    def apply_topic_route(self, topic: str, route: TopicRouteData) -> bool:
        """Store a fetched route and hand the derived queue lists to producers and consumers if it changed."""
        old = self.topic_route_table.get(topic)
        changed = old is None or _normalized(old) != _normalized(route)
        if not changed:
            changed = any(p.is_publish_topic_need_update(topic) for p in self.producer_table.values()) or any(
                c.is_subscribe_topic_need_update(topic) for c in self.consumer_table.values()
            )
        if not changed:
            return False
        route = TopicRouteData.from_dict(route.to_dict())  # callers keep theirs; ours must not change
        for bd in route.broker_datas:
            self.broker_addr_table[bd.broker_name] = dict(bd.broker_addrs)
        if self.producer_table:
            publish = topic_route_data_to_publish_info(topic, route)
            publish.have_topic_router_info = True
            for p in self.producer_table.values():
                p.update_topic_publish_info(topic, publish)
        if self.consumer_table:
            subscribe = topic_route_data_to_subscribe_info(topic, route)
            for c in self.consumer_table.values():
                c.update_topic_subscribe_info(topic, subscribe)
        self.topic_route_table[topic] = route
        log.info("route of %s changed: %s", topic, route)
        if any(topic in c.subscription_topics() for c in self.consumer_table.values()):
            # Queues added or gone matter to the split now, not at the next periodic rebalance (20 s).
            self.rebalance_immediately()
        return True

    async def update_topic_route_info_from_name_server_all(self) -> None:
        topics: set[str] = set()
        for p in self.producer_table.values():
            topics.update(p.publish_topics())
        for c in self.consumer_table.values():
            topics.update(c.subscription_topics())
        for topic in sorted(topics):
            await self.update_topic_route_info_from_name_server(topic)

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        """The master's address: only a master takes writes."""
        return self.broker_addr_table.get(broker_name, {}).get(MASTER_ID)

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this_broker: bool = False
    ) -> FindBrokerResult | None:
        addrs = self.broker_addr_table.get(broker_name)
        if not addrs:
            return None
        addr = addrs.get(broker_id)
        slave = broker_id != MASTER_ID
        if addr is None and slave:
            addr = addrs.get(broker_id + 1)
        if addr is None and not only_this_broker:
            bid = MASTER_ID if MASTER_ID in addrs else min(addrs)
            addr, slave = addrs[bid], bid != MASTER_ID
        return FindBrokerResult(addr, slave) if addr is not None else None

    async def find_master_address(self, broker_name: str, topic: str) -> str | None:
        """The master of ``broker_name`` from the subscribe table, refreshing ``topic``'s route once when the
        broker is not known yet (MQClientInstance.findBrokerAddressInSubscribe + updateTopicRouteInfo...)."""
        found = self.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        if found is None:
            await self.update_topic_route_info_from_name_server(topic)
            found = self.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        return found.broker_addr if found is not None else None
