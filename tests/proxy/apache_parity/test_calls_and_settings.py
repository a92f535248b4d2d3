"""The calls every client makes first, asked of both servers: without a client id, of unknown and system topics,
routes, heartbeats, the Settings replies of a producer and of a push consumer, a group's retry policy."""

from __future__ import annotations

import asyncio

from ..conftest import D, S, metadata
from .calls import (
    RETRY_GROUPS,
    TOPIC,
    ask,
    assert_same_status,
    settings_replies,
    stored_retry_policies,
)


def test_a_call_without_client_id(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name=TOPIC)), md=()))


def test_an_unknown_topic(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name="NoSuchTopic5"))))


def test_a_system_topic(both_servers):
    assert_same_status(ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name="TBW102"))))


def test_the_route_of_a_topic(both_servers):
    answers = ask(both_servers, "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name=TOPIC)))
    assert_same_status(answers)
    shape = {name: [(q.id, q.permission, q.broker.id) for q in a.message_queues] for name, a in answers.items()}
    assert shape["pocketmq"] == shape["apache"]
    # On purpose: an untyped topic takes every type here; Apache reads it as NORMAL.
    assert {tuple(q.accept_message_types) for q in answers["apache"].message_queues} == {(D.MessageType.NORMAL,)}


def test_a_heartbeat_before_settings(both_servers):
    assert_same_status(ask(both_servers, "Heartbeat", S.HeartbeatRequest(client_type=D.ClientType.PRODUCER),
                           md=metadata("no-settings@1")))


def test_the_settings_reply_of_a_producer(both_servers):
    replies = settings_replies(both_servers, D.Settings(client_type=D.ClientType.PRODUCER,
                                                publishing=D.Publishing(topics=[D.Resource(name=TOPIC)])),
                               "parity-producer")
    a, p = replies["apache"], replies["pocketmq"]
    assert (p.status.code, p.status.message) == (a.status.code, a.status.message)
    assert p.settings.backoff_policy == a.settings.backoff_policy
    assert p.settings.publishing == a.settings.publishing
    assert p.settings.metric == a.settings.metric


def test_the_settings_reply_of_a_push_consumer(both_servers):
    replies = settings_replies(both_servers, D.Settings(
        client_type=D.ClientType.PUSH_CONSUMER, subscription=D.Subscription(
            group=D.Resource(name="ParityGroup"), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name=TOPIC), expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])),
        "parity-consumer")
    a, p = replies["apache"].settings, replies["pocketmq"].settings
    assert p.backoff_policy == a.backoff_policy
    assert (p.subscription.receive_batch_size, p.subscription.long_polling_timeout, p.subscription.fifo) == \
        (a.subscription.receive_batch_size, a.subscription.long_polling_timeout, a.subscription.fifo)


def test_a_groups_retry_policy(both_servers, apache, pocketmq):
    """updateSubGroup -p: the broker keeps the policy as 5.5.0's (a missing field filled with its default, a group
    without one CUSTOMIZED), and a push consumer of the group gets it as its backoff from either proxy."""
    stored = {name: asyncio.run(stored_retry_policies(namesrv))
              for name, (_, namesrv) in (("apache", apache), ("pocketmq", pocketmq))}
    assert stored["pocketmq"] == stored["apache"]
    assert stored["apache"]["ParityExponentialG"] == {
        "type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 12000, "max": 7200000, "multiplier": 2}}
    for group in RETRY_GROUPS:
        replies = settings_replies(both_servers, D.Settings(
            client_type=D.ClientType.PUSH_CONSUMER, subscription=D.Subscription(
                group=D.Resource(name=group), subscriptions=[D.SubscriptionEntry(
                    topic=D.Resource(name=TOPIC),
                    expression=D.FilterExpression(type=D.FilterType.TAG, expression="*"))])),
            f"parity-{group}")
        a, p = replies["apache"].settings, replies["pocketmq"].settings
        assert p.backoff_policy == a.backoff_policy, group
        assert a.backoff_policy.max_attempts == 2
