"""An orderly consumer shutting down while a peer of its group leaves: the peer's departure makes the broker
notify the survivor, whose rebalance then changes the process-queue table its own shutdown walks."""

from __future__ import annotations

from typing import Any

import pytest
from push_helpers import create_topic, make_consumer, unique

from pocketmq.client import ConsumeOrderlyStatus

QUEUES = 8


@pytest.mark.parametrize("round_", range(2))  # failed 5 of 5 before the fix; a second round for luck
async def test_orderly_shutdown_while_a_peer_leaves_unlocks_and_unregisters(push_cluster, poll, round_) -> None:
    topic, group = unique("OrderLeaveT"), unique("OrderLeaveG")
    await create_topic(push_cluster, topic, QUEUES)

    async def on_messages(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
        return ConsumeOrderlyStatus.SUCCESS

    def orderly() -> Any:
        c = make_consumer(push_cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        c.subscribe(topic, "*")
        c.register_message_listener_orderly(on_messages)
        return c

    def held(c: Any) -> int:
        return sum(1 for mq in c.assigned_queues() if mq.topic == topic)

    a, b = orderly(), orderly()
    async with a, b:  # exits b first: a is told at once, and rebalances during its own shutdown
        await poll(lambda: held(a) == held(b) == QUEUES // 2, timeout=10)
    broker = push_cluster.broker
    # Everything a held was given back at once, not left to expire (60 s by default).
    assert broker.rebalance_lock_manager.mq_lock_table.get(group, {}) == {}
    await poll(lambda: broker.consumer_manager.get_consumer_group_info(group) is None)
