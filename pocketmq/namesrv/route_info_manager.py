"""RouteInfoManager: the name server's routing tables (RocketMQ 4.9.8 semantics), with no I/O.

Runs on one event loop, so RocketMQ's read/write lock is not needed. Times come from an injectable clock in
seconds. Channels are opaque, hashable objects supplied by the caller; the manager only compares them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Generator, Hashable, Sequence
from dataclasses import dataclass, replace

from pocketmq.common.java_hash import hash_map_order
from pocketmq.remoting.body import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from pocketmq.remoting.codes import MASTER_ID, PermName, TopicSysFlag

log = logging.getLogger(__name__)

DEFAULT_BROKER_CHANNEL_EXPIRED_TIME = 120.0
# register_broker_in_steps() yields after this many topics, so a caller on an event loop can let others run
# while a broker's whole table (10,000 topics: tens of milliseconds of work, bench/README.md) is applied.
TOPICS_PER_STEP = 500

# A generator that yields between steps and returns R.
Steps = Generator[None, None, "RegisterBrokerResult"]


@dataclass(slots=True)
class BrokerLiveInfo:
    """RocketMQ's BrokerLiveInfo: a registered broker, kept while it keeps registering."""

    last_update_timestamp: float  # clock seconds of the last registration
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str
    # RocketMQ 5.x: the broker's own expiry (heartbeatTimeoutMillis of its registration), in seconds; None: the
    # name server's broker_channel_expired_time.
    heartbeat_timeout: float | None = None


@dataclass(slots=True)
class RegisterBrokerResult:
    """What a registering slave learns about its master (both None for a master)."""

    ha_server_addr: str | None = None
    master_addr: str | None = None
    delta_accepted: bool = False


class RouteInfoManager:
    def __init__(
        self,
        broker_channel_expired_time: float = DEFAULT_BROKER_CHANNEL_EXPIRED_TIME,
        clock: Callable[[], float] = time.monotonic,
        delete_topic_with_broker_registration: bool = False,
    ) -> None:
        self.broker_channel_expired_time = broker_channel_expired_time
        self.clock = clock
        self.delete_topic_with_broker_registration = delete_topic_with_broker_registration
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}  # topic -> brokerName -> QueueData
        self.broker_addr_table: dict[str, BrokerData] = {}  # brokerName -> BrokerData
        self.cluster_addr_table: dict[str, set[str]] = {}  # clusterName -> brokerNames
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}  # brokerAddr -> BrokerLiveInfo
        self.filter_server_table: dict[str, list[str]] = {}  # brokerAddr -> filter server addresses

    # --- registration ---

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        channel: Hashable | None,
        filter_server_list: list[str] | None = None,
        delta_base: DataVersion | None = None,
        deleted_topics: Sequence[str] = (),
        heartbeat_timeout: float | None = None,
    ) -> RegisterBrokerResult:
        """register_broker_in_steps() run to its end at once."""
        steps = self.register_broker_in_steps(
            cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, topic_config_wrapper, channel,
            filter_server_list, delta_base, deleted_topics, heartbeat_timeout,
        )
        while True:
            try:
                next(steps)
            except StopIteration as done:
                result: RegisterBrokerResult = done.value
                return result

    def register_broker_in_steps(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        channel: Hashable | None,
        filter_server_list: list[str] | None = None,
        delta_base: DataVersion | None = None,
        deleted_topics: Sequence[str] = (),
        heartbeat_timeout: float | None = None,
    ) -> Steps:
        """A full registration (the broker's whole topic table) or, with ``delta_base``, a delta: the topics
        changed and ``deleted_topics`` since that version. A delta applies only when this name server holds
        exactly that version for the broker; else nothing changes and the result says it was not accepted
        (the broker then sends its whole table). ``heartbeat_timeout`` (a RocketMQ 5.x broker's
        heartbeatTimeoutMillis, in seconds) replaces broker_channel_expired_time for this broker.

        A generator: it yields every TOPICS_PER_STEP topics and returns the result. Between steps the tables
        hold part of the new topics; the broker's live entry (its data version) changes only at the end.
        """
        if delta_base is not None and not self._delta_applies(broker_addr, broker_name, broker_id, delta_base):
            return RegisterBrokerResult()
        result = RegisterBrokerResult(delta_accepted=delta_base is not None)
        # Heard from now: an expiry scan between the steps must not take the broker out half way (RocketMQ holds
        # its lock for the whole registration, and no scan runs in it).
        self.update_broker_info_update_timestamp(broker_addr)
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        addrs, register_first = self._register_broker_addr(cluster_name, broker_name, broker_id, broker_addr)
        data_version = (
            topic_config_wrapper.data_version if topic_config_wrapper is not None else DataVersion(0, 0)
        )
        # Only a master's topics make routes, and only when its config version moved (or it is new here).
        if (
            topic_config_wrapper is not None
            and broker_id == MASTER_ID
            and (register_first or self.is_broker_topic_config_changed(broker_addr, data_version))
        ):
            table = topic_config_wrapper.topic_config_table
            yield from self._update_queue_data(broker_name, table)
            if delta_base is None and self.delete_topic_with_broker_registration:
                deleted_topics = self._topics_no_longer_listed(broker_name, table)
            for topic in deleted_topics:
                self._remove_queue_data(topic, broker_name)
        previous = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock(), data_version.copy(), channel, ha_server_addr, heartbeat_timeout
        )
        if previous is None:
            log.info("new broker registered: %s (%s, id %s, cluster %s)", broker_addr, broker_name, broker_id,
                     cluster_name)
        if filter_server_list is not None:
            self._update_filter_servers(broker_addr, filter_server_list)
        if broker_id != MASTER_ID:
            self._tell_slave_its_master(result, addrs)
        return result

    def _topics_no_longer_listed(self, broker_name: str, table: dict[str, TopicConfig]) -> list[str]:
        """The broker sent its whole table: a topic of it that the table no longer names was deleted there."""
        listed = {config.topic_name for config in table.values()}
        return [t for t, by in self.topic_queue_table.items() if broker_name in by and t not in listed]

    def _delta_applies(self, broker_addr: str, broker_name: str, broker_id: int, delta_base: DataVersion) -> bool:
        """A delta is only good on top of the very version it was made from, for the broker at this address."""
        live = self.broker_live_table.get(broker_addr)
        broker_data = self.broker_addr_table.get(broker_name)
        return not (
            live is None
            or live.data_version != delta_base
            or broker_data is None
            or broker_data.broker_addrs.get(broker_id) != broker_addr
        )

    def _register_broker_addr(
        self, cluster_name: str, broker_name: str, broker_id: int, broker_addr: str
    ) -> tuple[dict[int, str], bool]:
        """The broker's address under its name and id; the name's addresses, and whether this one is new here
        (RocketMQ's registerFirst: its topics are taken whatever their version)."""
        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = self.broker_addr_table[broker_name] = BrokerData(cluster_name, broker_name, {})
        addrs = broker_data.broker_addrs
        # One address has one id: a slave promoted to master re-registers as id 0, so drop its old id.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        return addrs, register_first or old_addr is None

    def _update_filter_servers(self, broker_addr: str, filter_server_list: list[str]) -> None:
        if filter_server_list:
            self.filter_server_table[broker_addr] = list(filter_server_list)
        else:
            self.filter_server_table.pop(broker_addr, None)

    def _tell_slave_its_master(self, result: RegisterBrokerResult, addrs: dict[int, str]) -> None:
        """A slave learns where to replicate from: its master's address and HA address, once the master is live."""
        master_addr = addrs.get(MASTER_ID)
        if master_addr is None:
            return
        master_live = self.broker_live_table.get(master_addr)
        if master_live is not None:
            result.ha_server_addr = master_live.ha_server_addr
            result.master_addr = master_addr

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or live.data_version != data_version

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_timestamp = self.clock()

    def _update_queue_data(self, broker_name: str, table: dict[str, TopicConfig]) -> Generator[None, None, None]:
        # A topic is the one its config names, not its key in the table (4.9.7's createAndUpdateQueueData): a
        # broker's own tables key each topic by its name, a body built otherwise registers the names it holds.
        for n, config in enumerate(table.values(), 1):
            if n % TOPICS_PER_STEP == 0:
                yield
            topic = config.topic_name
            queue_data = QueueData(
                broker_name=broker_name,
                read_queue_nums=config.read_queue_nums,
                write_queue_nums=config.write_queue_nums,
                perm=config.perm,
                topic_sys_flag=config.topic_sys_flag,
            )
            by_broker = self.topic_queue_table.setdefault(topic, {})
            if by_broker.get(broker_name) != queue_data:
                if broker_name in by_broker:
                    log.info("topic %s changed on %s: %s", topic, broker_name, queue_data)
                by_broker[broker_name] = queue_data

    def _remove_queue_data(self, topic: str, broker_name: str) -> None:
        by_broker = self.topic_queue_table.get(topic)
        if by_broker is None:
            return
        by_broker.pop(broker_name, None)
        if not by_broker:
            del self.topic_queue_table[topic]
            log.info("topic %s has no queues left, removed", topic)

    def _remove_topics_of_broker(self, broker_name: str) -> None:
        for topic in [t for t, by_broker in self.topic_queue_table.items() if broker_name in by_broker]:
            self._remove_queue_data(topic, broker_name)

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        if broker_data.broker_addrs.get(broker_id) == broker_addr:
            # (Only its own address: a broker of that name and id now elsewhere stays, as RocketMQ 5 keeps it.)
            del broker_data.broker_addrs[broker_id]
        # Queue data belongs to the broker name: it goes only when no master or slave of it is left.
        if not broker_data.broker_addrs:
            del self.broker_addr_table[broker_name]
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topics_of_broker(broker_name)
        log.info("broker unregistered: %s (%s, id %s)", broker_addr, broker_name, broker_id)

    # --- expiry ---

    def scan_not_active_broker(self, now: float | None = None) -> dict[str, BrokerLiveInfo]:
        """Drop brokers not heard from for ``broker_channel_expired_time`` (or the heartbeat timeout a broker
        registered with, as RocketMQ 5.x's name server does); returns them by address.

        The caller should close the returned channels (RocketMQ does).
        """
        now = self.clock() if now is None else now
        expired = {
            addr: live
            for addr, live in self.broker_live_table.items()
            if live.last_update_timestamp + self._expiry(live) < now
        }
        for addr, live in expired.items():
            log.warning(
                "broker %s expired: no registration for %.1fs", addr, now - live.last_update_timestamp
            )
        self._remove_broker_addrs(expired)
        return expired

    def _expiry(self, live: BrokerLiveInfo) -> float:
        return self.broker_channel_expired_time if live.heartbeat_timeout is None else live.heartbeat_timeout

    def on_channel_destroy(self, channel: Hashable | None, remote_addr: str | None = None) -> list[str]:
        """A connection closed: drop every broker that registered over it at once; returns their addresses.

        Without a broker on that channel, ``remote_addr`` is tried as a broker address (as RocketMQ does).
        """
        addrs = [
            a for a, live in self.broker_live_table.items() if channel is not None and live.channel is channel
        ]
        if not addrs and remote_addr is not None and remote_addr in self.broker_live_table:
            addrs = [remote_addr]
        for addr in addrs:
            log.info("connection of broker %s closed, removing its routes", addr)
        self._remove_broker_addrs(addrs)
        return addrs

    def _remove_broker_addrs(self, broker_addrs: Collection[str]) -> None:
        """Forget these brokers together: one walk of each table however many go (a connection that carried
        thousands of registrations, or a scan that expires them, took a walk of every table per broker)."""
        gone = set(broker_addrs)
        if not gone:
            return
        for addr in gone:
            self.broker_live_table.pop(addr, None)
            self.filter_server_table.pop(addr, None)
        emptied: set[str] = set()
        for broker_name, broker_data in list(self.broker_addr_table.items()):
            addrs = broker_data.broker_addrs
            for broker_id in [i for i, a in addrs.items() if a in gone]:
                del addrs[broker_id]
            if not addrs:
                del self.broker_addr_table[broker_name]
                emptied.add(broker_name)
        if not emptied:
            return
        for cluster, names in list(self.cluster_addr_table.items()):
            names -= emptied
            if not names:
                del self.cluster_addr_table[cluster]
        for topic, by_broker in list(self.topic_queue_table.items()):
            for broker_name in emptied & by_broker.keys():
                self._remove_queue_data(topic, broker_name)

    # --- queries ---

    def pick_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic`` (copies), or None unless it has both queue data and a live broker."""
        by_broker = self.topic_queue_table.get(topic)
        if not by_broker:
            return None
        route = TopicRouteData(
            queue_datas=[
                QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                for q in by_broker.values()
            ]
        )
        for broker_name in by_broker:
            broker_data = self.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            clone = broker_data.copy()
            route.broker_datas.append(clone)
            for addr in clone.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers:
                    route.filter_server_table[addr] = list(servers)
        return route if route.broker_datas else None

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={name: bd.copy() for name, bd in self.broker_addr_table.items()},
            cluster_addr_table={cluster: set(names) for cluster, names in self.cluster_addr_table.items()},
        )

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        """The topics with a queue on a broker of ``cluster`` (getTopicsByCluster)."""
        brokers = self.cluster_addr_table.get(cluster, set())
        return TopicList(sorted(t for t, qds in self.topic_queue_table.items() if brokers & set(qds)))

    def get_system_topic_list(self) -> TopicList:
        """The cluster and broker names (each is a topic of its own in RocketMQ) and one broker address."""
        names = sorted(set(self.cluster_addr_table) | {n for ns in self.cluster_addr_table.values() for n in ns})
        addr = next((a for bd in self.broker_addr_table.values() for a in bd.broker_addrs.values()), None)
        return TopicList(names, addr)

    def get_all_topic_list(self) -> TopicList:
        return TopicList(topic_list=sorted(self.topic_queue_table))

    def get_unit_topics(self, unit: bool | None, unit_sub: bool) -> TopicList:
        """GET_UNIT_TOPIC_LIST (``unit``), GET_HAS_UNIT_SUB_TOPIC_LIST (``unit_sub``) and
        GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (both, ``unit`` False): by the topic sys flag of a topic's first
        queue data, as RocketMQ reads it (``None``: that flag not looked at). First as 4.9.7's HashMap of the
        topic's broker names iterates them: of a topic on two brokers whose flags differ, the same one."""
        out = []
        for topic, by_broker in self.topic_queue_table.items():
            if not by_broker:
                continue
            first = by_broker[hash_map_order(by_broker)[0] if len(by_broker) > 1 else next(iter(by_broker))]
            flag = first.topic_sys_flag
            if unit is not None and bool(flag & TopicSysFlag.FLAG_UNIT) != unit:
                continue
            if unit_sub and not flag & TopicSysFlag.FLAG_UNIT_SUB:
                continue
            out.append(topic)
        return TopicList(sorted(out))

    def operate_write_perm_of_broker(self, broker_name: str, wipe: bool) -> int:
        """WIPE_WRITE_PERM_OF_BROKER (``wipe``: the broker's queues of every topic read-only) or
        ADD_WRITE_PERM_OF_BROKER (read-write); the number of topics changed. Held until the broker registers a
        new topic-config version, as in RocketMQ."""
        count = 0
        for by_broker in self.topic_queue_table.values():
            queue_data = by_broker.get(broker_name)
            if queue_data is None:
                continue
            perm = queue_data.perm & ~PermName.PERM_WRITE if wipe else PermName.PERM_READ | PermName.PERM_WRITE
            by_broker[broker_name] = replace(queue_data, perm=perm)
            count += 1
        return count

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget ``topic``; with ``cluster_name``, only its queues on that cluster's brokers (5.x)."""
        if cluster_name is None:
            self.topic_queue_table.pop(topic, None)
            return
        for broker_name in self.cluster_addr_table.get(cluster_name, ()):
            self._remove_queue_data(topic, broker_name)
