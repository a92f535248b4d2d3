"""RecallMessage over the remoting protocol (RocketMQ 5's DefaultMQProducer.recallMessage and RECALL_MESSAGE),
against a real cluster: a timer message's send answers with a recall handle, a recall before its time keeps it
from ever being delivered, and the broker's refusals (due already, another topic, recall turned off) carry
RocketMQ 5.5.0's codes and remarks."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pull_helpers import pull_queues

from pocketmq.client import Message, MQBrokerException, MQClientException, Producer, PullConsumer, SendStatus
from pocketmq.common.recall_message_handle import decode_handle
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.codes import ResponseCode
from tests.client.test_client_timer import now_ms

_names = itertools.count()
PRECISION = 50


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path, timer_precision_ms=PRECISION) as c:
        yield c


def timed(topic: str, body: bytes, deliver: int) -> Message:
    m = Message(topic, body)
    m.deliver_time_ms = deliver
    return m


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_a_recalled_timer_message_is_never_delivered(cluster: EmbeddedCluster, protocol: str) -> None:
    n = next(_names)
    async with Producer("PG", cluster.namesrv_addr, instance_name=f"p{n}", protocol=protocol) as producer, \
            PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{n}", protocol=protocol) as consumer:
        deliver = now_ms() + 3_000  # (the route lookup, two sends and the recall before it, on a loaded machine too)
        recalled = await producer.send(timed("Recall", b"recalled", deliver))
        kept = await producer.send(timed("Recall", b"kept", deliver))
        plain = await producer.send(Message("Recall", b"plain"))
        assert {r.send_status for r in (recalled, kept, plain)} == {SendStatus.SEND_OK}
        assert plain.recall_handle is None  # only a timer message has one
        assert recalled.recall_handle is not None
        handle = decode_handle(recalled.recall_handle)
        # The slot a delivery time falls in, an exact multiple one slot earlier (HookUtils), +1: RocketMQ's handle.
        slot = (deliver - 1) // PRECISION * PRECISION
        assert (handle.topic, handle.broker_name, handle.timestamp_str, handle.message_id) == (
            "Recall", "broker-a", str(slot + 1), recalled.msg_id)
        assert await producer.recall_message("Recall", recalled.recall_handle) == recalled.msg_id
        deadline = time.monotonic() + 30
        while b"kept" not in [m.body for m in await pull_queues(consumer, "Recall")]:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await asyncio.sleep(3 * PRECISION / 1000)  # (the recalled one would come in the same slot)
        assert sorted(m.body for m in await pull_queues(consumer, "Recall")) == [b"kept", b"plain"]
        # Due already: the broker cannot take it back.
        with pytest.raises(MQBrokerException) as due:
            await producer.recall_message("Recall", kept.recall_handle)
        assert (due.value.code, due.value.remark) == (ResponseCode.ILLEGAL_OPERATION,
                                                      "recall failed, timestamp invalid")


async def test_recall_refusals(cluster: EmbeddedCluster) -> None:
    async with Producer("PG", cluster.namesrv_addr, instance_name=f"p{next(_names)}") as producer:
        sent = await producer.send(timed("RecallR", b"x", now_ms() + 60_000))
        await producer.send(Message("RecallOther", b"make the topic"))
        with pytest.raises(MQBrokerException) as other:
            await producer.recall_message("RecallOther", sent.recall_handle)
        assert (other.value.code, other.value.remark) == (ResponseCode.ILLEGAL_OPERATION,
                                                          "recall failed, topic not match")
        with pytest.raises(MQClientException, match="recall handle is invalid"):
            await producer.recall_message("RecallR", "not a handle")
        with pytest.raises(MQClientException, match="topic is not supported"):
            await producer.recall_message("%RETRY%G", sent.recall_handle)
        broker = cluster.broker
        assert broker is not None
        broker.broker_config.recall_message_enable = False  # (RocketMQ's default)
        with pytest.raises(MQBrokerException) as off:
            await producer.recall_message("RecallR", sent.recall_handle)
        assert (off.value.code, off.value.remark) == (ResponseCode.NO_PERMISSION,
                                                      "recall failed, operation is forbidden")
