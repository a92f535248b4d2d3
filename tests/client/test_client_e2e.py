"""The client against the real NamesrvController + BrokerController (skipped while the broker is missing), in
both of its wire protocols: pocketmq's msgpack frames and RocketMQ's native ones (ClientConfig.protocol)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pull_helpers import pull_queues

from pocketmq import embedded
from pocketmq.client import (
    Message,
    MessageExt,
    MessageQueue,
    MQBrokerException,
    MQClientException,
    Producer,
    PullConsumer,
    PullStatus,
    SendStatus,
)
from pocketmq.remoting.wire_protocol import WireProtocol

_names = itertools.count()


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path) as c:
        yield c


@pytest.fixture
async def producer(cluster: Any, protocol: str) -> AsyncIterator[Producer]:
    async with Producer("PG", cluster.namesrv_addr, instance_name=f"p{next(_names)}", protocol=protocol) as p:
        yield p


@pytest.fixture
async def consumer(cluster: Any, protocol: str) -> AsyncIterator[PullConsumer]:
    async with PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{next(_names)}", protocol=protocol) as c:
        yield c


USER_PROPS = {"color": "rød", "n": "42"}


def assert_same(sent: Message, got: MessageExt) -> None:
    assert got.body == sent.body
    assert (got.topic, got.flag, got.tags, got.keys) == (sent.topic, sent.flag, sent.tags, sent.keys)
    assert got.uniq_key == sent.uniq_key
    # Every property the producer sent comes back; the broker adds its region stamp (MSG_REGION, TRACE_ON, as
    # Apache 5's does), the consumer MIN_OFFSET / MAX_OFFSET.
    added = {"MIN_OFFSET", "MAX_OFFSET", "MSG_REGION", "TRACE_ON"}
    assert {k: v for k, v in got.properties.items() if k not in added} == sent.properties
    assert (got.properties["MSG_REGION"], got.properties["TRACE_ON"]) == ("DefaultRegion", "true")


@pytest.mark.both_loops
async def test_every_send_mode_round_trips(cluster: Any, producer: Producer, consumer: PullConsumer) -> None:
    sync_msg = Message("RoundTrip", bytes(range(256)), tags="TagA", keys=["k1", "k2"], properties=USER_PROPS, flag=3)
    big_msg = Message("RoundTrip", b"compressible text " * 1000, tags="Big")  # over 4 KiB: sent compressed
    async_msg = Message("RoundTrip", b"async", tags="TagB")
    oneway_msg = Message("RoundTrip", b"oneway", keys="only-key")
    batch = [Message("RoundTrip", f"batch {i}".encode(), tags="Batch", properties={"i": str(i)}) for i in range(3)]

    results = [await producer.send(sync_msg), await producer.send(big_msg)]
    results.append(await producer.send_async(async_msg))
    await producer.send_oneway(oneway_msg)
    batch_result = await producer.send_batch(batch)
    assert all(r.send_status is SendStatus.SEND_OK for r in [*results, batch_result])
    assert batch_result.msg_id.split(",") == [m.uniq_key for m in batch]
    assert len(batch_result.offset_msg_id.split(",")) == 3

    sent = [sync_msg, big_msg, async_msg, oneway_msg, *batch]
    got: dict[str, MessageExt] = {}
    for _ in range(1500):  # the one-way send may still be on its way
        await cluster.wait_dispatched()
        got = {m.uniq_key: m for m in await pull_queues(consumer, "RoundTrip")}  # type: ignore[misc]
        if len(got) == len(sent):
            break
        await asyncio.sleep(0.02)
    assert set(got) == {m.uniq_key for m in sent}
    for msg in sent:
        assert_same(msg, got[msg.uniq_key])  # type: ignore[index]
    stored_big = got[big_msg.uniq_key]  # type: ignore[index]
    assert stored_big.sys_flag & 0x1 and stored_big.body == big_msg.body  # stored compressed, read back plain
    assert got[sync_msg.uniq_key].offset_msg_id == results[0].offset_msg_id  # type: ignore[index]
    assert got[sync_msg.uniq_key].queue_offset == results[0].queue_offset  # type: ignore[index]
    batch_got = [got[m.uniq_key] for m in batch]  # type: ignore[index]
    assert len({m.queue_id for m in batch_got}) == 1  # one queue, consecutive offsets
    assert [m.queue_offset for m in batch_got] == [batch_result.queue_offset + i for i in range(3)]


async def test_tag_filter(cluster: Any, producer: Producer, consumer: PullConsumer) -> None:
    mq = MessageQueue("Tagged", "broker-a", 0)
    for tags in ["TagA", "TagB", None, "TagA", "TagC"]:
        await producer.send(Message("Tagged", (tags or "none").encode(), tags=tags), mq)
    await cluster.wait_dispatched()
    assert [m.body for m in (await consumer.pull(mq, "TagA || TagB", 0)).msg_found_list] == [b"TagA", b"TagB", b"TagA"]
    assert [m.body for m in (await consumer.pull(mq, "TagC", 0)).msg_found_list] == [b"TagC"]
    assert len((await consumer.pull(mq, "*", 0)).msg_found_list) == 5
    none = await consumer.pull(mq, "TagZ", 0)
    assert none.pull_status is PullStatus.NO_MATCHED_MSG and none.next_begin_offset == 5
    beyond = await consumer.pull(mq, "*", 50)
    assert beyond.pull_status is PullStatus.OFFSET_ILLEGAL and beyond.next_begin_offset == 5


async def test_auto_created_topic(cluster: Any, producer: Producer, consumer: PullConsumer, poll: Callable) -> None:
    with pytest.raises(MQClientException, match="Can not find Message Queue"):
        await consumer.fetch_subscribe_message_queues("MadeBySending")
    result = await producer.send(Message("MadeBySending", b"first"))
    assert result.send_status is SendStatus.SEND_OK and result.message_queue.queue_id < 4

    queues: list[MessageQueue] = []

    async def route_registered() -> None:
        nonlocal queues
        for _ in range(750):  # (under the broker's periodic registration)
            try:
                queues = await consumer.fetch_subscribe_message_queues("MadeBySending")
                return
            except MQClientException:
                await asyncio.sleep(0.02)

    await route_registered()
    assert len(queues) == 4  # TBW102 (8 queues) capped at the producer's defaultTopicQueueNums


async def test_offsets_are_stored_by_the_broker(
    cluster: Any, producer: Producer, consumer: PullConsumer, protocol: str
) -> None:
    mq = MessageQueue("Offsets", "broker-a", 1)
    for i in range(3):
        await producer.send(Message("Offsets", f"m{i}".encode()), mq)
    await cluster.wait_dispatched()
    # A group new to a queue whose messages are all in memory starts at 0 (QUERY_CONSUMER_OFFSET rule).
    assert await consumer.fetch_consume_offset(mq, from_store=True) == 0
    await consumer.update_consume_offset(mq, 2)
    async with PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{next(_names)}", protocol=protocol) as other:
        assert await other.fetch_consume_offset(mq) == 2  # another client of the group reads it
        await other.update_consume_offset(mq, 3, flush=False)
    assert await consumer.fetch_consume_offset(mq, from_store=True) == 3  # persisted at shutdown
    assert (await consumer.min_offset(mq), await consumer.max_offset(mq)) == (0, 3)


async def test_a_cached_offset_is_stored_with_the_next_pull_of_its_queue(
    cluster: Any, producer: Producer, consumer: PullConsumer
) -> None:
    mq, other = MessageQueue("Ride", "broker-a", 0), MessageQueue("Ride", "broker-a", 1)
    for queue in (mq, other):
        await producer.send(Message("Ride", b"m"), queue)
    await cluster.wait_dispatched()
    await consumer.update_consume_offset(mq, 1, flush=False)
    await consumer.pull(other, "*", 0)  # another queue's pull does not carry mq's offset
    assert await consumer.fetch_consume_offset(mq, from_store=True) == 0
    await consumer.update_consume_offset(mq, 1, flush=False)  # (the query refreshed the cache)
    await consumer.pull(mq, "*", 1)  # no persist(): the offset rides on this pull
    assert await consumer.fetch_consume_offset(mq, from_store=True) == 1


async def test_seek_by_timestamp(cluster: Any, producer: Producer, consumer: PullConsumer) -> None:
    mq = MessageQueue("Timed", "broker-a", 0)
    for i in range(3):
        await producer.send(Message("Timed", f"m{i}".encode()), mq)
        await asyncio.sleep(0.01)  # distinct store timestamps
    await cluster.wait_dispatched()
    msgs = (await consumer.pull(mq, "*", 0)).msg_found_list
    assert [m.queue_offset for m in msgs] == [0, 1, 2]
    assert await consumer.seek_by_timestamp(mq, msgs[1].store_timestamp) == 1
    assert await consumer.seek_by_timestamp(mq, msgs[2].store_timestamp) == 2
    assert await consumer.seek_by_timestamp(mq, 0) == 0


async def test_long_poll_returns_soon_after_a_send(cluster: Any, producer: Producer, consumer: PullConsumer) -> None:
    mq = MessageQueue("LongPoll", "broker-a", 0)
    await producer.send(Message("LongPoll", b"first"), mq)
    await cluster.wait_dispatched()
    loop = asyncio.get_running_loop()
    begin = loop.time()
    waiting = asyncio.create_task(consumer.pull_blocking(mq, "*", 1, timeout=20.0))
    await asyncio.sleep(0.2)
    assert not waiting.done()  # held by the broker: nothing at offset 1 yet
    await producer.send(Message("LongPoll", b"second"), mq)
    result = await asyncio.wait_for(waiting, 15.0)
    assert result.pull_status is PullStatus.FOUND
    assert [m.body for m in result.msg_found_list] == [b"second"]
    assert loop.time() - begin < 10.0  # generous: far below the 20 s hold


async def test_heartbeat_registers_the_group_and_shutdown_unregisters_it(
    cluster: Any, producer: Producer, poll: Callable, protocol: str
) -> None:
    mq = MessageQueue("Members", "broker-a", 0)
    await producer.send(Message("Members", b"x"), mq)
    await cluster.wait_dispatched()
    consumer = PullConsumer("MemberGroup", cluster.namesrv_addr, instance_name=f"c{next(_names)}", protocol=protocol)
    await consumer.start()
    await consumer.pull(mq, "*", 0)  # the instance learns the broker and the topic
    await consumer.instance.send_heartbeat_to_all_brokers()
    ids = await consumer.instance.find_consumer_id_list("Members", "MemberGroup")
    assert ids == [consumer.instance.client_id]
    msgs = (await consumer.pull(mq, "*", 0)).msg_found_list
    assert await consumer.earliest_msg_store_time(mq) == msgs[0].store_timestamp
    await consumer.shutdown()
    with pytest.raises(MQBrokerException):  # the broker forgot the group at once, not after 120 s
        await producer.instance.mq_client_api.get_consumer_id_list_by_group(cluster.broker_addr, "MemberGroup", 5.0)


async def test_each_connection_speaks_the_chosen_protocol(
    cluster: Any, producer: Producer, consumer: PullConsumer, protocol: str
) -> None:
    """The servers detect a connection's protocol from its first frame: for every connection the clients
    opened, the name server's or broker's end says the protocol ClientConfig.protocol chose."""
    await producer.send(Message("Wire", b"x"))
    await consumer.fetch_subscribe_message_queues("Wire")
    expected = WireProtocol.NATIVE if protocol == "rocketmq" else WireProtocol.MSGPACK
    server_channels = {ch.remote_address: ch for server in (cluster.namesrv.remoting_server,
                                                            cluster.broker.remoting_server)
                       for ch in server.channels}
    client_channels = [ch for client in (producer, consumer)
                       for ch in client.instance.mq_client_api.remoting_client.channels]
    assert len(client_channels) >= 3  # the producer's to the name server and the broker, the consumer's
    for ch in client_channels:
        assert ch.protocol is expected
        assert server_channels[ch.local_address].protocol is expected


@pytest.mark.parametrize("client", [Producer, PullConsumer])
def test_an_unknown_protocol_is_refused_by_name(client: Any) -> None:
    with pytest.raises(MQClientException, match="unknown protocol 'native': expected one of 'msgpack', 'rocketmq'"):
        client("G", "127.0.0.1:9876", protocol="native")
