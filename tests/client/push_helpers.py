"""Push-consumer test support: a fast cluster, topics with N queues, consumers with millisecond timers, and a
consumer "process" (its own event loop in a thread) that can be killed without shutting down."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from typing import Any

from pocketmq.client import Message, Producer, PushConsumer
from pocketmq.remoting.body import TopicConfig

_names = itertools.count()

# Broker settings for push tests: silent clients expire within a second, delay levels in milliseconds.
FAST_BROKER: dict[str, Any] = {
    "channel_expired_timeout": 1.0,
    "client_housekeeping_interval": 0.1,
    "rebalance_lock_max_live_time": 1.0,
    "message_delay_level": "10ms 20ms 30ms 40ms 50ms 60ms 70ms 80ms",
    "flush_consumer_offset_interval": 0.2,
}

# Consumer settings: every timer in tens of milliseconds.
FAST_CONSUMER: dict[str, Any] = {
    "rebalance_interval": 0.2,
    "heartbeat_broker_interval": 0.1,
    "poll_name_server_interval": 0.2,
    "persist_consumer_offset_interval": 0.1,
    "pull_time_delay_when_exception": 0.05,
    "lock_interval": 0.1,
    "lock_max_live_time": 0.5,
    "unlock_delay": 0.05,
    "local_retry_delay": 0.05,
}


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


async def create_topic(cluster: Any, topic: str, queues: int) -> None:
    """Create ``topic`` with ``queues`` read/write queues and wait until the name server routes it."""
    cluster.broker.topic_config_manager.update_topic_config(TopicConfig(topic, queues, queues, 6))
    await cluster.broker.register_broker_all()


def make_consumer(cluster: Any, group: str, **options: Any) -> PushConsumer:
    settings = dict(FAST_CONSUMER)
    settings.setdefault("instance_name", unique("c"))
    settings.update(options)
    return PushConsumer(group, cluster.namesrv_addr, **settings)


def make_producer(cluster: Any, **options: Any) -> Producer:
    """A producer whose heartbeats come within FAST_BROKER's 1 s channel expiry: one living longer than that on a
    loaded machine (sends slowed down) had the broker expire it and close its connection under its sends."""
    group = unique("PG")
    settings: dict[str, Any] = {"instance_name": unique("p"), "heartbeat_broker_interval": 0.2}
    settings.update(options)
    return Producer(group, cluster.namesrv_addr, **settings)


async def send_many(cluster: Any, topic: str, bodies: list[bytes], queues: int, batch: int = 50) -> None:
    """Spread ``bodies`` over the topic's queues in batches (fast), in order within each queue."""
    async with make_producer(cluster) as producer:
        mqs = await producer.fetch_publish_message_queues(topic)
        assert len(mqs) == queues
        for n, i in enumerate(range(0, len(bodies), batch)):
            await producer.send_batch([Message(topic, b) for b in bodies[i : i + batch]], mqs[n % len(mqs)])
    # A send is answered once stored; its consume-queue entry comes after, on the store's dispatch thread. Callers
    # read the queues' max offsets next (a seek checks its offset against them): a loaded machine's dispatch had
    # not yet reached the second batch, and a seek to 15 of 20 messages was refused ("max offset = 10").
    for broker in cluster.brokers:
        assert await asyncio.to_thread(broker.store.wait_dispatched, 30.0)


def committed(cluster: Any, group: str, topic: str, queues: int) -> list[int]:
    om = cluster.broker.consumer_offset_manager
    return [om.query_offset(group, topic, q) for q in range(queues)]


def max_offsets(cluster: Any, topic: str, queues: int) -> list[int]:
    return [cluster.store.get_max_offset_in_queue(topic, q) for q in range(queues)]


class ConsumerProcess:
    """A PushConsumer on an event loop of its own, in a thread: like a separate process, it can die (every
    task cancelled, no shutdown, no UNREGISTER_CLIENT) while its connections stay open, so only the broker's
    channel expiry tells the group it is gone."""

    def __init__(self, consumer: PushConsumer) -> None:
        self.consumer = consumer
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.dead = False

    def call(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn()`` (a coroutine factory) on the process's loop; awaitable from the test's loop."""

        async def run() -> Any:
            return await fn()

        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    async def start(self) -> None:
        await self.call(self.consumer.start)

    async def shutdown(self) -> None:
        if not self.dead:
            await self.call(self.consumer.shutdown)
        self._stop_loop()

    async def kill(self) -> None:
        """Cancel everything the consumer runs, as a dying process would stop, and leave the sockets open."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        await self.call(cancel_all)
        self.dead = True

    def _stop_loop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    async def close_dead(self) -> None:
        """After a kill: close the sockets it left open (test cleanup only)."""
        await self.call(self.consumer.instance.mq_client_api.shutdown)
        self._stop_loop()
