"""pocketmq's composition layer: the CLI, an in-process cluster and a pytest plugin.

This is the one package that knows every layer (storage, remoting, namesrv, broker, client). Importing it
loads none of them: pytest imports ``pocketmq.pytest_plugin`` (and so this package) in every run of an
environment where pocketmq is installed, so the cluster classes are looked up on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embedded import EmbeddedCluster, ThreadedCluster

__all__ = ["EmbeddedCluster", "ThreadedCluster"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import embedded

        value = getattr(embedded, name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
