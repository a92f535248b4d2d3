"""KVConfigManager: the name server's namespaced key-value settings (ORDER_TOPIC_CONFIG and the like).

Kept in memory; with a path, written after each change as RocketMQ's kvConfig.json
(``{"configTable": {namespace: {key: value}}}``) and read back at start.
"""

from __future__ import annotations

import json
import logging
import os

log = logging.getLogger(__name__)


class KVConfigManager:
    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is None or not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            data = json.load(f)
        table = data.get("configTable", {}) if isinstance(data, dict) else {}
        self.config_table = {
            str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items() if isinstance(kv, dict)
        }

    def _persist(self) -> None:
        if self.path is None:
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"configTable": self.config_table}, f, indent=4, sort_keys=True)
        os.replace(tmp, self.path)

    def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        old = self.config_table.setdefault(namespace, {}).get(key)
        self.config_table[namespace][key] = value
        log.info("%s KV config %s/%s=%s", "updated" if old is not None else "created", namespace, key, value)
        self._persist()

    def delete_kv_config(self, namespace: str, key: str) -> None:
        kv = self.config_table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            # (An emptied namespace stays, as RocketMQ's does: listing it answers an empty table.)
            log.info("deleted KV config %s/%s", namespace, key)
            self._persist()

    def get_kv_config(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def get_kv_list_by_namespace(self, namespace: str) -> dict[str, str] | None:
        kv = self.config_table.get(namespace)
        return None if kv is None else dict(kv)
