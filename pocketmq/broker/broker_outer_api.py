"""BrokerOuterAPI: the broker's calls to the name servers (REGISTER_BROKER, UNREGISTER_BROKER).

A registration carries the whole topic table, or (pocketmq's delta registration) only the topics changed since
a data version the name server holds; see broker/topic_registration.py for which one is sent when.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pocketmq.remoting.acl import AclClientRPCHook, SessionCredentials
from pocketmq.remoting.admin_body import KVTable
from pocketmq.remoting.body import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicRouteData,
    body_crc32,
)
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import (
    GetRouteInfoRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from pocketmq.remoting.wire_protocol import WireProtocol

if TYPE_CHECKING:
    from .config import BrokerConfig

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RegisterResult:
    """How one name server took a registration."""

    namesrv_addr: str
    ok: bool
    error: str | None = None
    delta_accepted: bool = False  # a delta registration was applied (False for a full one)
    # The name server's ORDER_TOPIC_CONFIG KV namespace, topic -> "brokerName:queueNums;...", which RocketMQ's name
    # servers answer a registration with (None when the namespace does not exist).
    order_topic_config: dict[str, str] | None = None


@dataclass(slots=True)
class BrokerIdentity:
    """Who a broker registers as with the name servers."""

    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_server_addr: str = ""  # no HA service: nothing to advertise


class BrokerOuterAPI:
    """``wire_protocol`` NATIVE speaks to the name servers as a RocketMQ broker does (an Apache RocketMQ name
    server reads nothing else): native frames, RegisterBrokerBody in RocketMQ's JSON or compressed form, and no
    delta registrations. ``heartbeat_timeout`` (seconds) goes with each registration as RocketMQ 5.x's
    heartbeatTimeoutMillis."""

    def __init__(
        self,
        timeout: float = 6.0,
        compressed: bool = False,
        wire_protocol: WireProtocol = WireProtocol.MSGPACK,
        heartbeat_timeout: float | None = None,
    ) -> None:
        self.timeout = timeout
        self.compressed = compressed
        self.heartbeat_timeout = heartbeat_timeout
        self.client = RemotingClient(connect_timeout=min(3.0, timeout), wire_protocol=wire_protocol)

    @classmethod
    def for_broker(cls, config: BrokerConfig) -> BrokerOuterAPI:
        """The broker's name-server client, signing its requests when the broker has an account (the name servers'
        ACL)."""
        api = cls(config.register_broker_timeout, config.compressed_register, config.namesrv_wire_protocol,
                  config.broker_not_active_timeout)
        if config.access_key is not None and config.secret_key is not None:
            api.client.rpc_hook = AclClientRPCHook(SessionCredentials(config.access_key, config.secret_key))
        return api

    @property
    def speaks_deltas(self) -> bool:
        """Delta registrations are pocketmq's: a RocketMQ name server would merge the delta as a full table."""
        return self.client.wire_protocol is WireProtocol.MSGPACK

    async def register_broker_all(
        self, namesrv_addrs: list[str], identity: BrokerIdentity, wrapper: TopicConfigSerializeWrapper
    ) -> list[RegisterResult]:
        """Register the whole table with every name server at once; a failure is logged, never raised."""
        body = await self.encode_body(wrapper)
        return list(await asyncio.gather(*(self.register(addr, identity, body) for addr in namesrv_addrs)))

    async def encode_body(
        self, wrapper: TopicConfigSerializeWrapper, deleted_topics: list[str] | None = None
    ) -> bytes:
        """The request body; a big table (a snapshot: nothing else holds it) is encoded on a worker thread."""
        body = RegisterBrokerBody(wrapper, deleted_topics=deleted_topics or [])
        dialect = self.client.body_dialect
        if len(wrapper.topic_config_table) > 256:
            return await asyncio.to_thread(body.encode, self.compressed, dialect)
        return body.encode(self.compressed, dialect)

    async def register(
        self, addr: str, identity: BrokerIdentity, body: bytes, delta_base: DataVersion | None = None
    ) -> RegisterResult:
        """One REGISTER_BROKER; with ``delta_base``, a delta registration from that version."""
        header = RegisterBrokerRequestHeader(
            broker_name=identity.broker_name,
            broker_addr=identity.broker_addr,
            cluster_name=identity.cluster_name,
            ha_server_addr=identity.ha_server_addr,
            broker_id=identity.broker_id,
            compressed=self.compressed,
            body_crc32=body_crc32(body),
            base_version_timestamp=delta_base.timestamp if delta_base is not None else None,
            base_version_counter=delta_base.counter if delta_base is not None else None,
            heartbeat_timeout_millis=round(self.heartbeat_timeout * 1000) if self.heartbeat_timeout else None,
        )
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)
        try:
            resp = await self.client.invoke(addr, request, self.timeout)
        except (RemotingError, OSError, ValueError) as e:
            log.warning("register broker to name server %s failed: %s", addr, e)
            return RegisterResult(addr, False, str(e))
        if resp.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused the registration: %s %s", addr, resp.code, resp.remark)
            return RegisterResult(addr, False, f"code {resp.code}: {resp.remark}")
        accepted = False
        if delta_base is not None:
            try:
                accepted = bool(resp.decode_header(RegisterBrokerResponseHeader).delta_accepted)
            except ValueError:
                accepted = False  # a name server that does not speak deltas: it gets the whole table
        log.debug("registered to name server %s%s", addr, " (delta)" if accepted else "")
        return RegisterResult(addr, True, delta_accepted=accepted, order_topic_config=_order_topic_config(addr, resp))

    async def unregister_broker_all(self, namesrv_addrs: list[str], identity: BrokerIdentity) -> None:
        header = UnRegisterBrokerRequestHeader(
            broker_name=identity.broker_name,
            broker_addr=identity.broker_addr,
            cluster_name=identity.cluster_name,
            broker_id=identity.broker_id,
        )
        await asyncio.gather(*(self._unregister(addr, header) for addr in namesrv_addrs))

    async def _unregister(self, addr: str, header: UnRegisterBrokerRequestHeader) -> None:
        try:
            resp = await self.client.invoke(
                addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header), self.timeout
            )
            if resp.code != ResponseCode.SUCCESS:
                log.warning("name server %s refused the unregistration: %s %s", addr, resp.code, resp.remark)
        except (RemotingError, OSError, ValueError) as e:
            log.warning("unregister broker from name server %s failed: %s", addr, e)

    async def get_topic_route_info_from_name_server(self, addr: str, topic: str) -> TopicRouteData | None:
        """The topic's route as name server ``addr`` has it; None when it knows no such topic."""
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
        resp = await self.client.invoke(addr, request, self.timeout)
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if resp.code != ResponseCode.SUCCESS or resp.body is None:
            raise RemotingError(f"route of {topic} from {addr}: code {resp.code} {resp.remark}")
        route: TopicRouteData = resp.decode_body(TopicRouteData)
        return route

    async def close(self) -> None:
        await self.client.close()


def _order_topic_config(addr: str, resp: RemotingCommand) -> dict[str, str] | None:
    if not resp.body:
        return None
    try:
        table: dict[str, str] = resp.decode_body(KVTable).table
    except ValueError as e:
        # The registration itself was taken: the topics' order flags stay as they are until a readable table.
        log.warning("name server %s answered an unreadable ORDER_TOPIC_CONFIG table: %s", addr, e)
        return None
    return table
