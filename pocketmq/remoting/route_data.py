"""The route side's bodies (name server -> clients): RocketMQ's TopicRouteData with its QueueData and BrokerData,
ClusterInfo and TopicList."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .body_codec import Reader
from .codes import MASTER_ID
from .errors import BodyError


@dataclass(slots=True)
class QueueData:
    """RocketMQ's QueueData: a topic's queues on one broker, and their permission."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicSysFlag": self.topic_sys_flag,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueueData:
        r = Reader(obj, path)
        return cls(
            broker_name=r.str("brokerName"),
            read_queue_nums=r.int("readQueueNums"),
            write_queue_nums=r.int("writeQueueNums"),
            perm=r.int("perm"),
            topic_sys_flag=r.int("topicSysFlag", 0),
        )


@dataclass(slots=True)
class BrokerData:
    """RocketMQ's BrokerData: a broker by name, and the addresses of its master and slaves."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)  # brokerId -> "ip:port"; 0 = master

    def select_broker_addr(self) -> str | None:
        """The master's address, else any slave's (RocketMQ picks a random one)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            addr = self.broker_addrs[min(self.broker_addrs)]
        return addr

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "brokerName": self.broker_name,
            "brokerAddrs": dict(self.broker_addrs),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BrokerData:
        r = Reader(obj, path)
        addrs: dict[int, str] = {}
        for k, v in r.map("brokerAddrs", {}).items():
            # JSON-born maps carry the id as a decimal string.
            if isinstance(k, str) and k.lstrip("-").isdigit():
                k = int(k)
            if type(k) is not int or not isinstance(v, str):
                raise BodyError(r.at("brokerAddrs"), f"expected brokerId -> address, got {k!r}: {v!r}")
            addrs[k] = v
        return cls(cluster=r.str("cluster"), broker_name=r.str("brokerName"), broker_addrs=addrs)


@dataclass(slots=True)
class TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC (105) answer body: the brokers a topic is on, and its queues there."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)  # brokerAddr -> filter servers
    order_topic_conf: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "queueDatas": [q.to_dict() for q in self.queue_datas],
            "brokerDatas": [b.to_dict() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
        }
        if self.order_topic_conf is not None:
            d["orderTopicConf"] = self.order_topic_conf
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicRouteData:
        r = Reader(obj, path)
        fst = r.map("filterServerTable", {})
        table: dict[str, list[str]] = {}
        for k, v in fst.items():
            if not isinstance(k, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BodyError(r.at("filterServerTable"), f"expected address -> [address], got {k!r}")
            table[k] = v
        return cls(
            queue_datas=r.objects("queueDatas", QueueData, []),
            broker_datas=r.objects("brokerDatas", BrokerData, []),
            filter_server_table=table,
            order_topic_conf=r.str("orderTopicConf", None),
        )


@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO body."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)  # brokerName -> BrokerData
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)  # cluster -> brokerNames

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_dict() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ClusterInfo:
        r = Reader(obj, path)
        clusters: dict[str, set[str]] = {}
        for k, v in r.map("clusterAddrTable", {}).items():
            if not isinstance(k, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BodyError(r.at("clusterAddrTable"), f"expected cluster -> [brokerName], got {k!r}")
            clusters[k] = set(v)
        return cls(
            broker_addr_table=r.object_map("brokerAddrTable", BrokerData, {}), cluster_addr_table=clusters
        )


@dataclass(slots=True)
class TopicList:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER body (and the broker's topic-name lists)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topicList": list(self.topic_list)}
        if self.broker_addr is not None:
            d["brokerAddr"] = self.broker_addr
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> TopicList:
        r = Reader(obj, path)
        return cls(topic_list=r.str_list("topicList", []), broker_addr=r.str("brokerAddr", None))

