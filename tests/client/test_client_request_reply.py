"""Request-reply over a real name server and broker: Producer.request, the reply a consumer makes with
MessageUtil.create_reply_message, SEND_REPLY_MESSAGE_V2, PUSH_REPLY_MESSAGE_TO_CLIENT, correlation ids and
timeouts, in both client protocols."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from push_helpers import create_topic, make_consumer, unique

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MessageUtil,
    MQClientException,
    Producer,
    RequestTimeoutException,
)
from pocketmq.client.exceptions import ClientErrorCode


async def start_replier(cluster: Any, topic: str, protocol: str = "msgpack", answer: bool = True) -> tuple[Any, Any]:
    """A consumer of ``topic`` that answers each request with b"re:" + its body (when ``answer``)."""
    replier = Producer(unique("ReplyPG"), cluster.namesrv_addr, instance_name=unique("rp"), protocol=protocol)
    await replier.start()
    seen: list[Any] = []

    async def on_request(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
        for msg in msgs:
            seen.append(msg)
            if answer:
                reply = MessageUtil.create_reply_message(msg, b"re:" + msg.body)
                await replier.send(reply)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = make_consumer(cluster, unique("ReqCG"), protocol=protocol)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(on_request)
    await consumer.start()
    consumer.seen = seen  # type: ignore[attr-defined]
    return consumer, replier


async def wait_assigned(consumer: Any, poll: Any, queues: int) -> None:
    """Until the consumer holds ``queues`` queues of the request topic (its %RETRY% queue not counted)."""
    await poll(lambda: len([q for q in consumer.assigned_queues() if not q.topic.startswith("%RETRY%")]) == queues)


@pytest.mark.parametrize(("protocol", "requester_protocol"),
                         [("msgpack", "msgpack"), ("rocketmq", "rocketmq"), ("rocketmq", "msgpack")])
async def test_request_is_answered_with_the_reply(push_cluster, poll, protocol: str, requester_protocol: str) -> None:
    """The replier's protocol and the requester's: the broker pushes the reply in the codec the requester's
    connection speaks, whichever carried the reply to it."""
    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 2)
    consumer, replier = await start_replier(push_cluster, topic, protocol)
    try:
        await wait_assigned(consumer, poll, 2)
        async with Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("req"),
                            protocol=requester_protocol) as requester:
            reply = await requester.request(Message(topic, b"ping", tags="T"), timeout=5.0)
            assert reply.body == b"re:ping"
            request = consumer.seen[0]
            props = request.properties
            assert props["REPLY_TO_CLIENT"] == requester.client_id
            assert props["TTL"] == "5000"
            assert props["CLUSTER"] == push_cluster.broker.broker_config.broker_cluster_name
            assert reply.properties["CORRELATION_ID"] == props["CORRELATION_ID"]
            assert reply.properties["MSG_TYPE"] == "reply"
            assert "ARRIVE_TIME" in reply.properties and "PUSH_REPLY_TIME" in reply.properties
            assert reply.topic == f"{props['CLUSTER']}_REPLY_TOPIC"
            # nothing left waiting
            assert requester.instance.request_future_holder.request_future_table == {}
            # storeReplyMessageEnable (on by default): the reply is in the reply topic too
            await poll(lambda: push_cluster.store.get_max_offset_in_queue(reply.topic, 0) >= 1)
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_request_async_with_a_callback_and_several_in_flight(push_cluster, poll) -> None:
    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 2)
    consumer, replier = await start_replier(push_cluster, topic)
    got: list[bytes] = []
    errors: list[BaseException] = []

    class Callback:
        def on_success(self, message: Any) -> None:
            got.append(message.body)

        def on_exception(self, exc: BaseException) -> None:
            errors.append(exc)

    class AsyncCallback:  # (were called and never awaited: "coroutine ... was never awaited", no reply seen)
        async def on_success(self, message: Any) -> None:
            await asyncio.sleep(0)
            got.append(message.body)

        async def on_exception(self, exc: BaseException) -> None:
            errors.append(exc)

    try:
        await wait_assigned(consumer, poll, 2)
        async with Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("req")) as requester:
            tasks = [requester.request_async(Message(topic, f"m{i}".encode()), (Callback, AsyncCallback)[i % 2](), 5.0)
                     for i in range(10)]
            replies = await asyncio.gather(*tasks)
            # each request got its own reply, matched by correlation id
            assert [r.body for r in replies] == [f"re:m{i}".encode() for i in range(10)]
            await poll(lambda: len(got) == 10)
            assert sorted(got) == sorted(r.body for r in replies) and errors == []
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_request_without_a_reply_times_out(push_cluster, poll) -> None:
    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 1)
    consumer, replier = await start_replier(push_cluster, topic, answer=False)
    errors: list[BaseException] = []

    class Callback:
        def on_success(self, message: Any) -> None:  # pragma: no cover - must not happen
            errors.append(AssertionError(message))

        def on_exception(self, exc: BaseException) -> None:
            errors.append(exc)

    try:
        await wait_assigned(consumer, poll, 1)
        async with Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("req")) as requester:
            with pytest.raises(RequestTimeoutException) as info:
                await requester.request(Message(topic, b"nobody answers"), timeout=0.3)
            assert info.value.response_code == ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION
            assert "wait reply message timeout" in str(info.value)
            assert len(consumer.seen) == 1  # it was delivered, just not answered
            requester.request_async(Message(topic, b"again"), Callback(), 0.2)
            await poll(lambda: errors)
            assert isinstance(errors[0], RequestTimeoutException)
            assert requester.instance.request_future_holder.request_future_table == {}
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_reply_reaches_the_client_that_asked(push_cluster, poll) -> None:
    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 2)
    consumer, replier = await start_replier(push_cluster, topic)
    try:
        await wait_assigned(consumer, poll, 2)
        async with (
            Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("a")) as a,
            Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("b")) as b,
        ):
            assert a.client_id != b.client_id
            ra, rb = await asyncio.gather(
                *(p.request(Message(topic, name), timeout=5.0) for p, name in ((a, b"from-a"), (b, b"from-b")))
            )
            assert (ra.body, rb.body) == (b"re:from-a", b"re:from-b")
            by_body = {m.body: m.properties["REPLY_TO_CLIENT"] for m in consumer.seen}
            assert by_body == {b"from-a": a.client_id, b"from-b": b.client_id}
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_reply_to_a_client_that_is_gone_is_refused(push_cluster) -> None:
    """SEND_REPLY_MESSAGE to a requester the broker has no connection of: SYSTEM_ERROR naming it."""
    async with Producer(unique("ReplyPG"), push_cluster.namesrv_addr, instance_name=unique("rp")) as replier:
        request = Message("AnyTopic", b"x")
        request.put_property("CLUSTER", push_cluster.broker.broker_config.broker_cluster_name)
        request.put_property("REPLY_TO_CLIENT", "10.9.9.9@gone")
        request.put_property("CORRELATION_ID", "c-1")
        with pytest.raises(MQClientException) as info:
            await replier.send(MessageUtil.create_reply_message(request, b"late"))
        assert "channel of <10.9.9.9@gone> not found" in str(info.value)


def test_create_reply_message_needs_the_cluster() -> None:
    with pytest.raises(MQClientException) as info:
        MessageUtil.create_reply_message(Message("T", b"x"), b"y")
    assert info.value.response_code == ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION


async def test_sync_producer_request_and_a_request_to_a_chosen_queue(push_cluster, poll) -> None:
    from pocketmq.client import MessageQueue, SyncProducer

    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 2)
    consumer, replier = await start_replier(push_cluster, topic)
    try:
        await wait_assigned(consumer, poll, 2)
        sync = await asyncio.to_thread(SyncProducer, unique("ReqPG"), push_cluster.namesrv_addr,
                                       instance_name=unique("sync"))
        try:
            reply = await asyncio.to_thread(sync.request, Message(topic, b"blocking"), 5.0)
            assert reply.body == b"re:blocking"
            fut = await asyncio.to_thread(sync.request_async, Message(topic, b"later"), None, 5.0)
            assert (await asyncio.wrap_future(fut)).body == b"re:later"
            queue = MessageQueue(topic, push_cluster.broker.broker_config.broker_name, 1)
            reply = await asyncio.to_thread(sync.request, Message(topic, b"on q1"), 5.0, queue=queue)
            assert reply.body == b"re:on q1"
            assert next(m for m in consumer.seen if m.body == b"on q1").queue_id == 1
        finally:
            await asyncio.to_thread(sync.close)
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_a_compressed_reply_arrives_decompressed(push_cluster, poll) -> None:
    """A reply over compress_over (4 KiB) goes compressed, with the flag in sysFlag; the requester inflates it."""
    topic = unique("ReqT")
    await create_topic(push_cluster, topic, 1)
    consumer, replier = await start_replier(push_cluster, topic)
    try:
        await wait_assigned(consumer, poll, 1)
        body = bytes(range(256)) * 64  # 16 KiB
        async with Producer(unique("ReqPG"), push_cluster.namesrv_addr, instance_name=unique("req")) as requester:
            reply = await requester.request(Message(topic, body), timeout=5.0)
        assert reply.body == b"re:" + body
        assert reply.sys_flag == 0  # decompressed, the flag and its type bits cleared (Java sets no sysFlag)
    finally:
        await consumer.shutdown()
        await replier.shutdown()


async def test_every_broker_knows_the_requester_before_its_first_request(tmp_path, poll) -> None:
    """The reply topic has a queue on every broker, and the broker a reply goes to pushes it to the requester by
    its client id: a broker that never had its heartbeat answers the replier "channel of ... not found" (the
    request times out, or succeeds only on the replier's retry). A requester heartbeated only the brokers of the
    topics it sent to; as RocketMQ's, it now also knows TBW102's route, which names every broker."""
    from pocketmq.embedded import EmbeddedCluster
    from pocketmq.remoting.body import TopicConfig

    async with EmbeddedCluster(tmp_path, brokers=2) as cluster:
        a, b = cluster.brokers
        a.topic_config_manager.update_topic_config(TopicConfig("OnlyOnA", 1, 1, 6))
        await a.register_broker_all()
        await cluster.wait_routed("OnlyOnA")
        async with Producer(unique("ReqPG"), cluster.namesrv_addr, instance_name=unique("rq")) as requester:
            with pytest.raises(RequestTimeoutException):  # (nobody replies: what counts is who knows the requester)
                await requester.request(Message("OnlyOnA", b"q"), timeout=0.3)
            client_id = requester.instance.client_id
            assert a.producer_manager.find_channel(client_id) is not None
            assert b.producer_manager.find_channel(client_id) is not None


def test_a_reply_whose_body_does_not_inflate_is_handed_over_as_sent() -> None:
    """A 5.x replier may compress with LZ4 or ZSTD (sysFlag 0x101, 0x201): decoding the reply failed, the broker's
    push was answered SYSTEM_ERROR and the request timed out. The requester now gets the bytes as sent, marked, as
    a pull hands over such a body."""
    import zlib

    from pocketmq.client.producer.request_future_holder import decode_reply_message
    from pocketmq.remoting.command import RemotingCommand
    from pocketmq.remoting.reply_header import ReplyMessageRequestHeader

    def push(sys_flag: int, body: bytes) -> RemotingCommand:
        header = ReplyMessageRequestHeader("PG", "C_REPLY_TOPIC", "TBW102", 4, 0, sys_flag, 1, 0, "127.0.0.1:1",
                                           "127.0.0.1:2", 2, "CORRELATION_ID\x01c1\x02")
        return RemotingCommand.request(326, header, body)

    lz4 = decode_reply_message(push(0x101, b"\x04\x22\x4d\x18 lz4 frame"))
    assert (lz4.body, lz4.sys_flag, lz4.body_inflate_error is not None) == (b"\x04\x22\x4d\x18 lz4 frame", 0x101, True)
    plain = decode_reply_message(push(0x301, zlib.compress(b"reply")))
    assert (plain.body, plain.sys_flag, plain.body_inflate_error) == (b"reply", 0, None)
