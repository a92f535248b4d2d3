"""Client lifecycles against a real name server and broker: a shutdown called from a consumer's own listener, a
shutdown or a start whose caller is cancelled half-way (as asyncio.wait_for does at its timeout), and a producer
started again after a shutdown. Each must end with the client gone from its group and its instance closed:
nothing left heartbeating, holding queues or sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from push_helpers import committed, create_topic, make_consumer, send_many, unique

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    Message,
    MQClientException,
    Producer,
    PullConsumer,
    SendStatus,
    SimpleConsumer,
    TransactionProducer,
)
from pocketmq.client.impl.mq_client_instance import MQClientInstance
from pocketmq.remoting.codes import RequestCode

POP = {"client_rebalance": False, "broker_suspend_max_time": 0.5}


def client_tasks(*names: str) -> list[asyncio.Task[Any]]:
    """The tasks of a client: its consume workers and teardown carry its group, its instance's jobs its client id."""
    return [t for t in asyncio.all_tasks() if not t.done() and any(n in t.get_name() for n in names)]


async def assert_gone(cluster: Any, group: str, instance: MQClientInstance, poll: Callable[..., Any]) -> None:
    assert instance.stopped and instance.mq_client_api.remoting_client.closed
    assert group not in instance.consumer_table and group not in instance.producer_table
    broker = cluster.broker
    assert broker.consumer_manager.get_consumer_group_info(group) is None  # UNREGISTER_CLIENT got through
    assert not broker.producer_manager.group_channel_table.get(group)
    await poll(lambda: not client_tasks(group, instance.client_id))


# --- a listener that shuts its own consumer down ("stop after N messages") ------------------------------------


@pytest.mark.parametrize("kind", ["concurrently", "orderly", "pop"])
async def test_a_listener_may_shut_its_consumer_down(push_cluster: Any, poll: Callable[..., Any], kind: str) -> None:
    # The consume pool's shutdown cancelled every worker, the one running the listener that called it too: the
    # shutdown ended there, before the offsets were persisted and the group left, and the consumer stayed a member
    # that held queues and never pulled them.
    topic, group = unique("StopT"), unique("StopG")
    await create_topic(push_cluster, topic, 1)
    await send_many(push_cluster, topic, [f"m{i}".encode() for i in range(5)], 1)
    options: dict[str, Any] = {"consume_thread_max": 1, "consume_from_where": "CONSUME_FROM_FIRST_OFFSET"}
    consumer = make_consumer(push_cluster, group, **options, **(POP if kind == "pop" else {}))
    got: list[bytes] = []
    outcome: list[str] = []
    done: Any = ConsumeOrderlyStatus.SUCCESS if kind == "orderly" else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def listener(msgs: list[Any], context: Any) -> Any:
        got.extend(m.body for m in msgs)
        if len(got) == 3:
            try:
                await consumer.shutdown()
            except BaseException as e:
                outcome.append(f"raised {e!r}")
                raise
            outcome.append("returned")
        return done

    consumer.subscribe(topic, "*")
    if kind == "orderly":
        consumer.register_message_listener_orderly(listener)
    else:
        consumer.register_message_listener(listener)
    await consumer.start()
    instance = consumer.instance
    await poll(lambda: outcome, timeout=20)
    assert outcome == ["returned"]
    await assert_gone(push_cluster, group, instance, poll)
    if kind != "pop":  # (a popping group's offsets are the broker's, moved as it pops)
        # The two messages consumed before are committed; the one whose listener stopped the consumer is not
        # finished, and is delivered again to the group's next consumer.
        assert committed(push_cluster, group, topic, 1) == [2]
    await consumer.shutdown()  # (nothing left to do)


# --- a shutdown whose caller is cancelled ----------------------------------------------------------------------


def make_client(cluster: Any, kind: str, group: str, topic: str) -> Any:
    name = unique("life")
    if kind == "producer":
        return Producer(group, cluster.namesrv_addr, instance_name=name)
    if kind in ("push", "pop"):
        consumer = make_consumer(cluster, group, instance_name=name, **(POP if kind == "pop" else {}))
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        return consumer
    if kind == "lite":
        lite = LitePullConsumer(group, cluster.namesrv_addr, instance_name=name)
        lite.subscribe(topic, "*")
        return lite
    if kind == "simple":
        return SimpleConsumer(group, cluster.namesrv_addr, subscriptions={topic: "*"}, instance_name=name)
    assert kind == "pull"
    return PullConsumer(group, cluster.namesrv_addr, instance_name=name)


@pytest.mark.parametrize("kind", ["producer", "push", "pop", "lite", "simple", "pull"])
async def test_a_shutdown_whose_caller_is_cancelled_still_finishes(
    push_cluster: Any, poll: Callable[..., Any], kind: str
) -> None:
    # A shutdown cut at its first await (a wait_for's timeout comes wherever the shutdown is) left the client looking
    # stopped, so the next shutdown() returned at once, while the instance went on heartbeating for good.
    topic, group = unique("CancelT"), unique("CancelG")
    await create_topic(push_cluster, topic, 2)
    client = make_client(push_cluster, kind, group, topic)
    await client.start()
    if kind == "producer":
        await client.send(Message(topic, b"x"))  # (the broker is known to the instance now)
    instance = client.instance
    shutdown = asyncio.create_task(client.shutdown())
    await asyncio.sleep(0)  # the shutdown runs to its first await
    shutdown.cancel()
    try:
        await shutdown
    except asyncio.CancelledError:
        pass
    await client.shutdown()  # waits for what the cancelled call began
    await assert_gone(push_cluster, group, instance, poll)


# --- a start whose caller is cancelled -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["push", "pop", "transaction", "lite", "simple"])
async def test_a_start_whose_caller_is_cancelled_leaves_nothing_running(
    push_cluster: Any, poll: Callable[..., Any], kind: str
) -> None:
    # The consumer was registered (running, its rebalance woken) before start()'s first await: cancelled there, it
    # went on consuming in the background, and could be neither started again nor, with running set, noticed.
    topic, group = unique("StartT"), unique("StartG")
    await create_topic(push_cluster, topic, 2)
    if kind == "transaction":
        client: Any = TransactionProducer(group, push_cluster.namesrv_addr, instance_name=unique("life"))
    else:
        client = make_client(push_cluster, kind, group, topic)
    start = asyncio.create_task(client.start())
    await asyncio.sleep(0)  # start() runs to its first await, past the registration
    instance = client.instance
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    # (the teardown ends in its own task: the cancelled start did not wait for it)
    await poll(lambda: instance.stopped and instance.mq_client_api.remoting_client.closed)
    await assert_gone(push_cluster, group, instance, poll)
    if kind == "lite":  # as after any failed start: a lite pull consumer shut down is not started again
        with pytest.raises(MQClientException, match="maybe started once"):
            await client.start()
        return
    await client.start()  # as after a start that failed
    if kind == "transaction":
        assert (await client.send(Message(topic, b"again"))).send_status is SendStatus.SEND_OK
    await client.shutdown()


async def test_a_cancelled_start_does_not_wait_for_its_teardown(push_cluster: Any, poll: Callable[..., Any]) -> None:
    # wait_for(start(), 0.5) against a broker that took the connection and did not answer raised only once the
    # teardown had given up on its UNREGISTER_CLIENT too, seconds past its timeout. A broker that answers the
    # name server's routes but not HEART_BEAT and UNREGISTER_CLIENT is stood in for by replacing those two
    # handlers of the real broker with ones that never answer (a half-hung broker is not made for real here).
    topic, group = unique("StuckT"), unique("StuckG")
    await create_topic(push_cluster, topic, 2)
    processor = push_cluster.broker.remoting_server._processors[int(RequestCode.HEART_BEAT)].__self__
    handlers = dict(processor.handlers)
    never = asyncio.Event()

    async def silent(channel: Any, request: Any) -> Any:
        await never.wait()

    processor.handlers[RequestCode.HEART_BEAT] = processor.handlers[RequestCode.UNREGISTER_CLIENT] = silent
    consumer = make_client(push_cluster, "push", group, topic)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(consumer.start(), 0.5)
        assert consumer.impl._teardown.active  # still waiting for the silent UNREGISTER_CLIENT, in its own task
    finally:
        processor.handlers.update(handlers)
        never.set()
    await consumer.shutdown()  # waits for that teardown
    await poll(lambda: not consumer.impl._teardown.active and not client_tasks(group))


# --- a producer started again ----------------------------------------------------------------------------------


async def test_a_producer_started_again_sends_at_once(push_cluster: Any) -> None:
    # The routes learned before the shutdown outlived it: the new instance found the topic's route cached, had no
    # address for its broker, and failed its first sends ("The broker[broker-a] not exist").
    topic = unique("AgainT")
    await create_topic(push_cluster, topic, 2)
    producer = Producer(unique("AgainPG"), push_cluster.namesrv_addr, instance_name=unique("life"))
    async with producer:
        await producer.send(Message(topic, b"before"))
    async with producer:
        result = await producer.send(Message(topic, b"after"))
    assert result.send_status is SendStatus.SEND_OK
