"""MQClientInstance: what the producers and consumers of one client id share (MQClientManager hands it out).

An instance owns the connections (one pooled RemotingClient), the route cache fed by the name servers and the
broker address table (mq_client_routes.py), and the timers: route refresh, heartbeats to every broker, consumer
offset persistence.
For push consumers it also runs the PullMessageService (one queue of pull requests for all of them) and the
RebalanceService, which a broker's NOTIFY_CONSUMER_IDS_CHANGED wakes at once.
Producers and consumers register by group; the instance stops when the last one unregisters.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Protocol

from pocketmq.remoting.body import TopicRouteData
from pocketmq.remoting.client_body import (
    ConsumerData,
    HeartbeatData,
    MessageQueue,
    ProducerData,
    SubscriptionData,
)
from pocketmq.remoting.codes import MASTER_ID, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError, RemotingError
from pocketmq.remoting.header import NotifyConsumerIdsChangedRequestHeader
from pocketmq.remoting.tasks import TaskTracker
from pocketmq.remoting.transport import Channel

from ..client_config import ClientConfig
from ..exceptions import MQBrokerException, MQClientException
from ..producer.request_future_holder import RequestFutureHolder
from .client_remoting_processor import ClientAdminProcessor
from .consumer.pull_message_service import PullMessageService
from .consumer.pull_request import PullRequest
from .consumer.rebalance_service import RebalanceService
from .mq_client_api import MQClientAPIImpl
from .mq_client_routes import MQClientRoutes
from .producer.topic_publish_info import (
    TopicPublishInfo,
)

log = logging.getLogger(__name__)



class ProducerInner(Protocol):
    def publish_topics(self) -> list[str]: ...

    def is_publish_topic_need_update(self, topic: str) -> bool: ...

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...


class ConsumerInner(Protocol):
    def consumer_data(self) -> ConsumerData: ...

    def subscription_topics(self) -> set[str]: ...

    def is_subscribe_topic_need_update(self, topic: str) -> bool: ...

    def update_topic_subscribe_info(self, topic: str, mqs: list[MessageQueue]) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    async def do_rebalance(self) -> None: ...


class MQClientInstance(MQClientRoutes):
    def __init__(self, config: ClientConfig, client_id: str, on_shutdown: Callable[[], None] | None = None) -> None:
        self.config = config
        self.client_id = client_id
        self.mq_client_api = MQClientAPIImpl(config)
        self.producer_table: dict[str, ProducerInner] = {}
        self.consumer_table: dict[str, ConsumerInner] = {}
        self.topic_route_table: dict[str, TopicRouteData] = {}
        self.broker_addr_table: dict[str, dict[int, str]] = {}  # brokerName -> brokerId -> address
        # brokerName -> how many connections to its master were opened: a new one may be to a broker that
        # restarted and lost what it had not flushed (RemoteBrokerOffsetStore sends its offsets again then).
        self.master_connections: dict[str, int] = {}
        self._route_lock = asyncio.Lock()
        # Default topic -> (monotonic time fetched, its route): see _default_topic_route.
        self._default_topic_routes: dict[str, tuple[float, TopicRouteData]] = {}
        self._tasks = TaskTracker(log)
        self._on_shutdown = on_shutdown
        self.started = False
        self.stopped = False
        self.pull_message_service = PullMessageService(self._dispatch_pull_request, f"{client_id}-pull")
        self.rebalance_service = RebalanceService(
            self.do_rebalance, config.rebalance_interval, f"{client_id}-rebalance"
        )
        # ClientRemotingProcessor: the one broker-to-client request a consumer acts on.
        self.mq_client_api.remoting_client.register_processor(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._notify_consumer_ids_changed
        )
        self.mq_client_api.remoting_client.on_connected = self._on_connected
        ClientAdminProcessor(self).register()
        self.request_future_holder = RequestFutureHolder()  # requests of this client waiting for replies
        self.request_future_holder.register(self.mq_client_api.remoting_client)

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.stopped:
            raise MQClientException(f"the client instance {self.client_id} was shut down; create a new one")
        if self.started:
            return
        self.started = True
        cfg = self.config
        self._tasks = TaskTracker(log)
        # (first run after min(first, period): RocketMQ's initial delays, shortened when a test sets short periods)
        for first, period, job in (
            (0.01, cfg.poll_name_server_interval, self.update_topic_route_info_from_name_server_all),
            (1.0, cfg.heartbeat_broker_interval, self._clean_and_heartbeat),
            (10.0, cfg.persist_consumer_offset_interval, self.persist_all_consumer_offset),
        ):
            self._tasks.periodic(f"{self.client_id}-{job.__name__}", period, job, min(first, period))
        self.pull_message_service.start()
        self.rebalance_service.start()
        log.info("client instance %s started", self.client_id)

    async def shutdown(self) -> None:
        """Stop once no producer or consumer uses the instance any more (else do nothing)."""
        if self.producer_table or self.consumer_table or self.stopped:
            return
        self.stopped = True
        await self._tasks.close()
        await self.pull_message_service.shutdown()
        await self.rebalance_service.shutdown()
        await self.mq_client_api.shutdown()
        if self._on_shutdown is not None:
            self._on_shutdown()
        log.info("client instance %s stopped", self.client_id)

    # --- registration --------------------------------------------------------------------------------------

    def register_producer(self, group: str, producer: ProducerInner) -> None:
        if group in self.producer_table:
            raise MQClientException(
                f"The producer group[{group}] has been created before, specify another name please."
            )
        self.producer_table[group] = producer

    def register_consumer(self, group: str, consumer: ConsumerInner) -> None:
        if group in self.consumer_table:
            raise MQClientException(
                f"The consumer group[{group}] has been created before, specify another name please."
            )
        self.consumer_table[group] = consumer

    async def unregister_producer(self, group: str) -> None:
        if self.producer_table.pop(group, None) is not None:
            await self._unregister_client(group, None)

    async def unregister_consumer(self, group: str) -> None:
        if self.consumer_table.pop(group, None) is not None:
            await self._unregister_client(None, group)

    async def _unregister_client(self, producer_group: str | None, consumer_group: str | None) -> None:
        """UNREGISTER_CLIENT to every known broker, so they forget this client at once, not after 120 s."""
        cfg = self.config
        timeout = cfg.mq_client_api_timeout if cfg.unregister_timeout is None else cfg.unregister_timeout

        async def one(addr: str) -> None:
            try:
                await self.mq_client_api.unregister_client(
                    addr, self.client_id, producer_group, consumer_group, timeout
                )
            except (RemotingError, MQBrokerException) as e:
                log.info("unregister %s from %s failed: %s", producer_group or consumer_group, addr, e)

        addrs = [addr for addrs in self.broker_addr_table.values() for addr in addrs.values()]
        await asyncio.gather(*(one(a) for a in addrs))

    # --- brokers' views of a group -------------------------------------------------------------------------

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        """The client ids of ``group``, asked of one broker serving ``topic`` (GET_CONSUMER_LIST_BY_GROUP): a
        random one, as RocketMQ's findBrokerAddrByTopic picks, then the others while one fails (always the
        first, a broker that hangs until the name server drops it stopped the group's rebalancing)."""
        route = self.topic_route_table.get(topic)
        if route is None:
            route = await self.fetch_and_apply_route(topic)
        addrs = [a for a in (bd.select_broker_addr() for bd in route.broker_datas) if a is not None]
        if not addrs:
            raise MQClientException(f"no broker serves {topic}")
        start = random.randrange(len(addrs))
        order = addrs[start:] + addrs[:start]
        timeout = self.config.mq_client_api_timeout
        for addr in order[:-1]:
            try:
                return await self.mq_client_api.get_consumer_id_list_by_group(addr, group, timeout)
            except RemotingError as e:
                log.info("consumer list of %s from %s failed (%s); asking another broker", group, addr, e)
        return await self.mq_client_api.get_consumer_id_list_by_group(order[-1], group, timeout)

    async def check_client_in_broker(self, group: str, subscriptions: list[SubscriptionData]) -> None:
        """Ask every master whether it can serve each filtering subscription (not tags, which every broker
        can); MQClientException naming the broker and the setting when one cannot (checkClientInBroker)."""
        filtering = [s for s in subscriptions if (s.expression_type or "TAG") != "TAG"]
        if not filtering:
            return
        masters = {addrs[MASTER_ID] for addrs in self.broker_addr_table.values() if MASTER_ID in addrs}
        for addr in sorted(masters):
            for sub in filtering:
                try:
                    await self.mq_client_api.check_client_in_broker(
                        addr, group, self.client_id, sub, self.config.mq_client_api_timeout
                    )
                except MQBrokerException as e:
                    hint = ""
                    if e.code == ResponseCode.SYSTEM_ERROR:
                        hint = f"; to use {sub.expression_type}, set enablePropertyFilter=true in the broker's config"
                    raise MQClientException(
                        f"the broker {addr} refused the {sub.expression_type} subscription {sub.sub_string!r} of "
                        f"{group} to {sub.topic}: {e.remark or e.code}{hint}",
                        response_code=e.code,
                    ) from e
                except RemotingError as e:
                    log.warning("checking the subscriptions of %s with %s failed: %s", group, addr, e)

    # --- heartbeats ----------------------------------------------------------------------------------------

    def prepare_heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(g) for g in self.producer_table],
            consumer_data_set=[c.consumer_data() for c in self.consumer_table.values()],
        )

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT with every group of this instance to every master (and to slaves if it consumes)."""
        if not self.producer_table and not self.consumer_table:
            return
        heartbeat = self.prepare_heartbeat_data()
        timeout = self.config.mq_client_api_timeout
        targets = [
            addr
            for addrs in self.broker_addr_table.values()
            for bid, addr in addrs.items()
            if bid == MASTER_ID or heartbeat.consumer_data_set
        ]

        async def one(addr: str) -> None:
            try:
                await self.mq_client_api.send_heartbeat(addr, heartbeat, timeout)
            except (RemotingError, MQBrokerException) as e:
                log.info("heartbeat to %s failed: %s", addr, e)

        await asyncio.gather(*(one(a) for a in targets))

    def clean_offline_broker(self) -> None:
        """Forget broker addresses no cached route mentions any more."""
        live = {
            addr for route in self.topic_route_table.values() for bd in route.broker_datas
            for addr in bd.broker_addrs.values()
        }
        for name, addrs in list(self.broker_addr_table.items()):
            for bid, addr in list(addrs.items()):
                if addr not in live:
                    del addrs[bid]
                    log.info("broker %s (%s, id %d) is offline", addr, name, bid)
            if not addrs:
                del self.broker_addr_table[name]

    async def _on_connected(self, addr: str) -> None:
        """A new connection to a broker: heartbeat on it before anything else goes out.

        A broker that restarted knows no client until it hears a heartbeat; RocketMQ's client waits for the next
        periodic one (30 s), and its pulls meanwhile are answered SUBSCRIPTION_NOT_EXIST ("the consumer's group
        info not exist"). Sent on every new connection, the heartbeat reaches the broker ahead of the first
        request that made the connection. Name servers are left alone.
        """
        for name, addrs in self.broker_addr_table.items():
            if addrs.get(MASTER_ID) == addr:
                self.master_connections[name] = self.master_connections.get(name, 0) + 1
        if self.stopped or not (self.producer_table or self.consumer_table):
            return
        for addrs in self.broker_addr_table.values():
            for bid, broker_addr in addrs.items():
                if broker_addr == addr:
                    if bid != MASTER_ID and not self.consumer_table:
                        return  # producers heartbeat masters only
                    heartbeat = self.prepare_heartbeat_data()
                    timeout = min(self.config.mq_client_api_timeout, self.config.connect_timeout)
                    try:
                        await self.mq_client_api.send_heartbeat(addr, heartbeat, timeout)
                    except (RemotingError, MQBrokerException) as e:
                        log.info("heartbeat to %s on connecting failed: %s", addr, e)
                    return

    async def _clean_and_heartbeat(self) -> None:
        self.clean_offline_broker()
        await self.send_heartbeat_to_all_brokers()

    async def persist_all_consumer_offset(self) -> None:
        for c in list(self.consumer_table.values()):
            await c.persist_consumer_offset()

    # --- push consumers ------------------------------------------------------------------------------------

    async def do_rebalance(self) -> None:
        for group, c in list(self.consumer_table.items()):
            try:
                await c.do_rebalance()
            except Exception:
                log.exception("rebalance of group %s failed", group)

    def rebalance_immediately(self) -> None:
        self.rebalance_service.wakeup()

    def _dispatch_pull_request(self, request: PullRequest) -> None:
        consumer = self.consumer_table.get(request.consumer_group)
        pull = getattr(consumer, "pull_message", None)
        if pull is not None:
            pull(request)
        else:
            log.warning("no push consumer of group %s for %s", request.consumer_group, request.message_queue)

    async def _notify_consumer_ids_changed(self, channel: Channel, request: RemotingCommand) -> None:
        try:
            group = request.decode_header(NotifyConsumerIdsChangedRequestHeader).consumer_group
        except HeaderError:
            group = "?"  # rebalancing every group is right anyway
        log.info("receive broker's notification[%s], the consumer group: %s changed, rebalance immediately",
                 channel.remote_address, group)
        self.rebalance_immediately()
        return None
