"""How a BrokerConfig setting is declared: its ``broker.conf`` key, its unit in the file, and the store attribute
it feeds, kept in the field's metadata so that reading, printing, checking and UPDATE_BROKER_CONFIG all work from
the one declaration. Shared by the classes BrokerConfig is assembled from (broker_identity.py,
netty_server_config.py, message_store_config_keys.py, config.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def _key(name: str, unit: str | None = None) -> Any:
    """Declare the properties-file key of a field (and ``unit="ms"`` when the file value is milliseconds)."""
    return {"key": name, "unit": unit}


def _f(default: Any, key: str, unit: str | None = None, store: str | None = None) -> Any:
    meta = _key(key, unit)
    if store is not None:
        meta["store"] = store  # the MessageStoreConfig attribute this value feeds
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)
