"""SubscriptionGroupManager: consumer-group settings and ``subscriptionGroup.json``."""

from __future__ import annotations

import logging
import os
from typing import Any

from pocketmq.common import mix_all
from pocketmq.common import topic_validator as tv
from pocketmq.remoting.body import DataVersion, Reader
from pocketmq.remoting.client_body import SubscriptionGroupConfig

from .config import BrokerConfig
from .config_file import ConfigManager

log = logging.getLogger(__name__)

# Groups SubscriptionGroupManager.init() creates in RocketMQ 4.9.8 (name, consumeBroadcastEnable).
_BUILTIN_GROUPS = (
    (mix_all.TOOLS_CONSUMER_GROUP, True),
    (mix_all.FILTERSRV_CONSUMER_GROUP, True),
    (mix_all.SELF_TEST_CONSUMER_GROUP, True),
    (mix_all.ONS_HTTP_PROXY_GROUP, True),
    (mix_all.CID_ONSAPI_PULL_GROUP, True),
    (mix_all.CID_ONSAPI_PERMISSION_GROUP, True),
    (mix_all.CID_ONSAPI_OWNER_GROUP, True),
)


class SubscriptionGroupManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "subscriptionGroup.json"))
        self.broker_config = broker_config
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion()
        for name, broadcast in _BUILTIN_GROUPS:
            self.subscription_group_table[name] = SubscriptionGroupConfig(name, consume_broadcast_enable=broadcast)

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; unknown groups are created when autoCreateSubscriptionGroup (or CID_RMQ_SYS_)."""
        cfg = self.subscription_group_table.get(group)
        if cfg is not None:
            return cfg
        if not (self.broker_config.auto_create_subscription_group or mix_all.is_sys_consumer_group(group)):
            return None
        if tv.is_group_illegal(group):
            return None
        cfg = SubscriptionGroupConfig(group)
        self.subscription_group_table[group] = cfg
        log.info("auto-created subscription group %s", group)
        self._config_changed()
        return cfg

    def contains_subscription_group(self, group: str) -> bool:
        """Whether the group exists, never creating it (RocketMQ 5's containsSubscriptionGroup)."""
        return bool(group) and group in self.subscription_group_table

    def update_subscription_group_config(self, cfg: SubscriptionGroupConfig) -> None:
        old = self.subscription_group_table.get(cfg.group_name)
        self.subscription_group_table[cfg.group_name] = cfg
        log.info("%s subscription group %s", "updated" if old is not None else "created", cfg)
        self._config_changed()

    def delete_subscription_group_config(self, group: str) -> bool:
        if self.subscription_group_table.pop(group, None) is None:
            return False
        self._config_changed()
        return True

    def _config_changed(self) -> None:
        self.data_version.next_version()
        self.persist_soon()

    def encode(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_dict(),
            "subscriptionGroupTable": {n: c.to_dict() for n, c in self.subscription_group_table.items()},
        }

    def decode(self, data: Any) -> None:
        r = Reader(data)
        table = r.object_map("subscriptionGroupTable", SubscriptionGroupConfig, {})
        self.subscription_group_table.update(table)
        dv = r.map("dataVersion", None)
        if dv is not None:
            self.data_version = DataVersion.from_dict(dv, "dataVersion")
