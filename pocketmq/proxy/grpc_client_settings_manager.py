"""GrpcClientSettingsManager: each client's Settings from its Telemetry stream, and the merged Settings the proxy
answers with (the values every SDK waits for before it sends anything)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.group_retry_policy import ExponentialRetryPolicy

from .config import ProxyConfig
from .protocol import load

pb = load()


def _duration(millis: int) -> Any:
    # Durations.fromMillis: seconds and nanos of the same sign (a group's policy may hold a negative delay).
    seconds, rest = divmod(abs(millis), 1000)
    sign = -1 if millis < 0 else 1
    return pb.Duration(seconds=sign * seconds, nanos=sign * rest * 1_000_000)


class GrpcClientSettingsManager:
    """Settings by client id, most recently updated last; at most ``max_clients`` of them, and at most
    ``max_bytes`` in all (the oldest go; the newest always stays)."""

    def __init__(self, config: ProxyConfig, max_clients: int | None = None,
                 group_config: Callable[[str], SubscriptionGroupConfig | None] | None = None) -> None:
        self.config = config
        # The group's broker-side config as last read (its fifo and retries win over the client's values).
        self.group_config = group_config or (lambda group: None)
        self.max_clients = max_clients or 2 * config.max_telemetry_streams
        self.max_bytes = config.max_client_settings_bytes
        self._settings: OrderedDict[str, Any] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._settings)

    def update_client_settings(self, client_id: str, settings: Any) -> None:
        if settings.HasField("subscription"):
            # createDefaultConsumerSettingsBuilder().mergeFrom(settings): the client's own values win.
            merged = self._default_consumer_settings()
            merged.MergeFrom(settings)
            settings = merged
        self._pop(client_id)
        self._settings[client_id] = settings
        self._sizes[client_id] = size = settings.ByteSize()
        self.bytes += size
        while len(self._settings) > 1 and (len(self._settings) > self.max_clients or self.bytes > self.max_bytes):
            self._pop(next(iter(self._settings)))

    def _pop(self, client_id: str) -> Any | None:
        self.bytes -= self._sizes.pop(client_id, 0)
        return self._settings.pop(client_id, None)

    def raw_client_settings(self, client_id: str) -> Any | None:
        return self._settings.get(client_id)

    def client_settings(self, client_id: str) -> Any | None:
        settings = self._settings.get(client_id)
        return None if settings is None else self._merge(settings)

    def remove_client_settings(self, client_id: str) -> Any | None:
        settings = self._pop(client_id)
        return None if settings is None else self._merge(settings)

    def remove_consumer_settings(self, client_id: str) -> None:
        """A consumer gone from the proxy loses its settings (RocketMQ's settings cleaner); a producer's stay."""
        settings = self._settings.get(client_id)
        if settings is not None and settings.client_type in (pb.ClientType.PUSH_CONSUMER,
                                                             pb.ClientType.SIMPLE_CONSUMER):
            self._pop(client_id)

    def _merge(self, settings: Any) -> Any:
        result = pb.Settings()
        result.CopyFrom(settings)
        if result.HasField("publishing"):
            self._merge_producer(result)
        elif result.HasField("subscription"):
            group_config = self.group_config(result.subscription.group.name)
            if group_config is not None:
                self._merge_subscription(result, group_config)
        result.metric.CopyFrom(pb.Metric(on=False))  # no metric collector: the SDKs export nothing
        return result

    def _merge_producer(self, settings: Any) -> None:
        c = self.config
        backoff = settings.backoff_policy
        backoff.max_attempts = c.producer_max_attempts
        backoff.exponential_backoff.CopyFrom(pb.ExponentialBackoff(
            initial=_duration(c.producer_backoff_initial_millis), max=_duration(c.producer_backoff_max_millis),
            multiplier=c.producer_backoff_multiplier))
        settings.publishing.validate_message_type = c.enable_topic_message_type_check
        settings.publishing.max_body_size = c.max_message_size

    def _merge_subscription(self, settings: Any, group_config: SubscriptionGroupConfig | None = None) -> None:
        # mergeSubscriptionData with the group's config (or a default one): the proxy's batch size and long
        # polling, the group's fifo and retries (retryMaxTimes + 1 attempts) with its groupRetryPolicy's backoff.
        c = self.config
        sub = settings.subscription
        sub.receive_batch_size = c.consumer_long_polling_batch_size
        sub.long_polling_timeout.CopyFrom(_duration(c.consumer_max_long_polling_timeout_millis))
        sub.fifo = group_config.consume_message_orderly if group_config is not None else False
        retry_max_times = group_config.retry_max_times if group_config is not None else c.consumer_retry_max_times
        backoff = settings.backoff_policy
        backoff.max_attempts = retry_max_times + 1
        policy = group_config.group_retry_policy if group_config is not None else None
        if policy is not None and policy.type == "EXPONENTIAL":
            # (a null exponential policy is the default exponential one here, unlike getRetryPolicy)
            exponential = policy.exponential_retry_policy or ExponentialRetryPolicy()
            backoff.exponential_backoff.CopyFrom(pb.ExponentialBackoff(
                initial=_duration(exponential.initial), max=_duration(exponential.max),
                multiplier=exponential.multiplier))
            return
        customized = policy.customized_retry_policy if policy is not None else None
        steps = customized.next if customized is not None else c.consumer_customized_backoff_millis
        backoff.customized_backoff.CopyFrom(pb.CustomizedBackoff(next=[_duration(ms) for ms in steps]))

    def _default_consumer_settings(self) -> Any:
        settings = pb.Settings(subscription=pb.Subscription())
        self._merge_subscription(settings)
        return settings
