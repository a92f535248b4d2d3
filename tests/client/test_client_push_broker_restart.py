"""A broker restarts under running push consumers: the client heartbeats as soon as it reconnects, so the new
broker knows the group before the first pull arrives (RocketMQ waits for the next periodic heartbeat, and its
pulls are answered SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist", until then)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

from push_helpers import FAST_BROKER, create_topic, make_consumer, make_producer, unique

from pocketmq import embedded
from pocketmq.broker.broker_controller import BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.client import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus, Message


async def restart_broker(cluster: Any, while_down: Callable[[BrokerConfig], None] | None = None) -> None:
    """Shut the broker down and start a new one on the same port and store (``while_down`` sees the store
    between the two)."""
    old = cluster.broker
    port = old.port
    await old.shutdown()
    if while_down is not None:
        while_down(old.broker_config)
    cluster.broker = BrokerController(BrokerConfig(**{**vars(old.broker_config), "listen_port": port}))
    await cluster.broker.start()


async def test_consumers_pull_again_right_after_a_broker_restart(tmp_path, poll, caplog) -> None:
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER) as cluster:
        topic, group = unique("RestartT"), unique("RestartG")
        await create_topic(cluster, topic, 2)
        got: list[bytes] = []

        async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
            got.extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        # The periodic heartbeat is RocketMQ's 30 s: only the one on reconnecting can reach the new broker.
        consumer = make_consumer(cluster, group, heartbeat_broker_interval=30.0,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(on_messages)
        async with consumer:
            await poll(lambda: sum(q.topic == topic for q in consumer.assigned_queues()) == 2, timeout=10)
            async with make_producer(cluster) as producer:
                await producer.send(Message(topic, b"before"))
                await poll(lambda: got == [b"before"], timeout=10)
                await restart_broker(cluster)
                caplog.clear()
                with caplog.at_level(logging.WARNING, logger="pocketmq.client"):
                    await producer.send(Message(topic, b"after"), timeout=5)
                    await poll(lambda: got == [b"before", b"after"], timeout=10)  # (before the periodic heartbeat)
        refused = [r.getMessage() for r in caplog.records if "group info not exist" in r.getMessage()]
        assert refused == []


async def test_offsets_a_restarted_broker_lost_are_sent_again(tmp_path, poll) -> None:
    """A broker that restarts without the offsets it had not flushed (killed -9 between its flushes): an orderly
    consumer's idle queue has nothing new to commit and its pulls carry no offset, so only the persist can put the
    offset back; it sends a broker's offsets again once connected to it anew (RocketMQ's client sends every
    offset at each persist). Without it, a crash of the consumer then consumes everything again."""
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER) as cluster:
        topic, group = unique("LostOffsetT"), unique("LostOffsetG")
        await create_topic(cluster, topic, 1)
        got: list[bytes] = []

        async def on_messages(msgs: list[Any], context: Any) -> ConsumeOrderlyStatus:
            got.extend(m.body for m in msgs)
            return ConsumeOrderlyStatus.SUCCESS

        consumer = make_consumer(cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_message_listener_orderly(on_messages)
        async with consumer:
            async with make_producer(cluster) as producer:
                for i in range(3):
                    await producer.send(Message(topic, b"m%d" % i))
            await poll(lambda: len(got) == 3, timeout=10)
            offsets = cluster.broker.consumer_offset_manager
            await poll(lambda: offsets.query_offset(group, topic, 0) == 3, timeout=10)

            def lose_the_offset(config: BrokerConfig) -> None:  # (what it had flushed before the consumer's)
                path = os.path.join(config.config_dir, "consumerOffset.json")
                with open(path) as f:
                    saved = json.load(f)
                saved["offsetTable"][f"{topic}@{group}"] = {"0": 0}
                with open(path, "w") as f:
                    json.dump(saved, f)

            await restart_broker(cluster, lose_the_offset)
            assert cluster.broker.consumer_offset_manager.query_offset(group, topic, 0) == 0
            await poll(lambda: cluster.broker.consumer_offset_manager.query_offset(group, topic, 0) == 3, timeout=10)
        assert got == [b"m0", b"m1", b"m2"]
