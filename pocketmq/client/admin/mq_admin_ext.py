"""MQAdminExt: the operator's API (RocketMQ's DefaultMQAdminExt): topics, subscription groups, clusters and
routes, statistics and lag, connections, message lookups, offset resets and broker config.

    async with MQAdminExt("127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", queue_nums=8)
        stats = await admin.examine_consume_stats("OrderGroup")
        print(stats.compute_total_diff())

Every call is bounded by ``timeout`` (connecting included). Requests go to the name servers and brokers over
``protocol`` ("msgpack" or "rocketmq", the native protocol, which Apache RocketMQ needs), with the same results
either way. Errors: a broker's refusal raises MQBrokerException (its code and remark); an unreachable name server
NameServerAddressError; a name server that closes the connection on msgpack frames (Apache's)
NameServerProtocolError.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pocketmq.common.attribute import parse_to_string, signed_attributes
from pocketmq.common.java_hash import hash_map_order
from pocketmq.common.mix_all import NAMESPACE_ORDER_TOPIC_CONFIG, get_retry_topic
from pocketmq.common.properties_text import format_properties, parse_properties
from pocketmq.common.topic_validator import AUTO_CREATE_TOPIC_KEY_TOPIC
from pocketmq.remoting.admin_body import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    KVTable,
    ProducerConnection,
    TopicStatsTable,
)
from pocketmq.remoting.admin_header import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from pocketmq.remoting.body import (
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
)

from ..exceptions import MQBrokerException, MQClientException
from .message_admin import MessageAdmin
from .offset_admin import OffsetAdmin, ResetOffsetResult

__all__ = ["MQAdminExt", "ResetOffsetResult"]


class MQAdminExt(MessageAdmin, OffsetAdmin):
    """The operator's API; how it reaches the cluster is AdminClient's (admin_client.py), the message lookups
    MessageAdmin's and the offset reset OffsetAdmin's."""

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
        """One topic's config with its attributes (RocketMQ 5's GET_TOPIC_CONFIG, examineTopicConfig). A broker
        without that request (4.9.x) is asked for all its topics' configs, as 4.9.x's examineTopicConfig does.
        A topic the broker has not raises MQBrokerException TOPIC_NOT_EXIST either way (4.9.x's returns null)."""
        r = await self._broker(addr, RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic))
        if r.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return self._ok(r, addr).decode_body(TopicConfig)
        config = (await self.get_all_topic_config(addr)).topic_config_table.get(topic)
        if config is None:
            raise MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {topic}", addr)
        return config

    async def get_all_topic_config(self, addr: str) -> TopicConfigSerializeWrapper:
        r = self._ok(await self._broker(addr, RequestCode.GET_ALL_TOPIC_CONFIG), addr)
        return r.decode_body(TopicConfigSerializeWrapper)

    async def examine_topic_stats(self, topic: str, broker_addr: str | None = None) -> TopicStatsTable:
        """Every queue's min and max offsets, from each master of the topic's route, or from ``broker_addr`` alone
        (RocketMQ 5's examineTopicStats(brokerAddr, topic): no route lookup, no other broker asked)."""
        addrs = [broker_addr] if broker_addr else list((await self._topic_masters(topic)).values())
        table = TopicStatsTable()
        for addr in addrs:
            r = await self._broker(addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic))
            if r.code == ResponseCode.TOPIC_NOT_EXIST:
                continue
            table.offset_table.update(self._ok(r, addr).decode_body(TopicStatsTable).offset_table)
        return table

    async def query_topic_consume_by_who(self, topic: str) -> list[str]:
        groups: set[str] = set()
        for addr in (await self._topic_masters(topic)).values():
            groups.update(await self.query_topic_consume_by_who_at(addr, topic))
        return sorted(groups)

    async def query_topic_consume_by_who_at(self, addr: str, topic: str) -> list[str]:
        """The groups that consume ``topic`` at one broker."""
        header = QueryTopicConsumeByWhoRequestHeader(topic)
        r = self._ok(await self._broker(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header), addr)
        return list(r.decode_body(GroupList).group_list)

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
        header = DeleteSubscriptionGroupRequestHeader(group, remove_offset, clean_offset=remove_offset)
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

    async def examine_consume_stats(
        self, group: str, topic: str | None = None, broker_addr: str | None = None
    ) -> ConsumeStats:
        """Every queue's broker and consumer offsets (lag = the difference) and the group's consume TPS, from the
        group's brokers, or from ``broker_addr`` alone (RocketMQ 5's examineConsumeStats(brokerAddr, ...))."""
        stats = ConsumeStats()
        header = GetConsumeStatsRequestHeader(group, topic)
        addrs = [broker_addr] if broker_addr else list((await self._group_masters(group, topic)).values())
        for addr in addrs:
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

    async def fetch_consume_stats_in_broker(self, broker_addr: str, is_order: bool = False,
                                            timeout: float | None = None,
                                            read_queues: bool = False) -> ConsumeStatsList:
        """Every subscription group's ConsumeStats on one broker in one request (RocketMQ's
        fetchConsumeStatsInBroker, mqadmin's brokerConsumeStats): each topic the group has offsets of, over its
        write queues (``read_queues``: its read queues, from a pocketmq broker; Apache's ignores it); a group
        without offsets with an empty list. ``timeout`` (s), the admin's by default."""
        header = GetConsumeStatsInBrokerHeader(is_order, read_queues)
        request = RemotingCommand.request(RequestCode.GET_BROKER_CONSUME_STATS, header)
        answer = self._ok(await self.api.remoting_client.invoke(broker_addr, request, timeout or self.timeout),
                          broker_addr)
        # Decoded on a thread: thousands of groups' stats are a megabyte, whose decoding the loop (in `pocketmq dev`
        # the broker's own) would otherwise spend in one go (bench/README.md, "The console's scrape ...").
        return await asyncio.to_thread(answer.decode_body, ConsumeStatsList)

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

    # --- order topics: the name servers' ORDER_TOPIC_CONFIG namespace ---------------------------------------

    async def create_or_update_order_conf(self, topic: str, order_conf: str, is_cluster: bool) -> str:
        """DefaultMQAdminExtImpl.createOrUpdateOrderConf: ``order_conf`` ("brokerName:queueNums;...") becomes the
        topic's entry on every name server (``is_cluster``), or, one broker's part ("brokerName:queueNums"), replaces
        that broker's part of the entry, the other brokers' parts kept (in a Java HashMap's order, as mqadmin joins
        them). Returns the entry written. Where RocketMQ merges with nothing when reading the entry fails for any
        reason, only a missing entry counts as empty here: another failure would drop the other brokers' parts."""
        value = order_conf
        if not is_cluster:
            old = await self.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
            parts = {} if old is None or not old.strip() else {p.split(":")[0]: p for p in old.split(";") if p}
            parts[order_conf.split(":")[0]] = order_conf
            value = ";".join(parts[name] for name in hash_map_order(parts))
        await self.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic, value)
        return value

    # --- brokers -------------------------------------------------------------------------------------------

    async def fetch_broker_runtime_stats(self, addr: str) -> dict[str, str]:
        return self._ok(await self._broker(addr, RequestCode.GET_BROKER_RUNTIME_INFO), addr).decode_body(KVTable).table

    async def get_broker_config(self, addr: str) -> dict[str, str]:
        r = self._ok(await self._broker(addr, RequestCode.GET_BROKER_CONFIG), addr)
        return parse_properties((r.body or b"").decode("utf-8", "replace"))

    async def update_broker_config(self, addr: str, properties: dict[str, str]) -> None:
        text = format_properties(properties)
        self._ok(await self._broker(addr, RequestCode.UPDATE_BROKER_CONFIG, body=text.encode("utf-8")), addr)
