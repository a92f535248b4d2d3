"""ClusterService, the proxy's view of the brokers: what it keeps of a group's config when no broker can be asked."""

from __future__ import annotations

import asyncio
from typing import Any

from pocketmq.proxy.config import ProxyMode
from pocketmq.remoting.client_body import SubscriptionGroupConfig

from .conftest import create_topic, start_proxy


async def test_a_group_config_that_cannot_be_read_again_stays_what_it_was(cluster: Any) -> None:
    # Over sockets; a request timeout no answer can meet makes every broker unreachable for a while.
    proxy = await start_proxy(cluster, proxy_mode=ProxyMode.CLUSTER, route_cache_seconds=0.1)
    try:
        await create_topic(cluster, "Ordered")
        cluster.broker.subscription_group_manager.update_subscription_group_config(
            SubscriptionGroupConfig("OrderedGroup", consume_message_orderly=True))

        async def read(timeout: float) -> tuple[Any, Any]:
            service = proxy.cluster
            route = await service.route("Ordered")  # (the route itself read with the usual timeout)
            assert route.broker_datas
            proxy.config.request_timeout, usual = timeout, proxy.config.request_timeout
            try:
                asked = await service.subscription_group_config("OrderedGroup", "Ordered")
            finally:
                proxy.config.request_timeout = usual
            return asked, service.cached_group_config("OrderedGroup")

        asked, kept = await proxy.call(read(3.0))
        assert asked.consume_message_orderly and kept.consume_message_orderly
        await asyncio.sleep(0.2)  # past the cache time
        asked, kept = await proxy.call(read(1e-6))
        assert asked is not None and asked.consume_message_orderly
        assert kept is not None and kept.consume_message_orderly
    finally:
        await proxy.stop()
