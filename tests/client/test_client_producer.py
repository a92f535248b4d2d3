"""Producer against fake brokers on real sockets: retries, errors, budgets, routes, heartbeats."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from client_fakes import (
    FakeBroker,
    FakeNamesrv,
    drop_connection,
    error,
    free_dead_address,
    never_answer,
    route_for,
)

from pocketmq.client import (
    Message,
    MQBrokerException,
    MQClientException,
    Producer,
    PullConsumer,
    SendResult,
    SendStatus,
    select_message_queue_by_hash,
)
from pocketmq.client.exceptions import ClientErrorCode
from pocketmq.client.impl import mq_client_routes
from pocketmq.client.impl.mq_client_manager import MQClientManager
from pocketmq.common.message import string_to_properties
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.client_body import HeartbeatData, MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.errors import RemotingTimeoutError
from pocketmq.remoting.header import UnregisterClientRequestHeader, parse_send_message_request_header

_instances = itertools.count()


def new_producer(namesrv: FakeNamesrv | str, **kwargs: Any) -> Producer:
    addr = namesrv if isinstance(namesrv, str) else namesrv.address
    # Own instance name per producer: tests must not share an MQClientInstance by accident.
    kwargs.setdefault("instance_name", f"t{next(_instances)}")
    return Producer("PG", addr, **kwargs)


@pytest.fixture
async def producer(namesrv: FakeNamesrv) -> AsyncIterator[Producer]:
    async with new_producer(namesrv) as p:
        yield p


def header_of(request: Any):  # noqa: ANN201
    return parse_send_message_request_header(request.code, request.ext_fields)


async def start_on_broker_a(producer: Producer, topic: str) -> None:
    """Load the route and aim the next selection at broker-a's first queue."""
    info = producer.topic_publish_info_table.get(topic)
    if info is None:
        await producer.fetch_publish_message_queues(topic)
        info = producer.topic_publish_info_table[topic]
    assert info.message_queue_list[0].broker_name == "broker-a"
    info.send_which_queue = 0x7FFFFFFF


async def test_send_ok(namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer) -> None:
    namesrv.set_route("T", [broker_a])
    msg = Message("T", b"hello", tags="A")
    result = await producer.send(msg)
    assert result.send_status is SendStatus.SEND_OK
    assert result.msg_id == msg.uniq_key and result.queue_offset == 0
    assert result.message_queue.broker_name == "broker-a" and result.offset_msg_id.endswith("0" * 16)
    (request,) = broker_a.sends
    h = header_of(request)
    assert (h.topic, h.producer_group, h.queue_id) == ("T", "PG", result.message_queue.queue_id)
    assert string_to_properties(h.properties)["UNIQ_KEY"] == msg.uniq_key
    assert request.body == b"hello"


async def test_retries_system_error_on_another_broker(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a, broker_b])
    broker_a.on_send = error(ResponseCode.SYSTEM_ERROR, "disk trouble")
    await start_on_broker_a(producer, "T")
    msg = Message("T", b"x")
    result = await producer.send(msg)
    assert result.send_status is SendStatus.SEND_OK
    assert result.message_queue.broker_name == "broker-b"
    assert len(broker_a.sends) == 1 and len(broker_b.sends) == 1
    # The retry is the same message: same UNIQ_KEY.
    ids = {string_to_properties(header_of(r).properties)["UNIQ_KEY"] for r in broker_a.sends + broker_b.sends}
    assert ids == {msg.uniq_key}


async def test_retries_a_dropped_connection(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a, broker_b])
    broker_a.on_send = drop_connection
    await start_on_broker_a(producer, "T")
    result = await producer.send(Message("T", b"x"))
    assert result.message_queue.broker_name == "broker-b" and len(broker_a.sends) == 1


async def test_retryable_code_everywhere_gives_up_after_three_attempts(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a])
    broker_a.on_send = error(ResponseCode.SERVICE_NOT_AVAILABLE, "store is shutting down")
    with pytest.raises(MQClientException, match=r"Send \[3\] times, still failed") as info:
        await producer.send(Message("T", b"x"))
    assert info.value.response_code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert isinstance(info.value.__cause__, MQBrokerException)
    assert len(broker_a.sends) == 3


async def test_code_outside_retry_codes_raises_at_once(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a, broker_b])
    remark = "the message is illegal, maybe msg body too long"
    broker_a.on_send = broker_b.on_send = error(ResponseCode.MESSAGE_ILLEGAL, remark)
    with pytest.raises(MQBrokerException) as info:
        await producer.send(Message("T", b"x"))
    assert info.value.code == ResponseCode.MESSAGE_ILLEGAL
    assert info.value.remark == remark
    assert len(broker_a.sends) + len(broker_b.sends) == 1


async def test_not_stored_ok_is_returned_not_retried(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a])

    async def slow_flush(channel: Any, request: Any) -> Any:
        return broker_a.success(request, ResponseCode.FLUSH_DISK_TIMEOUT)

    broker_a.on_send = slow_flush
    result = await producer.send(Message("T", b"x"))
    assert result.send_status is SendStatus.FLUSH_DISK_TIMEOUT and len(broker_a.sends) == 1


async def test_a_failed_send_carries_the_client_error_code_of_its_last_attempt(
    namesrv: FakeNamesrv, broker_a: FakeBroker
) -> None:
    # sendDefaultImpl's codes, for a caller to tell the failures apart (they were all -1).
    namesrv.set_route("Dead", [broker_a])
    namesrv.routes["Dead"].broker_datas[0].broker_addrs = {0: free_dead_address()}
    namesrv.set_route("Slow", [broker_a])
    broker_a.on_send = never_answer
    async with new_producer(namesrv, send_timeout=0.5, retry_times_when_send_failed=0) as producer:
        for topic, code in (("Dead", ClientErrorCode.CONNECT_BROKER_EXCEPTION),
                            ("Slow", ClientErrorCode.ACCESS_BROKER_TIMEOUT)):
            with pytest.raises(MQClientException, match=r"Send \[1\] times, still failed") as info:
                await producer.send(Message(topic, b"x"))
            assert info.value.response_code == code, topic


async def test_a_send_to_a_broker_that_accepts_and_never_answers_ends_at_the_send_timeout(
    namesrv: FakeNamesrv, broker_a: FakeBroker
) -> None:
    # The new connection's heartbeat waited for its own timeout (here a minute) before the send went out.
    held: list[asyncio.StreamWriter] = []
    hung = await asyncio.start_server(lambda _r, w: held.append(w), "127.0.0.1", 0)
    namesrv.set_route("Hung", [broker_a])
    namesrv.routes["Hung"].broker_datas[0].broker_addrs = {0: f"127.0.0.1:{hung.sockets[0].getsockname()[1]}"}
    producer = new_producer(namesrv, send_timeout=0.3, retry_times_when_send_failed=0, mq_client_api_timeout=60.0,
                            connect_timeout=60.0)
    await producer.start()
    try:
        with pytest.raises(MQClientException) as info:
            await asyncio.wait_for(producer.send(Message("Hung", b"x")), 20.0)  # (a guard far from both)
        assert info.value.response_code == ClientErrorCode.ACCESS_BROKER_TIMEOUT
    finally:
        for w in held:
            w.transport.abort()
        hung.close()
        await producer.shutdown()


async def test_send_timeout_is_one_budget_for_all_attempts(namesrv: FakeNamesrv, broker_a: FakeBroker) -> None:
    namesrv.set_route("T", [broker_a])
    broker_a.on_send = never_answer
    async with new_producer(namesrv, send_timeout=0.3) as producer:
        loop = asyncio.get_running_loop()
        begin = loop.time()
        with pytest.raises(RemotingTimeoutError, match="sendDefaultImpl call timeout"):
            await producer.send(Message("T", b"x"))
        assert loop.time() - begin < 3.0  # generous: far below 3 attempts x 3 s
    assert len(broker_a.sends) == 1  # the first attempt used the whole budget: no second one


async def test_async_send_with_callback(namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer) -> None:
    namesrv.set_route("T", [broker_a])
    seen: list[object] = []

    class Callback:
        def on_success(self, result: SendResult) -> None:
            seen.append(result)

        def on_exception(self, exc: BaseException) -> None:
            seen.append(exc)

    result = await producer.send_async(Message("T", b"x"), Callback())
    await asyncio.sleep(0)  # done-callbacks run on the next loop iteration
    assert result.send_status is SendStatus.SEND_OK and seen == [result]

    broker_a.on_send = error(ResponseCode.SYSTEM_ERROR, "busy")
    task = producer.send_async(Message("T", b"y"), Callback())
    with pytest.raises(MQBrokerException):
        await task
    await asyncio.sleep(0)
    assert isinstance(seen[-1], MQBrokerException) and seen[-1].code == ResponseCode.SYSTEM_ERROR
    assert len(broker_a.sends) == 2  # async sends do not retry broker errors


async def test_async_def_callbacks_are_run(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer, poll: Callable
) -> None:
    # Called like plain methods, their coroutines were dropped unrun ("coroutine ... was never awaited").
    namesrv.set_route("T", [broker_a])
    seen: list[object] = []

    class Callback:
        async def on_success(self, result: SendResult) -> None:
            await asyncio.sleep(0)
            seen.append(result)

        async def on_exception(self, exc: BaseException) -> None:
            seen.append(exc)

    result = await producer.send_async(Message("T", b"x"), Callback())
    await poll(lambda: seen)
    assert seen == [result]
    broker_a.on_send = error(ResponseCode.SYSTEM_ERROR, "busy")
    with pytest.raises(MQBrokerException):
        await producer.send_async(Message("T", b"y"), Callback())
    await poll(lambda: len(seen) == 2)
    assert isinstance(seen[1], MQBrokerException)


async def test_async_send_retries_network_failures(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a, broker_b])
    broker_a.on_send = drop_connection
    await start_on_broker_a(producer, "T")
    result = await producer.send_async(Message("T", b"x"))
    assert result.message_queue.broker_name == "broker-b" and len(broker_a.sends) == 1


async def test_oneway_send(namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer, poll: Callable) -> None:
    namesrv.set_route("T", [broker_a])
    broker_a.on_send = error(ResponseCode.SYSTEM_ERROR, "ignored: nobody waits")
    assert await producer.send_oneway(Message("T", b"fire")) is None
    await poll(lambda: len(broker_a.sends) == 1)
    assert broker_a.sends[0].is_oneway and broker_a.sends[0].body == b"fire"


async def test_batch_send(namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer) -> None:
    namesrv.set_route("T", [broker_a])
    msgs = [Message("T", f"m{i}".encode()) for i in range(3)]
    result = await producer.send_batch(msgs)
    assert result.msg_id == ",".join(m.uniq_key for m in msgs)  # type: ignore[misc]
    (request,) = broker_a.sends
    assert request.code == RequestCode.SEND_BATCH_MESSAGE and header_of(request).batch


async def test_unknown_topic_goes_through_tbw102(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer
) -> None:
    namesrv.routes["TBW102"] = route_for([broker_a], queues=8)
    result = await producer.send(Message("BrandNew", b"x"))
    # Asked for the topic first, then for TBW102 (the route timer may ask for either meanwhile: it refreshes TBW102,
    # which every producer keeps in its table).
    assert "TBW102" in namesrv.requested[namesrv.requested.index("BrandNew"):]
    h = header_of(broker_a.sends[0])
    assert (h.topic, h.default_topic, h.default_topic_queue_nums) == ("BrandNew", "TBW102", 4)
    assert h.queue_id < 4  # TBW102's 8 queues capped at defaultTopicQueueNums
    assert len(await producer.fetch_publish_message_queues("BrandNew")) == 4
    assert result.message_queue.topic == "BrandNew"


async def test_many_new_topics_share_one_tbw102_route_request(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer, monkeypatch: pytest.MonkeyPatch, poll: Any
) -> None:
    # (a long reuse period, so that a slow machine cannot turn this into a test of timing)
    monkeypatch.setattr(mq_client_routes, "DEFAULT_TOPIC_ROUTE_REUSE_S", 60.0)
    # The instance's first route refresh (10 ms after its start) asks for TBW102 too, which every producer keeps
    # in its table (as RocketMQ's does): it is counted out, and the next one is 30 s away.
    await poll(lambda: "TBW102" in namesrv.requested)
    before = namesrv.requested.count("TBW102")
    namesrv.routes["TBW102"] = route_for([broker_a], queues=8)
    for i in range(10):
        await producer.send(Message(f"BrandNew{i}", b"x"))
    assert namesrv.requested.count("TBW102") - before == 1
    assert [header_of(r).topic for r in broker_a.sends] == [f"BrandNew{i}" for i in range(10)]
    # Each gets the default route capped at its own defaultTopicQueueNums, the cached one left alone.
    assert all(header_of(r).queue_id < 4 for r in broker_a.sends)
    namesrv.routes["TBW102"] = route_for([broker_a], queues=2)
    monkeypatch.setattr(mq_client_routes, "DEFAULT_TOPIC_ROUTE_REUSE_S", 0.0)
    await producer.send(Message("BrandNewAfter", b"x"))
    assert namesrv.requested.count("TBW102") - before == 2
    assert len(await producer.fetch_publish_message_queues("BrandNewAfter")) == 2


async def test_no_route_at_all(namesrv: FakeNamesrv, producer: Producer) -> None:
    with pytest.raises(MQClientException, match="No route info of this topic: Nowhere") as info:
        await producer.send(Message("Nowhere", b"x"))
    assert info.value.response_code == ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION


async def test_selector_and_explicit_queue_pin_the_queue(
    namesrv: FakeNamesrv, broker_a: FakeBroker, producer: Producer
) -> None:
    namesrv.set_route("T", [broker_a], queues=8)
    for i in range(5):
        await producer.send(Message("T", f"step {i}".encode()), selector=select_message_queue_by_hash, arg="order-42")
    assert len({header_of(r).queue_id for r in broker_a.sends}) == 1

    await producer.send(Message("T", b"x"), MessageQueue("T", "broker-a", 6))
    assert header_of(broker_a.sends[-1]).queue_id == 6
    with pytest.raises(MQClientException, match="message's topic not equal mq's topic"):
        await producer.send(Message("T", b"x"), MessageQueue("U", "broker-a", 0))
    with pytest.raises(MQClientException, match="select message queue return null"):
        await producer.send(Message("T", b"x"), selector=lambda mqs, msg, arg: None)


async def test_heartbeats_and_unregister(namesrv: FakeNamesrv, broker_a: FakeBroker, poll: Callable) -> None:
    namesrv.set_route("T", [broker_a])
    producer = new_producer(namesrv, heartbeat_broker_interval=0.05)
    await producer.start()
    await producer.send(Message("T", b"x"))  # the broker becomes known to the instance
    await poll(lambda: broker_a.of_code(RequestCode.HEART_BEAT))
    heartbeat = decode_body(broker_a.of_code(RequestCode.HEART_BEAT)[0].body, HeartbeatData)
    assert heartbeat.client_id == producer.client_id
    assert [p.group_name for p in heartbeat.producer_data_set] == ["PG"] and not heartbeat.consumer_data_set
    await producer.shutdown()
    (unregister,) = broker_a.of_code(RequestCode.UNREGISTER_CLIENT)
    h = unregister.decode_header(UnregisterClientRequestHeader)
    assert (h.client_id, h.producer_group, h.consumer_group) == (producer.client_id, "PG", None)


async def test_route_changes_are_picked_up(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker, poll: Callable
) -> None:
    namesrv.set_route("T", [broker_a])
    async with new_producer(namesrv, poll_name_server_interval=0.05) as producer:
        assert {q.broker_name for q in await producer.fetch_publish_message_queues("T")} == {"broker-a"}
        namesrv.set_route("T", [broker_a, broker_b])
        await poll(
            lambda: {q.broker_name for q in producer.topic_publish_info_table["T"].message_queue_list}
            == {"broker-a", "broker-b"}
        )


async def test_name_server_failover(namesrv: FakeNamesrv, broker_a: FakeBroker) -> None:
    namesrv.set_route("T", [broker_a])
    async with new_producer(f"{free_dead_address()};{namesrv.address}") as producer:
        for _ in range(3):  # whichever name server the round-robin starts on
            producer.topic_publish_info_table.clear()
            producer.instance.topic_route_table.clear()
            assert (await producer.send(Message("T", b"x"))).send_status is SendStatus.SEND_OK


async def test_producers_of_two_name_servers_on_one_loop_each_send_to_their_own(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker
) -> None:
    # Without an instance name both shared the process's client instance, and the second one's sends went to the
    # first one's name server and brokers (Apache: changeInstanceNameToPID gives each its own).
    other = FakeNamesrv()
    await other.server.start()
    try:
        namesrv.set_route("T", [broker_a])
        other.set_route("T", [broker_b])
        async with Producer("PGA", namesrv.address) as a, Producer("PGB", other.address) as b:
            assert a.instance is not b.instance
            assert (await a.send(Message("T", b"a"))).message_queue.broker_name == "broker-a"
            assert (await b.send(Message("T", b"b"))).message_queue.broker_name == "broker-b"
        assert [r.body for r in broker_a.sends] == [b"a"] and [r.body for r in broker_b.sends] == [b"b"]
    finally:
        await other.server.stop()


async def test_instance_is_shared_and_reference_counted(namesrv: FakeNamesrv, broker_a: FakeBroker) -> None:
    producer = new_producer(namesrv, instance_name="shared")
    consumer = PullConsumer("CG", namesrv.address, instance_name="shared")
    await producer.start()
    await consumer.start()
    instance = producer.instance
    assert consumer.instance is instance and instance in MQClientManager.get_instance().instances()
    with pytest.raises(MQClientException, match="has been created before"):
        await new_producer(namesrv, instance_name="shared").start()
    await producer.shutdown()
    assert not instance.stopped
    await consumer.shutdown()
    assert instance.stopped and instance not in MQClientManager.get_instance().instances()


async def test_retry_another_broker_when_not_store_ok(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker
) -> None:
    namesrv.set_route("T", [broker_a, broker_b])

    async def slave_missing(channel: Any, request: Any) -> Any:
        return broker_a.success(request, ResponseCode.SLAVE_NOT_AVAILABLE)

    broker_a.on_send = slave_missing
    async with new_producer(namesrv, retry_another_broker_when_not_store_ok=True) as producer:
        await start_on_broker_a(producer, "T")
        result = await producer.send(Message("T", b"x"))
        assert result.send_status is SendStatus.SEND_OK and result.message_queue.broker_name == "broker-b"
        # Every attempt stored but not OK: the last answer is returned, not an exception.
        broker_b.on_send = slave_missing
        result = await producer.send(Message("T", b"y"))
        assert result.send_status is SendStatus.SLAVE_NOT_AVAILABLE
        assert len(broker_a.sends) + len(broker_b.sends) == 1 + 1 + 3


async def test_shutdown_lets_async_sends_finish(namesrv: FakeNamesrv, broker_a: FakeBroker) -> None:
    namesrv.set_route("T", [broker_a])

    async def slow(channel: Any, request: Any) -> Any:
        await asyncio.sleep(0.05)
        return broker_a.success(request)

    broker_a.on_send = slow
    producer = new_producer(namesrv)
    await producer.start()
    tasks = [producer.send_async(Message("T", f"{i}".encode())) for i in range(3)]
    await producer.shutdown()
    assert all(t.done() for t in tasks)
    assert [t.result().send_status for t in tasks] == [SendStatus.SEND_OK] * 3
    with pytest.raises(MQClientException, match="not started"):
        producer.send_async(Message("T", b"late"))
