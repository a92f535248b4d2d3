"""pocketmq's composition layer: the CLI, an in-process cluster and a pytest plugin.

This is the one package that knows every layer (storage, remoting, namesrv, broker, client).
"""

from .embedded import EmbeddedCluster, ThreadedCluster

__all__ = ["EmbeddedCluster", "ThreadedCluster"]
