"""AdminClient: how MQAdminExt reaches a cluster: its connection, requests to the name servers (clusters, topics,
routes, KV config) and to brokers, and which brokers serve a cluster or a topic. The operations build on it in
mq_admin_ext.py (topics, groups, connections, broker config), message_admin.py and offset_admin.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Self

from pocketmq.common.properties_text import format_properties, parse_properties
from pocketmq.remoting.admin_body import (
    KVTable,
)
from pocketmq.remoting.admin_header import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
)
from pocketmq.remoting.body import (
    ClusterInfo,
    TopicList,
    TopicRouteData,
    encode_body,
)
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    GetRouteInfoRequestHeader,
)

from ..client_config import ClientConfig
from ..exceptions import MQBrokerException, MQClientException
from ..impl.mq_client_api import MQClientAPIImpl


class AdminClient:
    def __init__(
        self,
        namesrv_addr: str,
        timeout: float = 5.0,  # mqadmin's DefaultMQAdminExt.timeoutMillis
        protocol: str = "msgpack",
        access_key: str | None = None,
        secret_key: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.config = ClientConfig(
            namesrv_addr=namesrv_addr,
            mq_client_api_timeout=timeout,
            connect_timeout=timeout,
            protocol=protocol,
            busy_poll=0.0,
            access_key=access_key,
            secret_key=secret_key,
        )
        self.api = MQClientAPIImpl(self.config)

    async def close(self) -> None:
        await self.api.shutdown()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- plumbing ------------------------------------------------------------------------------------------

    async def _namesrv(self, code: int, header: Any = None, body: bytes | None = None) -> RemotingCommand:
        return await self.api.invoke_namesrv(RemotingCommand.request(code, header, body), self.timeout)

    async def _broker(self, addr: str, code: int, header: Any = None, body: Any = None) -> RemotingCommand:
        request = RemotingCommand.request(code, header)
        if body is not None:
            request.body = body if isinstance(body, bytes) else self._encode(body)
        return await self.api.remoting_client.invoke(addr, request, self.timeout)

    def _encode(self, obj: object) -> bytes:
        return encode_body(obj, self.api.remoting_client.body_dialect)

    @staticmethod
    def _ok(response: RemotingCommand, addr: str | None = None) -> RemotingCommand:
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        return response

    # --- name server: clusters, topics, routes, KV config --------------------------------------------------

    async def examine_broker_cluster_info(self) -> ClusterInfo:
        r = self._ok(await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO))
        return r.decode_body(ClusterInfo)

    async def fetch_all_topic_list(self) -> list[str]:
        r = self._ok(await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        return sorted(r.decode_body(TopicList).topic_list)

    async def get_system_topic_list_from_ns(self) -> list[str]:
        """The topics the name server counts as system ones (GET_SYSTEM_TOPIC_LIST_FROM_NS): every cluster name
        and broker name, each a topic of its own in RocketMQ."""
        r = self._ok(await self._namesrv(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS))
        return sorted(r.decode_body(TopicList).topic_list)

    async def fetch_topics_by_cluster(self, cluster: str) -> list[str]:
        r = self._ok(await self._namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster)))
        return sorted(r.decode_body(TopicList).topic_list)

    async def examine_topic_route_info(self, topic: str) -> TopicRouteData:
        r = await self._namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
        if r.code == ResponseCode.TOPIC_NOT_EXIST:
            raise MQClientException(
                r.remark or f"No topic route info in name server for the topic: {topic}",
                response_code=ResponseCode.TOPIC_NOT_EXIST,
            )
        return self._ok(r).decode_body(TopicRouteData)

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        for addr in self.api.namesrv_addr_list:  # every name server holds its own copy
            request = RemotingCommand.request(
                RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace, key, value)
            )
            self._ok(await self.api.remoting_client.invoke(addr, request, self.timeout), addr)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        r = await self._namesrv(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader(namespace, key))
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        value = self._ok(r).ext_fields.get("value")
        return None if value is None else str(value)

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        for addr in self.api.namesrv_addr_list:
            request = RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace, key))
            self._ok(await self.api.remoting_client.invoke(addr, request, self.timeout), addr)

    async def get_kv_list_by_namespace(self, namespace: str) -> dict[str, str]:
        r = await self._namesrv(RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace))
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            return {}
        return self._ok(r).decode_body(KVTable).table

    async def get_name_server_config(self, addrs: list[str] | None = None) -> dict[str, dict[str, str]]:
        """Each name server's settings (GET_NAMESRV_CONFIG), by address; every name server when ``addrs`` is None."""
        out = {}
        for addr in addrs if addrs is not None else self.api.namesrv_addr_list:
            r = self._ok(await self.api.remoting_client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), self.timeout), addr)
            out[addr] = parse_properties((r.body or b"").decode("utf-8", "replace"))
        return out

    async def update_name_server_config(self, properties: dict[str, str], addrs: list[str] | None = None) -> list[str]:
        """UPDATE_NAMESRV_CONFIG on each name server (every one when ``addrs`` is None); the addresses changed."""
        targets = addrs if addrs is not None else list(self.api.namesrv_addr_list)
        body = format_properties(properties).encode("utf-8")
        for addr in targets:
            request = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
            self._ok(await self.api.remoting_client.invoke(addr, request, self.timeout), addr)
        return targets

    # --- brokers of a cluster / topic ----------------------------------------------------------------------

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """brokerName -> master address, of ``cluster`` (every cluster when None)."""
        info = await self.examine_broker_cluster_info()
        names = set(info.broker_addr_table) if cluster is None else info.cluster_addr_table.get(cluster)
        if names is None:
            raise MQClientException(
                f"cluster {cluster!r} not found (clusters: {', '.join(sorted(info.cluster_addr_table)) or 'none'})"
            )
        out = {}
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            addr = bd.broker_addrs.get(0) if bd is not None else None
            if addr is not None:
                out[name] = addr
        return out

    async def _topic_masters(self, topic: str) -> dict[str, str]:
        route = await self.examine_topic_route_info(topic)
        return {bd.broker_name: a for bd in route.broker_datas if (a := bd.select_broker_addr()) is not None}

    async def _targets(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        if broker_addr:
            return [broker_addr]
        if not cluster:
            raise MQClientException("give a cluster or a broker address")
        addrs = list((await self.master_addrs(cluster)).values())
        if not addrs:
            raise MQClientException(f"cluster {cluster!r} has no master broker")
        return addrs

    async def _gather(self, coros: Iterable[Any]) -> list[Any]:
        return list(await asyncio.gather(*coros))
