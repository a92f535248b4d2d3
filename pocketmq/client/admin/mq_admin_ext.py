"""MQAdminExt: the operator's API (RocketMQ's DefaultMQAdminExt): topics, subscription groups, clusters and
routes, statistics and lag, connections, message lookups, offset resets and broker config.

    async with MQAdminExt("127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", queue_nums=8)
        stats = await admin.examine_consume_stats("OrderGroup")
        print(stats.compute_total_diff())

Every call is bounded by ``timeout`` (connecting included). Requests go to the name servers and brokers over
``protocol`` ("msgpack" or "rocketmq", the native protocol), with the same results either way. Errors: a broker's
refusal raises MQBrokerException (its code and remark); an unreachable name server NameServerAddressError.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pocketmq.common.attribute import parse_to_string, signed_attributes
from pocketmq.common.codec import CorruptRecordError, decode_all
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import TOOLS_CONSUMER_GROUP, get_retry_topic
from pocketmq.common.properties_text import format_properties, parse_properties
from pocketmq.common.pull_sys_flag import FLAG_SUBSCRIPTION
from pocketmq.common.topic_validator import AUTO_CREATE_TOPIC_KEY_TOPIC, is_system_topic
from pocketmq.remoting.admin_body import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupList,
    KVTable,
    ProducerConnection,
    ResetOffsetBody,
    TopicStatsTable,
)
from pocketmq.remoting.admin_header import (
    DeleteKVConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from pocketmq.remoting.body import (
    ClusterInfo,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    encode_body,
)
from pocketmq.remoting.client_body import MessageQueue, SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)

from ..client_config import ClientConfig
from ..exceptions import MQBrokerException, MQClientException
from ..impl.mq_admin import broker_of_offset_msg_id
from ..impl.mq_client_api import UNIQUE_MSG_QUERY_FLAG, MQClientAPIImpl

_GROUP_HAS_NO_OFFSETS = "THe consumer group <"  # (sic) Broker2Client.resetOffset's remark


@dataclass(slots=True)
class ResetOffsetResult:
    """What resetOffsetByTime did: the new offset of every queue, and whether running consumers took them
    (online) or the brokers' stored offsets were set directly (the group had no consumer running)."""

    offsets: dict[MessageQueue, int] = field(default_factory=dict)
    online: bool = True


class MQAdminExt:
    def __init__(
        self,
        namesrv_addr: str,
        timeout: float = 3.0,
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

    async def __aenter__(self) -> MQAdminExt:
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

    # --- topics --------------------------------------------------------------------------------------------

    async def create_and_update_topic_config(self, addr: str, tc: TopicConfig) -> None:
        header = CreateTopicRequestHeader(
            tc.topic_name,
            AUTO_CREATE_TOPIC_KEY_TOPIC,
            tc.read_queue_nums,
            tc.write_queue_nums,
            tc.perm,
            tc.topic_filter_type,
            tc.topic_sys_flag,
            tc.order,
            parse_to_string(signed_attributes(tc.attributes)) or None,
        )
        self._ok(await self._broker(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header), addr)

    async def create_topic(
        self, tc: TopicConfig, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        """Create or update ``tc`` on a broker, or on every master of a cluster; returns the addresses."""
        addrs = await self._targets(cluster, broker_addr)
        await self._gather(self.create_and_update_topic_config(a, tc) for a in addrs)
        return addrs

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """deleteTopicInBroker on every master of ``cluster``, then deleteTopicInNameServer on every name server."""
        addrs = await self._targets(cluster, None)
        for a in addrs:
            self._ok(await self._broker(a, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic)), a)
        for ns in self.api.namesrv_addr_list:
            request = RemotingCommand.request(
                RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic)
            )
            self._ok(await self.api.remoting_client.invoke(ns, request, self.timeout), ns)
        return addrs

    async def examine_topic_config(self, addr: str, topic: str) -> TopicConfig:
        """One topic's config with its attributes (RocketMQ 5's GET_TOPIC_CONFIG, examineTopicConfig)."""
        r = self._ok(await self._broker(addr, RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic)), addr)
        return r.decode_body(TopicConfig)

    async def get_all_topic_config(self, addr: str) -> TopicConfigSerializeWrapper:
        r = self._ok(await self._broker(addr, RequestCode.GET_ALL_TOPIC_CONFIG), addr)
        return r.decode_body(TopicConfigSerializeWrapper)

    async def examine_topic_stats(self, topic: str) -> TopicStatsTable:
        masters = await self._topic_masters(topic)
        table = TopicStatsTable()
        for addr in masters.values():
            r = await self._broker(addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic))
            if r.code == ResponseCode.TOPIC_NOT_EXIST:
                continue
            table.offset_table.update(self._ok(r, addr).decode_body(TopicStatsTable).offset_table)
        return table

    async def query_topic_consume_by_who(self, topic: str) -> list[str]:
        groups: set[str] = set()
        for addr in (await self._topic_masters(topic)).values():
            r = self._ok(
                await self._broker(
                    addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(topic)
                ),
                addr,
            )
            groups.update(r.decode_body(GroupList).group_list)
        return sorted(groups)

    # --- subscription groups -------------------------------------------------------------------------------

    async def create_and_update_subscription_group_config(self, addr: str, cfg: SubscriptionGroupConfig) -> None:
        self._ok(await self._broker(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=cfg), addr)

    async def create_subscription_group(
        self, cfg: SubscriptionGroupConfig, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        addrs = await self._targets(cluster, broker_addr)
        await self._gather(self.create_and_update_subscription_group_config(a, cfg) for a in addrs)
        return addrs

    async def delete_subscription_group(
        self, group: str, cluster: str | None = None, broker_addr: str | None = None, remove_offset: bool = False
    ) -> list[str]:
        addrs = await self._targets(cluster, broker_addr)
        header = DeleteSubscriptionGroupRequestHeader(group, remove_offset)
        for a in addrs:
            self._ok(await self._broker(a, RequestCode.DELETE_SUBSCRIPTIONGROUP, header), a)
        return addrs

    async def get_all_subscription_group(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        r = self._ok(await self._broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), addr)
        table = r.decode_body().get("subscriptionGroupTable", {})
        return {k: SubscriptionGroupConfig.from_dict(v) for k, v in table.items()}

    # --- consumers and producers ---------------------------------------------------------------------------

    async def _group_masters(self, group: str, topic: str | None = None) -> dict[str, str]:
        """The brokers to ask about a group: those of its retry topic (RocketMQ's way), those of ``topic``, and
        every master when neither has a route."""
        masters: dict[str, str] = {}
        for t in (get_retry_topic(group), topic):
            if t is None:
                continue
            try:
                masters.update(await self._topic_masters(t))
            except MQClientException as e:
                if e.response_code != ResponseCode.TOPIC_NOT_EXIST:
                    raise
        return masters or await self.master_addrs()

    async def examine_consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """Every queue's broker and consumer offsets (lag = the difference) and the group's consume TPS."""
        stats = ConsumeStats()
        header = GetConsumeStatsRequestHeader(group, topic)
        for addr in (await self._group_masters(group, topic)).values():
            one = self._ok(await self._broker(addr, RequestCode.GET_CONSUME_STATS, header), addr).decode_body(
                ConsumeStats
            )
            stats.offset_table.update(one.offset_table)
            stats.consume_tps += one.consume_tps
        if not stats.offset_table:
            raise MQClientException(
                f"Not found the consumer group consume stats, because return offset table is "
                f"empty, maybe the consumer not consume any message (group {group})"
            )
        return stats

    async def examine_consumer_connection_info(self, group: str) -> ConsumerConnection:
        merged: ConsumerConnection | None = None
        header = GetConsumerConnectionListRequestHeader(group)
        for addr in (await self._group_masters(group)).values():
            r = await self._broker(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
            if r.code == ResponseCode.CONSUMER_NOT_ONLINE:
                continue
            one = self._ok(r, addr).decode_body(ConsumerConnection)
            if merged is None:
                merged = one
            else:
                # A client connects to each broker (from another port each time): one row per client.
                seen = {c.client_id for c in merged.connection_set}
                merged.connection_set += [c for c in one.connection_set if c.client_id not in seen]
        if merged is None or not merged.connection_set:
            raise MQBrokerException(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return merged

    async def examine_producer_connection_info(self, group: str, topic: str) -> ProducerConnection:
        conns: dict[str, Any] = {}
        header = GetProducerConnectionListRequestHeader(group)
        for addr in (await self._topic_masters(topic)).values():
            r = await self._broker(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, header)
            if r.code != ResponseCode.SUCCESS:
                continue
            for c in r.decode_body(ProducerConnection).connection_set:
                conns.setdefault(c.client_id, c)
        if not conns:
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        return ProducerConnection(list(conns.values()))

    async def get_consumer_running_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        header = GetConsumerRunningInfoRequestHeader(group, client_id)
        last: MQBrokerException | None = None
        for addr in (await self._group_masters(group)).values():
            r = await self._broker(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
            if r.code == ResponseCode.SUCCESS:
                return r.decode_body(ConsumerRunningInfo)
            last = MQBrokerException(r.code, r.remark, addr)
        raise last or MQClientException(f"no broker knows the group {group}")

    # --- brokers -------------------------------------------------------------------------------------------

    async def fetch_broker_runtime_stats(self, addr: str) -> dict[str, str]:
        return self._ok(await self._broker(addr, RequestCode.GET_BROKER_RUNTIME_INFO), addr).decode_body(KVTable).table

    async def get_broker_config(self, addr: str) -> dict[str, str]:
        r = self._ok(await self._broker(addr, RequestCode.GET_BROKER_CONFIG), addr)
        return parse_properties((r.body or b"").decode("utf-8", "replace"))

    async def update_broker_config(self, addr: str, properties: dict[str, str]) -> None:
        text = format_properties(properties)
        self._ok(await self._broker(addr, RequestCode.UPDATE_BROKER_CONFIG, body=text.encode("utf-8")), addr)

    # --- messages ------------------------------------------------------------------------------------------

    def _decode_messages(self, data: bytes | None, addr: str) -> list[MessageExt]:
        try:
            return decode_all(data or b"", decompress=True)
        except (CorruptRecordError, ValueError) as e:
            raise MQClientException(f"undecodable messages from {addr}: {e}") from e

    async def view_message_by_offset_id(self, offset_msg_id: str) -> MessageExt | None:
        where = broker_of_offset_msg_id(offset_msg_id)
        if where is None:
            raise MQClientException(f"{offset_msg_id!r} is not an offset message id")
        addr, phy = where
        r = await self._broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(phy))
        if r.code != ResponseCode.SUCCESS:
            return None
        msgs = self._decode_messages(r.body, addr)
        return msgs[0] if msgs else None

    async def query_message(
        self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int | None = None, unique_key: bool = False
    ) -> list[MessageExt]:
        end = int(time.time() * 1000) + 3_600_000 if end is None else end
        header = QueryMessageRequestHeader(topic, key, max_num, begin, end)
        out: list[MessageExt] = []
        for addr in (await self._topic_masters(topic)).values():
            request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, header)
            if unique_key:
                request.ext_fields[UNIQUE_MSG_QUERY_FLAG] = "true"
            r = await self.api.remoting_client.invoke(addr, request, self.timeout)
            if r.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            msgs = self._decode_messages(self._ok(r, addr).body, addr)
            out += [m for m in msgs if m.topic == topic and (m.uniq_key == key or (not unique_key and key in m.keys))]
        return out

    async def query_message_by_unique_key(self, topic: str, msg_id: str) -> MessageExt | None:
        found = await self.query_message(topic, msg_id, 32, unique_key=True)
        return min(found, key=lambda m: m.store_timestamp) if found else None

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt | None:
        """By either id, as queryMsgById: the offsetMsgId when it names a known broker, else the UNIQ_KEY in the
        index of ``topic``'s brokers (of every topic's when no topic is given)."""
        where = broker_of_offset_msg_id(msg_id)
        if where is not None:
            known = {
                a
                for bd in (await self.examine_broker_cluster_info()).broker_addr_table.values()
                for a in bd.broker_addrs.values()
            }
            if where[0] in known:
                msg = await self.view_message_by_offset_id(msg_id)
                if msg is not None and (topic is None or msg.topic == topic):
                    return msg
        topics = [topic] if topic else [t for t in await self.fetch_all_topic_list() if not is_system_topic(t)]
        for t in topics:
            try:
                msg = await self.query_message_by_unique_key(t, msg_id)
            except MQClientException:
                continue
            if msg is not None:
                return msg
        return None

    async def query_message_by_offset(
        self, topic: str, broker_name: str, queue_id: int, offset: int
    ) -> MessageExt | None:
        """The message at a queue offset (queryMsgByOffset: a pull of one message by TOOLS_CONSUMER)."""
        masters = await self._topic_masters(topic)
        addr = masters.get(broker_name)
        if addr is None:
            raise MQClientException(f"broker {broker_name!r} does not serve {topic} (it has: {', '.join(masters)})")
        header = PullMessageRequestHeader(
            TOOLS_CONSUMER_GROUP, topic, queue_id, offset, 1, FLAG_SUBSCRIPTION, 0, 0, 0, "*", "TAG"
        )
        r = await self._broker(addr, RequestCode.PULL_MESSAGE, header)
        if r.code != ResponseCode.SUCCESS:
            return None
        msgs = self._decode_messages(r.body, addr)
        return msgs[0] if msgs else None

    # --- offsets -------------------------------------------------------------------------------------------

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp: int, force: bool = True
    ) -> ResetOffsetResult:
        """The group's offsets of ``topic`` set to the first message stored at or after ``timestamp`` (ms; -1 =
        the end). Running consumers take them over at once (INVOKE_BROKER_TO_RESET_OFFSET); when the group has
        none running, the brokers' stored offsets are set directly (as mqadmin falls back to the old way)."""
        masters = await self._topic_masters(topic)
        result = ResetOffsetResult()
        offline: list[str] = []
        header = ResetOffsetRequestHeader(topic, group, timestamp, force)
        for addr in masters.values():
            r = await self._broker(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
            if r.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offline.append(addr)
                continue
            if r.code == ResponseCode.SYSTEM_ERROR and (r.remark or "").startswith(_GROUP_HAS_NO_OFFSETS):
                # The group never consumed the topic on this broker: nothing to reset there (mqadmin fails the
                # whole command instead).
                continue
            result.offsets.update(self._ok(r, addr).decode_body(ResetOffsetBody).offset_table)
        if offline:
            result.online = len(offline) < len(masters) and bool(result.offsets)
            for addr in offline:
                result.offsets.update(await self._reset_offline(addr, topic, group, timestamp, force))
        if not result.offsets:
            raise MQClientException(f"the consumer group {group} has no offsets of {topic} on any broker")
        return result

    async def _reset_offline(
        self, addr: str, topic: str, group: str, timestamp: int, force: bool
    ) -> dict[MessageQueue, int]:
        stats = self._ok(
            await self._broker(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic)), addr
        )
        table = stats.decode_body(ConsumeStats).offset_table
        if not table:
            raise MQClientException(f"the group {group} has no offsets of {topic} at {addr}")
        out: dict[MessageQueue, int] = {}
        for mq, w in table.items():
            if timestamp == -1:
                r = self._ok(
                    await self._broker(addr, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, mq.queue_id)),
                    addr,
                )
                target = r.decode_header(GetMaxOffsetResponseHeader).offset
            else:
                r = self._ok(
                    await self._broker(
                        addr,
                        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                        SearchOffsetRequestHeader(topic, mq.queue_id, timestamp),
                    ),
                    addr,
                )
                target = r.decode_header(SearchOffsetResponseHeader).offset
            if not force and target >= w.consumer_offset:
                target = w.consumer_offset
            update = UpdateConsumerOffsetRequestHeader(group, topic, mq.queue_id, target)
            self._ok(await self._broker(addr, RequestCode.UPDATE_CONSUMER_OFFSET, update), addr)
            out[mq] = target
        return out

