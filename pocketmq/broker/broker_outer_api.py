"""BrokerOuterAPI: the broker's calls to the name servers (REGISTER_BROKER, UNREGISTER_BROKER)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from pocketmq.remoting.body import RegisterBrokerBody, TopicConfigSerializeWrapper, body_crc32
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RegisterResult:
    namesrv_addr: str
    ok: bool
    error: str | None = None


@dataclass(slots=True)
class BrokerIdentity:
    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_server_addr: str = ""  # no HA service: nothing to advertise


class BrokerOuterAPI:
    def __init__(self, timeout: float = 6.0, compressed: bool = False) -> None:
        self.timeout = timeout
        self.compressed = compressed
        self.client = RemotingClient(connect_timeout=min(3.0, timeout))

    async def register_broker_all(
        self, namesrv_addrs: list[str], identity: BrokerIdentity, wrapper: TopicConfigSerializeWrapper
    ) -> list[RegisterResult]:
        """Register with every name server at once; a failure with one is logged, never raised."""
        body = RegisterBrokerBody(wrapper).encode(self.compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=identity.broker_name,
            broker_addr=identity.broker_addr,
            cluster_name=identity.cluster_name,
            ha_server_addr=identity.ha_server_addr,
            broker_id=identity.broker_id,
            compressed=self.compressed,
            body_crc32=body_crc32(body),
        )
        return list(await asyncio.gather(*(self._register(addr, header, body) for addr in namesrv_addrs)))

    async def _register(self, addr: str, header: RegisterBrokerRequestHeader, body: bytes) -> RegisterResult:
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)
        try:
            resp = await self.client.invoke(addr, request, self.timeout)
        except (RemotingError, OSError, ValueError) as e:
            log.warning("register broker to name server %s failed: %s", addr, e)
            return RegisterResult(addr, False, str(e))
        if resp.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused the registration: %s %s", addr, resp.code, resp.remark)
            return RegisterResult(addr, False, f"code {resp.code}: {resp.remark}")
        log.debug("registered to name server %s", addr)
        return RegisterResult(addr, True)

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

    async def close(self) -> None:
        await self.client.close()
