"""BrokerIdentity: the keys that name a broker (RocketMQ 5's BrokerIdentity, which its BrokerConfig extends)."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.common.mix_all import DEFAULT_CLUSTER

from .config_fields import _f

__all__ = ["BrokerIdentity"]


@dataclass
class BrokerIdentity:
    """Which broker this is: its cluster, its name, and its id within the name (0, the master)."""

    broker_cluster_name: str = _f(DEFAULT_CLUSTER, "brokerClusterName")
    broker_name: str = _f("broker-a", "brokerName")
    broker_id: int = _f(0, "brokerId")  # 0 = master; pocketmq runs masters only (no replication): others become 0
