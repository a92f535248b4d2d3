"""VIEW_BROKER_STATS_DATA's body (RocketMQ's BrokerStatsData): one statistics item's figures over the last minute,
hour and day, each a BrokerStatsItem. Fields in fastjson's order (by name)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .body import Reader
from .errors import BodyError


def _number(r: Reader, key: str) -> float:
    v = r._d.get(key, 0.0)
    if isinstance(v, str):  # fastjson casts a number written as a string
        try:
            v = float(v)
        except ValueError:
            raise BodyError(r.at(key), "is not a number") from None
    if type(v) is bool or not isinstance(v, int | float):
        raise BodyError(r.at(key), f"expected a number, got {type(v).__name__}")
    return float(v)


@dataclass(slots=True)
class BrokerStatsItem:
    """One window's figures: the values added in it, their rate per second, the mean value per addition."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"avgpt": float(self.avgpt), "sum": self.sum, "tps": float(self.tps)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BrokerStatsItem:
        r = Reader(obj, path)
        return cls(r.int("sum", 0), _number(r, "tps"), _number(r, "avgpt"))


@dataclass(slots=True)
class BrokerStatsData:
    """VIEW_BROKER_STATS_DATA (315) body."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)

    def to_dict(self) -> dict[str, Any]:
        return {"statsDay": self.stats_day.to_dict(), "statsHour": self.stats_hour.to_dict(),
                "statsMinute": self.stats_minute.to_dict()}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> BrokerStatsData:
        r = Reader(obj, path)
        return cls(*(BrokerStatsItem.from_dict(r.map(key, {}), r.at(key))
                     for key in ("statsMinute", "statsHour", "statsDay")))
