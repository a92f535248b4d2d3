"""The proxy's side of the cluster (RocketMQ's ClusterServiceManager): routes, topic types, sends, transactions and
heartbeats, all as the name server's and brokers' own remoting requests through the client layer's API."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pocketmq.client.client_config import ClientConfig
from pocketmq.client.exceptions import MQClientException
from pocketmq.client.impl.mq_client_api import MQClientAPIImpl
from pocketmq.client.message import SendResult
from pocketmq.common.codec import CorruptRecordError, decode
from pocketmq.common.message import MessageExt
from pocketmq.remoting.admin_header import GetSubscriptionGroupConfigRequestHeader, GetTopicConfigRequestHeader
from pocketmq.remoting.body import TopicRouteData
from pocketmq.remoting.channel import Channel
from pocketmq.remoting.client_body import HeartbeatData, ProducerData, SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError, RemotingError
from pocketmq.remoting.header import SendMessageRequestHeader
from pocketmq.remoting.recall_header import RecallMessageRequestHeader
from pocketmq.remoting.transaction_header import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

from .config import ProxyConfig

log = logging.getLogger(__name__)

TOPIC_MESSAGE_TYPE_ATTRIBUTE = "message.type"
RECALL_TIMEOUT = 2.0
CheckListener = Callable[[str, CheckTransactionStateRequestHeader, MessageExt], None]


@dataclass(slots=True)
class _Cached:
    """A value read from the cluster (a route, a topic's type, a group), until ``expires``."""

    value: Any
    expires: float


class ClusterService:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.client_config = ClientConfig(namesrv_addr=config.namesrv_addr,
                                          mq_client_api_timeout=config.request_timeout, busy_poll=0.0,
                                          access_key=config.access_key, secret_key=config.secret_key)
        self.api = MQClientAPIImpl(self.client_config)
        # One client id for the proxy: brokers see it as the producer of every group its gRPC clients produce to.
        self.client_id = f"{socket.gethostname()}@{os.getpid()}@proxy@{id(self):x}"
        self._routes: dict[str, _Cached] = {}
        self._types: dict[str, _Cached] = {}
        self._groups: dict[str, _Cached] = {}
        self._unrouted: dict[str, float] = {}  # producer topics without a route -> loop time to ask again
        # The producer groups the last heartbeat registered, and every broker a heartbeat went to.
        self._registered_groups: set[str] = set()
        self._registered_addrs: set[str] = set()
        self.producer_groups: Callable[[], set[str]] = set
        self.check_listener: CheckListener | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._heartbeat_now = asyncio.Event()
        self.api.remoting_client.register_inline_processor(RequestCode.CHECK_TRANSACTION_STATE,
                                                          self._check_transaction_state)

    async def start(self) -> None:
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    async def shutdown(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            try:
                await self._heartbeat_task
            except asyncio.CancelledError:
                pass
        await self.api.shutdown()

    # --- routes and metadata -------------------------------------------------------------------------------

    async def route(self, topic: str) -> TopicRouteData:
        """The topic's route (GET_ROUTEINFO_BY_TOPIC), reused for ``route_cache_seconds``; MQClientException with
        TOPIC_NOT_EXIST for a topic the name server does not know."""
        now = asyncio.get_running_loop().time()
        cached = self._routes.get(topic)
        if cached is not None and cached.expires > now:
            return cached.value
        try:
            route = await self.api.get_topic_route_info_from_name_server(topic, self.config.request_timeout)
        except MQClientException as e:
            if e.response_code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            # RocketMQ's proxy words this itself (TopicRouteService), without the name server's FAQ pointer.
            raise MQClientException(f"No topic route info in name server for the topic: {topic}",
                                    response_code=ResponseCode.TOPIC_NOT_EXIST) from None
        if len(self._routes) > 10_000:
            self._routes.clear()
        self._routes[topic] = _Cached(route, now + self.config.route_cache_seconds)
        return route

    def forget_route(self, topic: str) -> None:
        self._routes.pop(topic, None)

    @staticmethod
    def master_addr(route: TopicRouteData, broker_name: str) -> str | None:
        for bd in route.broker_datas:
            if bd.broker_name == broker_name:
                return bd.broker_addrs.get(0)
        return None

    async def topic_message_type(self, topic: str, route: TopicRouteData) -> str | None:
        """The topic's ``message.type`` attribute (GET_TOPIC_CONFIG to a broker that has it); None for an untyped
        topic, or a broker without RocketMQ 5's topic attributes."""
        now = asyncio.get_running_loop().time()
        cached = self._types.get(topic)
        if cached is not None and cached.expires > now:
            return cached.value
        value: str | None = None
        for qd in route.queue_datas:
            addr = self.master_addr(route, qd.broker_name)
            if addr is None:
                continue
            request = RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic))
            response = await self.api.remoting_client.invoke(addr, request, self.config.request_timeout)
            if response.code != ResponseCode.SUCCESS:
                continue
            try:
                body = response.decode_body()
            except RemotingError:
                continue
            attributes = body.get("attributes") if isinstance(body, dict) else None
            if isinstance(attributes, dict) and isinstance(attributes.get(TOPIC_MESSAGE_TYPE_ATTRIBUTE), str):
                value = attributes[TOPIC_MESSAGE_TYPE_ATTRIBUTE]
            break
        if len(self._types) > 10_000:
            self._types.clear()
        self._types[topic] = _Cached(value, now + self.config.route_cache_seconds)
        return value

    def cached_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config as last read (None before the first read, or for a broker that has none)."""
        cached = self._groups.get(group)
        return None if cached is None else cached.value

    async def subscription_group_config(self, group: str, topic: str) -> SubscriptionGroupConfig | None:
        """The group's config (GET_SUBSCRIPTIONGROUP_CONFIG to a master broker of ``topic``): whether it consumes
        FIFO and how often a message is retried. None when no broker answers with one (a 4.x broker)."""
        now = asyncio.get_running_loop().time()
        cached = self._groups.get(group)
        if cached is not None and cached.expires > now:
            return cached.value
        value: SubscriptionGroupConfig | None = None
        last = None if cached is None else cached.value
        try:
            route = await self.route(topic)
        except Exception as e:
            log.debug("no route for %s: %s", topic, e)
            return last
        answered = False
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(0)
            if addr is None:
                continue
            request = RemotingCommand.request(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
                                              GetSubscriptionGroupConfigRequestHeader(group))
            try:
                response = await self.api.remoting_client.invoke(addr, request, self.config.request_timeout)
                answered = True
                if response.code != ResponseCode.SUCCESS:
                    continue
                value = response.decode_body(SubscriptionGroupConfig)
            except Exception as e:
                log.debug("group config of %s from %s: %s", group, addr, e)
                continue
            break
        if not answered:
            # No broker could be asked (a timeout, a broker restarting): what was known stays, and is asked
            # again next time, rather than "no config" (a FIFO group read as not FIFO) for a whole cache period.
            return last
        if len(self._groups) > 10_000:
            self._groups.clear()
        self._groups[group] = _Cached(value, now + self.config.route_cache_seconds)
        return value

    # --- producer ------------------------------------------------------------------------------------------

    async def send_message(self, addr: str, broker_name: str, header: SendMessageRequestHeader, body: bytes,
                           uniq_id: str) -> SendResult:
        return await self.api.send_message(addr, broker_name, header, body, self.config.request_timeout, uniq_id)

    async def end_transaction_oneway(self, addr: str, header: EndTransactionRequestHeader) -> None:
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header, oneway=True)
        await self.api.remoting_client.invoke_oneway(addr, request)

    async def recall_message(self, addr: str, header: RecallMessageRequestHeader) -> str:
        """RECALL_MESSAGE, with the 2 s RocketMQ's proxy gives it: the recalled message's id."""
        return await self.api.recall_message(addr, header, RECALL_TIMEOUT)

    def _check_transaction_state(self, channel: Channel, request: RemotingCommand) -> None:
        """CHECK_TRANSACTION_STATE from a broker (ProxyClientRemotingProcessor): handed to the gRPC side, which
        asks a live producer of the group on its Telemetry stream."""
        try:
            header = request.decode_header(CheckTransactionStateRequestHeader)
            msg = decode(request.body or b"", decompress=True)
        except (HeaderError, CorruptRecordError, ValueError, struct.error) as e:
            log.warning("bad CHECK_TRANSACTION_STATE from %s: %s", channel.remote_address, e)
            return None
        if self.check_listener is not None:
            self.check_listener(channel.remote_address, header, msg)
        return None

    # --- heartbeats ----------------------------------------------------------------------------------------

    def heartbeat_soon(self) -> None:
        self._heartbeat_now.set()

    async def _heartbeat_loop(self) -> None:
        while True:
            try:
                await self.send_heartbeats()
            except Exception:
                log.exception("proxy heartbeat failed")
            try:
                async with asyncio.timeout(self.config.transaction_heartbeat_period):
                    await self._heartbeat_now.wait()
            except TimeoutError:
                pass
            self._heartbeat_now.clear()

    async def send_heartbeats(self) -> None:
        """HEART_BEAT to the brokers of every topic a live gRPC producer publishes to, with the topics as producer
        groups (as RocketMQ's proxy registers them): the brokers' transaction checks then come to the proxy."""
        now = asyncio.get_running_loop().time()
        groups = sorted(t for t in self.producer_groups() if self._unrouted.get(t, 0.0) <= now)
        addrs: set[str] = set()
        routed = []
        for topic in groups:
            try:
                route = await self.route(topic)
            except Exception as e:
                log.debug("no route for %s: %s", topic, e)
                # (not asked again for a while, nor named to the brokers: a client may name any topic)
                if len(self._unrouted) > 10_000:
                    self._unrouted.clear()
                self._unrouted[topic] = now + self.config.route_cache_seconds
                continue
            routed.append(topic)
            addrs.update(a for bd in route.broker_datas if (a := bd.broker_addrs.get(0)) is not None)
        if routed:
            heartbeat = HeartbeatData(self.client_id, [ProducerData(g) for g in routed])
            for addr in sorted(addrs):
                try:
                    await self.api.send_heartbeat(addr, heartbeat, self.config.request_timeout)
                except Exception as e:
                    log.warning("heartbeat to %s failed: %s", addr, e)
        await self._unregister_gone(set(routed), addrs)

    async def _unregister_gone(self, groups: set[str], addrs: set[str]) -> None:
        """UNREGISTER_CLIENT for the producer groups no longer heartbeated (their last producer left). Left to
        expire instead, a group makes its broker close the channel it was registered on, which is this endpoint's
        one connection to that broker, pops and sends of every other client included."""
        gone = self._registered_groups - groups
        for addr in sorted(self._registered_addrs):
            for group in sorted(gone):
                try:
                    await self.api.unregister_client(addr, self.client_id, group, None, self.config.request_timeout)
                except Exception as e:
                    log.info("unregister of producer group %s at %s failed: %s", group, addr, e)
        self._registered_groups = groups
        self._registered_addrs |= addrs  # (every broker heartbeated: a few, and unregistering twice is harmless)
