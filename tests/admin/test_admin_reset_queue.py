"""MQAdminExt.reset_offset_by_queue_id (RocketMQ 5's resetOffsetByQueueId): one queue of a group set, through
a running push consumer or with none running, over real sockets in both wire protocols."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pocketmq.client import Message, MessageQueue, Producer, PushConsumer
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.consumer.message_listener import ConsumeConcurrentlyStatus
from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import ResponseCode
from tests.admin.test_admin_api import routed

TOPIC, GROUP = "TopicResetQ", "GResetQ"


async def test_a_running_push_consumer_consumes_again_the_reset_queue_alone(
    cluster2: Any, admin: MQAdminExt, protocol: str, poll: Any
) -> None:
    # (the audit's ResetQ: 8 messages in each of 4 queues, all consumed, then queue 0 reset to 6.) Apache RocketMQ
    # 5.5.0 consumed {0: 2} again; pocketmq reset the whole topic to time 0 and consumed {0: 8, 1: 8, 2: 8, 3: 8}.
    broker = cluster2.brokers[0]
    await admin.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=broker.address)
    await routed(cluster2, TOPIC, 1)
    async with Producer("PGResetQ", cluster2.namesrv_addr, protocol=protocol) as producer:
        for queue_id in range(4):
            for i in range(8):
                await producer.send(Message(TOPIC, b"%d" % i), MessageQueue(TOPIC, "broker-a", queue_id))
    assert await cluster2.wait_dispatched()
    seen: list[tuple[int, int]] = []

    async def listener(msgs: list[Any], ctx: Any) -> ConsumeConcurrentlyStatus:
        seen.extend((m.queue_id, m.queue_offset) for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, cluster2.namesrv_addr, protocol=protocol,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET", reset_offset_settle_time=0.05,
                            persist_consumer_offset_interval=0.05)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    om = broker.consumer_offset_manager

    def stored() -> dict[int, int]:
        return {q: om.query_offset(GROUP, TOPIC, q) for q in range(4)}

    await consumer.start()
    try:
        await poll(lambda: len(seen) == 32 and stored() == {0: 8, 1: 8, 2: 8, 3: 8})
        before = len(seen)
        result = await admin.reset_offset_by_queue_id(broker.address, GROUP, TOPIC, 0, 6)
        assert result == {MessageQueue(TOPIC, "broker-a", 0): 6}
        await poll(lambda: len(seen) >= before + 2 and stored() == {0: 8, 1: 8, 2: 8, 3: 8})
        assert Counter(q for q, _ in seen[before:]) == {0: 2}
        assert sorted(seen[before:]) == [(0, 6), (0, 7)]
    finally:
        await consumer.shutdown()


@pytest.mark.parametrize("protocol", ["rocketmq"])
async def test_with_no_consumer_running_the_stored_offsets_end_as_rocketmq_leaves_them(
    cluster2: Any, admin: MQAdminExt
) -> None:
    # (the audit's AdminAudit, group offline.) Apache 5.5.0: queue 0 -> 6 SUCCESS, 999 and -5 refused with the
    # offset left at 6; pocketmq answered CONSUMER_NOT_ONLINE, then stored 999, then 0. The admin commits the
    # offset before it asks for the reset: a commit the broker ignores while the queue's earlier reset is pending.
    broker = cluster2.brokers[0]
    await admin.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=broker.address)
    await routed(cluster2, TOPIC, 1)
    async with Producer("PGResetQ", cluster2.namesrv_addr) as producer:
        for i in range(8):
            await producer.send(Message(TOPIC, b"%d" % i), MessageQueue(TOPIC, "broker-a", 0))
    assert await cluster2.wait_dispatched()
    om = broker.consumer_offset_manager
    await admin.create_and_update_subscription_group_config(broker.address, SubscriptionGroupConfig(GROUP))
    for queue_id in range(4):
        om.commit_offset("test", GROUP, TOPIC, queue_id, 8 if queue_id == 0 else 0)

    def stored() -> dict[int, int]:
        return {q: om.query_offset(GROUP, TOPIC, q) for q in range(4)}

    assert await admin.reset_offset_by_queue_id(broker.address, GROUP, TOPIC, 0, 6) == {
        MessageQueue(TOPIC, "broker-a", 0): 6
    }
    assert stored() == {0: 6, 1: 0, 2: 0, 3: 0}
    with pytest.raises(MQBrokerException) as refused:
        await admin.reset_offset_by_queue_id(broker.address, GROUP, TOPIC, 0, 999)
    assert (refused.value.response_code, refused.value.remark) == (
        ResponseCode.SYSTEM_ERROR, "Target offset 999 not in consume queue range [0-8]"
    )
    assert stored() == {0: 6, 1: 0, 2: 0, 3: 0}
    # A negative offset is refused before anything is sent (Apache's admin commits it, then the broker refuses the
    # reset): here on queue 1, which no reset holds, so that a commit would have gone in.
    with pytest.raises(MQClientException, match="an offset is 0 or more"):
        await admin.reset_offset_by_queue_id(broker.address, GROUP, TOPIC, 1, -5)
    assert stored() == {0: 6, 1: 0, 2: 0, 3: 0}
