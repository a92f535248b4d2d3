"""RocketMQ 5's per-group retry policy (``SubscriptionGroupConfig.groupRetryPolicy``): how long a consumer
waits before a failed message is consumed again. RocketMQ's proxy hands it to the 5.x SDKs in their Settings
(exponential or customized backoff) and uses it for the delay of a message whose auto renewal ran out.

The JSON shape is fastjson's of RocketMQ's beans: ``{"type": "CUSTOMIZED"|"EXPONENTIAL", "exponentialRetryPolicy":
{"initial", "max", "multiplier"}, "customizedRetryPolicy": {"next": [ms, ...]}}``, a member left out when null;
a missing field takes the bean's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .body_codec import Reader
from .errors import BodyError

GROUP_RETRY_POLICY_TYPES = ("EXPONENTIAL", "CUSTOMIZED")
# CustomizedRetryPolicy's default: 1s 5s 10s 30s 1m 2m ... 10m 20m 30m 1h 2h (the 4.x delay levels 1-18).
DEFAULT_NEXT = tuple(s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200,
                                        1800, 3600, 7200))


@dataclass(frozen=True, slots=True)
class ExponentialRetryPolicy:
    """RocketMQ's ExponentialRetryPolicy: ``initial`` ms, times ``multiplier`` each attempt, at most ``max``."""

    initial: int = 5000
    max: int = 7_200_000
    multiplier: int = 2

    def next_delay_duration(self, reconsume_times: int) -> int:
        n = min(max(reconsume_times, 0), 32)
        return int(min(self.max, self.initial * self.multiplier ** n))

    def to_dict(self) -> dict[str, Any]:
        return {"initial": self.initial, "max": self.max, "multiplier": self.multiplier}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ExponentialRetryPolicy:
        r = Reader(obj, path)
        return cls(r.int("initial", 5000), r.int("max", 7_200_000), r.int("multiplier", 2))


@dataclass(frozen=True, slots=True)
class CustomizedRetryPolicy:
    """RocketMQ's CustomizedRetryPolicy: the delays ``next`` in ms, one per attempt, the last one repeated."""

    next: tuple[int, ...] = DEFAULT_NEXT

    def next_delay_duration(self, reconsume_times: int) -> int:
        # Index reconsumeTimes + 2, as RocketMQ: the 4.x delay level of a first retry was 3.
        steps = self.next or DEFAULT_NEXT  # (RocketMQ fails on an empty list; the default delays instead)
        return steps[min(max(reconsume_times, 0) + 2, len(steps) - 1)]

    def to_dict(self) -> dict[str, Any]:
        return {"next": list(self.next)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> CustomizedRetryPolicy:
        r = Reader(obj, path)
        return cls(tuple(r.int_list("next", DEFAULT_NEXT)))


RetryPolicy = ExponentialRetryPolicy | CustomizedRetryPolicy


@dataclass(frozen=True, slots=True)
class GroupRetryPolicy:
    """RocketMQ's GroupRetryPolicy: the ``type`` in force and each type's policy, null until one is given."""

    type: str = "CUSTOMIZED"
    exponential_retry_policy: ExponentialRetryPolicy | None = None
    customized_retry_policy: CustomizedRetryPolicy | None = None

    def get_retry_policy(self, default: RetryPolicy | None = None) -> RetryPolicy:
        """GroupRetryPolicy.getRetryPolicy: the policy of the type; when that is null (for an exponential type
        too), ``default``, itself the default customized policy unless given."""
        if self.type == "EXPONENTIAL" and self.exponential_retry_policy is not None:
            return self.exponential_retry_policy
        if self.type == "CUSTOMIZED" and self.customized_retry_policy is not None:
            return self.customized_retry_policy
        return default if default is not None else CustomizedRetryPolicy()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.exponential_retry_policy is not None:
            out["exponentialRetryPolicy"] = self.exponential_retry_policy.to_dict()
        if self.customized_retry_policy is not None:
            out["customizedRetryPolicy"] = self.customized_retry_policy.to_dict()
        return out

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> GroupRetryPolicy:
        r = Reader(obj, path)
        kind = r.enum("type", GROUP_RETRY_POLICY_TYPES, "CUSTOMIZED")
        if kind not in GROUP_RETRY_POLICY_TYPES:
            raise BodyError(r.at("type"), f"{kind!r} is not one of {', '.join(GROUP_RETRY_POLICY_TYPES)}")
        exponential = r.map("exponentialRetryPolicy", None)
        customized = r.map("customizedRetryPolicy", None)
        return cls(
            kind,
            None if exponential is None else ExponentialRetryPolicy.from_dict(exponential,
                                                                              r.at("exponentialRetryPolicy")),
            None if customized is None else CustomizedRetryPolicy.from_dict(customized, r.at("customizedRetryPolicy")),
        )
