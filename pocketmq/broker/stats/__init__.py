"""The broker's statistics (RocketMQ's BrokerStatsManager and StatsItemSet)."""

from .broker_stats_manager import BrokerStatsManager, group_key
from .stats_item import StatsItem, StatsItemSet, StatsSnapshot

__all__ = ["BrokerStatsManager", "StatsItem", "StatsItemSet", "StatsSnapshot", "group_key"]
