"""MessagingService's answers, RPC by RPC, as Apache RocketMQ 5.3's proxy gives them (codes and messages from
proxy/.../grpc/v2: ClientActivity, RouteActivity, SendMessageActivity, EndTransactionActivity)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest

from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client_body import SubscriptionGroupConfig

from .conftest import D, S, create_topic, endpoints, metadata


async def test_query_route_gives_every_queue_at_the_proxys_own_address(cluster, proxy, stub):
    await create_topic(cluster, "Routed", queues=3)
    r = await stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="Routed"), endpoints=endpoints(proxy.port)),
                              metadata=metadata())
    assert r.status.code == D.Code.OK
    assert [q.id for q in r.message_queues] == [0, 1, 2]
    q = r.message_queues[0]
    assert q.permission == D.Permission.READ_WRITE and q.broker.name == "broker-a" and q.broker.id == 0
    assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [("127.0.0.1", proxy.port)]
    # An untyped topic takes every type (pocketmq's topics have no message.type until one is set).
    assert list(q.accept_message_types) == [D.MessageType.NORMAL, D.MessageType.FIFO, D.MessageType.DELAY,
                                            D.MessageType.TRANSACTION]


async def test_an_unknown_topic_is_topic_not_found(proxy, stub):
    r = await stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="Nowhere")), metadata=metadata())
    assert r.status.code == D.Code.TOPIC_NOT_FOUND
    assert r.status.message == ("CODE: 17  DESC: No topic route info in name server for the topic: Nowhere\n"
                                "For more information, please visit the url, "
                                "https://rocketmq.apache.org/docs/bestPractice/06FAQ")


async def test_a_call_without_a_client_id_is_client_id_required(proxy, stub):
    r = await stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="Any")), metadata=())
    assert (r.status.code, r.status.message) == (D.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")


async def test_system_topics_and_bad_names_are_illegal_topic(proxy, stub):
    r = await stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="TBW102")), metadata=metadata())
    assert (r.status.code, r.status.message) == (D.Code.ILLEGAL_TOPIC, "cannot access system topic")
    r = await stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="bad topic")), metadata=metadata())
    assert r.status.code == D.Code.ILLEGAL_TOPIC


async def test_heartbeat_before_settings_is_unrecognized_client_type(proxy, stub):
    r = await stub.Heartbeat(S.HeartbeatRequest(client_type=D.ClientType.PRODUCER), metadata=metadata("fresh@1"))
    assert r.status.code == D.Code.UNRECOGNIZED_CLIENT_TYPE
    assert r.status.message == "cannot find client settings for this client"


def producer_settings(topic: str) -> Any:
    return S.TelemetryCommand(settings=D.Settings(
        client_type=D.ClientType.PRODUCER, publishing=D.Publishing(topics=[D.Resource(name=topic)],
                                                                   max_body_size=128 * 1024 * 1024)))


async def test_telemetry_answers_a_producer_with_the_settings_the_sdks_need(cluster, proxy, stub):
    await create_topic(cluster, "Pub")
    call = stub.Telemetry(metadata=metadata("producer@1"))
    await call.write(producer_settings("Pub"))
    reply = await call.read()
    assert reply.status.code == D.Code.OK
    s = reply.settings
    assert s.publishing.max_body_size == 4 * 1024 * 1024 and s.publishing.validate_message_type
    assert s.backoff_policy.max_attempts == 3
    e = s.backoff_policy.exponential_backoff
    assert (e.initial.ToMilliseconds(), e.max.ToMilliseconds(), e.multiplier) == (10, 1000, 2.0)
    assert not s.metric.on
    # With Settings known, heartbeats are welcome.
    r = await stub.Heartbeat(S.HeartbeatRequest(client_type=D.ClientType.PRODUCER), metadata=metadata("producer@1"))
    assert r.status.code == D.Code.OK
    r = await stub.NotifyClientTermination(S.NotifyClientTerminationRequest(), metadata=metadata("producer@1"))
    assert r.status.code == D.Code.OK
    await call.done_writing()
    assert await call.read() == grpc.aio.EOF


async def test_telemetry_answers_a_push_consumer_with_batch_long_polling_and_backoff(proxy, stub):
    call = stub.Telemetry(metadata=metadata("consumer@1"))
    await call.write(S.TelemetryCommand(settings=D.Settings(
        client_type=D.ClientType.PUSH_CONSUMER,
        subscription=D.Subscription(group=D.Resource(name="CG5"), subscriptions=[D.SubscriptionEntry(
            topic=D.Resource(name="T"), expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))]))))
    s = (await call.read()).settings
    assert s.subscription.receive_batch_size == 32
    assert s.subscription.long_polling_timeout.ToSeconds() == 20
    assert not s.subscription.fifo
    assert s.backoff_policy.max_attempts == 17
    assert [d.ToSeconds() for d in s.backoff_policy.customized_backoff.next][:4] == [1, 5, 10, 30]
    r = await stub.Heartbeat(S.HeartbeatRequest(group=D.Resource(name="CG5"), client_type=D.ClientType.PUSH_CONSUMER),
                             metadata=metadata("consumer@1"))
    assert r.status.code == D.Code.OK
    call.cancel()


RETRY_POLICIES = {  # groupRetryPolicy as RocketMQ 5's admin sends it
    "CustomizedRetryG": {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [15000, 15000]}},
    "ExponentialRetryG": {"type": "EXPONENTIAL",
                          "exponentialRetryPolicy": {"initial": 12000, "max": 60000, "multiplier": 2}},
}


async def test_a_consumer_gets_its_groups_retry_policy(cluster, proxy, stub):
    """mergeSubscriptionData: the group's groupRetryPolicy is the Settings' backoff (exponential or customized),
    and the delay of a message whose auto renewal ran out (nextDelayDuration of its reconsume times)."""
    await create_topic(cluster, "RetryT")  # (the proxy asks the group's config of the topic's brokers)
    for group, policy in RETRY_POLICIES.items():
        cluster.broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig.from_dict(
            {"groupName": group, "retryMaxTimes": 1, "groupRetryPolicy": policy}))
    backoffs = {}
    for group in (*RETRY_POLICIES, "PlainRetryG"):
        call = stub.Telemetry(metadata=metadata(f"{group}@1"))
        await call.write(S.TelemetryCommand(settings=D.Settings(
            client_type=D.ClientType.PUSH_CONSUMER,
            subscription=D.Subscription(group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name="RetryT"), expression=D.FilterExpression(type=D.FilterType.TAG,
                                                                               expression="*"))]))))
        backoffs[group] = (await call.read()).settings.backoff_policy
        call.cancel()
    customized, exponential, plain = backoffs.values()
    assert customized.max_attempts == 2
    assert [d.ToMilliseconds() for d in customized.customized_backoff.next] == [15000, 15000]
    assert exponential.max_attempts == 2 and exponential.WhichOneof("strategy") == "exponential_backoff"
    e = exponential.exponential_backoff
    assert (e.initial.ToMilliseconds(), e.max.ToMilliseconds(), e.multiplier) == (12000, 60000, 2.0)
    assert plain.max_attempts == 17  # a group without a policy: RocketMQ's default
    assert [d.ToSeconds() for d in plain.customized_backoff.next][:4] == [1, 5, 10, 30]
    delays = {group: [proxy._retry_delay(group, n) for n in (0, 1, 5)] for group in backoffs}
    assert delays == {"CustomizedRetryG": [15000] * 3, "ExponentialRetryG": [12000, 24000, 60000],
                      "PlainRetryG": [10000, 30000, 240000]}  # next[reconsumeTimes + 2]


async def test_settings_without_publishing_or_subscription_end_the_stream(proxy, stub):
    call = stub.Telemetry(metadata=metadata("odd@1"))
    await call.write(S.TelemetryCommand(settings=D.Settings(client_type=D.ClientType.PRODUCER)))
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await call.read()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == "there is no publishing or subscription data in settings"


def message(topic: str, body: bytes = b"x", message_id: str = "0102FC0000000171190B1C3CCC000000E9",
            **system: Any) -> Any:
    return D.Message(topic=D.Resource(name=topic), body=body, system_properties=D.SystemProperties(
        message_id=message_id, message_type=D.MessageType.NORMAL, body_encoding=D.Encoding.IDENTITY, **system))


async def send(stub: Any, *messages: Any) -> Any:
    return await stub.SendMessage(S.SendMessageRequest(messages=list(messages)), metadata=metadata())


async def test_send_answers_with_the_clients_message_id_and_the_queue_offset(cluster, proxy, stub):
    await create_topic(cluster, "Sent", queues=1)
    first = await send(stub, message("Sent", message_id="0102FC0000000171190B1C3CCC00000001"))
    second = await send(stub, message("Sent", message_id="0102FC0000000171190B1C3CCC00000002"))
    assert first.status.code == D.Code.OK and len(first.entries) == 1
    assert first.entries[0].message_id == "0102FC0000000171190B1C3CCC00000001"
    assert (first.entries[0].offset, second.entries[0].offset) == (0, 1)
    assert first.entries[0].transaction_id == "0102FC0000000171190B1C3CCC00000001"  # (as a 5.x broker answers)


async def test_send_refusals_carry_rocketmqs_codes_and_messages(cluster, proxy, stub):
    await create_topic(cluster, "Refused")
    big = await send(stub, message("Refused", body=b"x" * (4 * 1024 * 1024 + 1)))
    assert (big.status.code, big.status.message) == (D.Code.MESSAGE_BODY_TOO_LARGE,
                                                     "message body cannot exceed the max 4194304")
    empty = await send(stub, message("Refused", body=b""))
    assert (empty.status.code, empty.status.message) == (D.Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    no_id = await send(stub, message("Refused", message_id=""))
    assert (no_id.status.code, no_id.status.message) == (D.Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    reserved = message("Refused")
    reserved.user_properties["UNIQ_KEY"] = "mine"
    r = await send(stub, reserved)
    assert (r.status.code, r.status.message) == (D.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                                 "property is used by system: UNIQ_KEY")
    r = await send(stub, message("Refused", tag="a|b"))
    assert (r.status.code, r.status.message) == (D.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    r = await send(stub)
    assert (r.status.code, r.status.message) == (D.Code.MESSAGE_CORRUPTED, "no message to send")
    r = await send(stub, message("Missing"))
    assert r.status.code == D.Code.TOPIC_NOT_FOUND


async def test_query_assignment_gives_each_broker_as_queue_minus_one(cluster, proxy, stub):
    await create_topic(cluster, "Assigned")
    r = await stub.QueryAssignment(S.QueryAssignmentRequest(topic=D.Resource(name="Assigned"),
                                                            group=D.Resource(name="CG"),
                                                            endpoints=endpoints(proxy.port)), metadata=metadata())
    assert r.status.code == D.Code.OK
    [a] = r.assignments
    assert (a.message_queue.id, a.message_queue.broker.name) == (-1, "broker-a")
    assert a.message_queue.permission == D.Permission.READ_WRITE


async def test_end_transaction_of_an_unknown_transaction_is_refused_as_rocketmq_refuses_it(cluster, proxy, stub):
    await create_topic(cluster, "Txn")
    request = S.EndTransactionRequest(topic=D.Resource(name="Txn"), message_id="m", transaction_id="nope",
                                      resolution=D.TransactionResolution.COMMIT,
                                      source=D.TransactionSource.SOURCE_CLIENT)
    r = await stub.EndTransaction(request, metadata=metadata())
    assert (r.status.code, r.status.message) == (
        D.Code.INTERNAL_SERVER_ERROR, "org.apache.rocketmq.proxy.common.ProxyException: cannot found transaction data")
    r = await stub.EndTransaction(S.EndTransactionRequest(topic=D.Resource(name="Txn")), metadata=metadata())
    assert (r.status.code, r.status.message) == (D.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")


async def test_the_pull_rpcs_are_not_served(proxy, stub):
    # (neither does RocketMQ's proxy, and no 5.x SDK calls them)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await stub.GetOffset(S.GetOffsetRequest(), metadata=metadata())
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_tls_and_plaintext_share_the_port(cluster, proxy):
    await create_topic(cluster, "Both")
    request = S.QueryRouteRequest(topic=D.Resource(name="Both"))
    credentials = grpc.ssl_channel_credentials(root_certificates=proxy.certificate_pem)
    async with grpc.aio.secure_channel(proxy.endpoint, credentials) as tls, \
            grpc.aio.insecure_channel(proxy.endpoint) as plain:
        from rocketmq.grpc_protocol import service_pb2_grpc

        answers = await asyncio.gather(*(service_pb2_grpc.MessagingServiceStub(ch).QueryRoute(request,
                                                                                               metadata=metadata())
                                         for ch in (tls, plain, tls, plain)))
    assert [a.status.code for a in answers] == [D.Code.OK] * 4
    assert proxy.connections == {"tls": 1, "plaintext": 1}  # one connection per channel, each routed once


async def test_a_start_deliver_time_property_on_a_normal_topic_is_a_type_conflict_at_the_endpoint(cluster, proxy,
                                                                                                 stub):
    """``__STARTDELIVERTIME`` makes a message a DELAY one for pocketmq's broker (docs/compatibility.md): the endpoint
    checks a send's type by the same rule, so the SDK gets MESSAGE_PROPERTY_CONFLICT_WITH_TYPE as for any other
    conflict, not the broker's refusal as an internal error."""
    cluster.broker.topic_config_manager.update_topic_config(
        TopicConfig("TypedNormal", 4, 4, 6, attributes={"message.type": "NORMAL"}))
    await cluster.broker.register_broker_all()
    m = message("TypedNormal")
    m.user_properties["__STARTDELIVERTIME"] = str(int(time.time() * 1000) + 60_000)
    r = await send(stub, m)
    assert r.status.code == D.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert r.status.message.endswith("the expected type is NORMAL, but actual type is DELAY")
    assert (await send(stub, message("TypedNormal"))).status.code == D.Code.OK


async def test_a_producer_group_whose_last_producer_left_is_unregistered_at_the_broker(cluster, proxy, stub, poll):
    """The endpoint heartbeats its producers' topics as producer groups; once a topic's last producer leaves, the
    group is unregistered at once (UNREGISTER_CLIENT). Left to expire, it made the broker close the channel it was
    on, the endpoint's one connection to the broker, failing every other client's pops and sends in flight."""
    await create_topic(cluster, "Leaving")
    await create_topic(cluster, "Staying")
    producers = cluster.broker.producer_manager.group_channel_table
    calls = {}
    for client, topic in (("leaving@1", "Leaving"), ("staying@1", "Staying")):
        calls[client] = stub.Telemetry(metadata=metadata(client))
        await calls[client].write(producer_settings(topic))
        assert (await calls[client].read()).status.code == D.Code.OK
    await poll(lambda: {"Leaving", "Staying"} <= set(producers))
    r = await stub.NotifyClientTermination(S.NotifyClientTerminationRequest(), metadata=metadata("leaving@1"))
    assert r.status.code == D.Code.OK
    await poll(lambda: "Leaving" not in producers)
    assert producers.get("Staying")  # (the other group, on the same channel, stays)
    for call in calls.values():
        call.cancel()
