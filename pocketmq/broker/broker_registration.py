"""A broker's registration with its name servers: RocketMQ's BrokerController.registerBrokerAll and
doRegisterBrokerAll, with pocketmq's topic deltas (a name server that acknowledged a version gets the changes
since)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pocketmq.remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pocketmq.remoting.codes import PermName

from .broker_outer_api import BrokerIdentity, RegisterResult

if TYPE_CHECKING:
    from .broker_controller import BrokerController


class BrokerRegistration:
    """REGISTER_BROKER with every name server, periodically and right after a topic change."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        # One registration at a time, each with a snapshot taken when its turn comes, so a name server never
        # sees an older topic table after a newer one.
        self.lock = asyncio.Lock()
        self.last_results: list[RegisterResult] = []
        # Per name server, the topic data version it acknowledged last: the base of the next delta.
        self.acked_versions: dict[str, DataVersion] = {}
        self._scheduled = False
        self.after_change: asyncio.Task[None] | None = None  # (an auto-creating send waits for it)

    def identity(self) -> BrokerIdentity:
        c = self.controller
        bc = c.broker_config
        return BrokerIdentity(bc.broker_cluster_name, bc.broker_name, bc.broker_id, c.address)

    def _advertised(self, table: dict[str, TopicConfig]) -> dict[str, TopicConfig]:
        perm = self.controller.broker_config.broker_permission
        if PermName.is_readable(perm) and PermName.is_writeable(perm):
            return table
        # A read-only (or write-only) broker advertises every topic with its own permission applied.
        return {name: _with_perm(tc, tc.perm & perm) for name, tc in table.items()}

    def _registration_wrapper(self) -> TopicConfigSerializeWrapper:
        wrapper = self.controller.topic_config_manager.build_topic_config_serialize_wrapper()
        wrapper.topic_config_table = self._advertised(wrapper.topic_config_table)
        return wrapper

    async def register_all(self, force_full: bool = False) -> list[RegisterResult]:
        """Returns once each name server answered or failed.

        A name server that acknowledged a data version of this process gets only the topics changed since
        (often none: then the registration is a heartbeat); a new or restarted one, one that missed a
        registration or does not speak deltas, gets the whole table, as RocketMQ sends it every time.
        """
        async with self.lock:
            return await self._register_all_locked(force_full)

    async def _register_all_locked(self, force_full: bool) -> list[RegisterResult]:
        addrs = self.controller.broker_config.namesrv_addr_list
        if not addrs:
            return []
        results = list(await asyncio.gather(*(self._register_with(addr, force_full) for addr in addrs)))
        self.last_results = results
        # RocketMQ's doRegisterBrokerAll: the order flags follow the first name server that took the registration
        # (its answer's ORDER_TOPIC_CONFIG table; none there, they stay).
        if (first := next((r for r in results if r.ok), None)) is not None:
            self.controller.topic_config_manager.update_order_topic_config(first.order_topic_config)
        return results

    async def _register_with(self, addr: str, force_full: bool) -> RegisterResult:
        api = self.controller.broker_outer_api
        topics = self.controller.topic_config_manager
        acked = self.acked_versions
        base = None if force_full or not api.speaks_deltas else acked.get(addr)
        changes = topics.changes_since(base.counter) if base is not None else None
        if base is not None and changes is not None:
            changed, deleted = changes
            version = topics.data_version.copy()
            delta = TopicConfigSerializeWrapper(self._advertised(changed), version)
            result = await api.register(addr, self.identity(), await api.encode_body(delta, deleted), base)
            if result.ok and result.delta_accepted:
                acked[addr] = version
                return result
            if not result.ok:
                acked.pop(addr, None)
                return result
        wrapper = self._registration_wrapper()
        result = await api.register(addr, self.identity(), await api.encode_body(wrapper))
        if result.ok:
            acked[addr] = wrapper.data_version
        else:
            acked.pop(addr, None)
        return result

    def on_topic_config_changed(self) -> None:
        # Topic changes reach the name servers right away, not at the next period.
        c = self.controller
        if not c.is_running or self._scheduled or not c.broker_config.namesrv_addr_list:
            return
        self._scheduled = True
        self.after_change = c.tasks.spawn(self._register_after_change(), name="register-after-topic-change")

    async def _register_after_change(self) -> None:
        # The flag stays set until this registration's turn comes: the changes made while it waits for the one
        # in flight ride along in its snapshot. Creating topics in a burst then costs a registration per name
        # server round trip, not one per topic (it was ~0.4 per topic: each one a request the broker encodes
        # and every name server decodes and applies).
        async with self.lock:
            self._scheduled = False
            await self._register_all_locked(False)


def _with_perm(tc: TopicConfig, perm: int) -> TopicConfig:
    return TopicConfig(
        tc.topic_name, tc.read_queue_nums, tc.write_queue_nums, perm, tc.topic_filter_type, tc.topic_sys_flag, tc.order
    )
