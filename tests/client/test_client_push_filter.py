"""Push consumers get exactly the messages their tag or SQL92 expression selects; push and lite pull consumers
take what the broker's SQL92 filter delivered without judging it again."""

from __future__ import annotations

from typing import Any

import pytest
from push_helpers import FAST_BROKER, create_topic, make_consumer, make_producer, unique

from pocketmq import embedded
from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    LitePullConsumer,
    Message,
    MQClientException,
    PushConsumer,
)
from pocketmq.common.java_hash import java_string_hash


async def test_tag_and_sql92_subscriptions(tmp_path, poll) -> None:
    assert java_string_hash("Aa") == java_string_hash("BB")  # the broker cannot tell these two apart
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER, enable_property_filter=True) as cluster:
        topic = unique("FilterT")
        await create_topic(cluster, topic, 2)
        got: dict[str, list[bytes]] = {"tags": [], "sql": []}

        def consumer(name: str, expression: str, expression_type: str) -> Any:
            c = make_consumer(cluster, unique(name), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            c.subscribe(topic, expression, expression_type)

            async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
                got[name].extend(m.body for m in msgs)
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

            c.register_message_listener(on_messages)
            return c

        async with make_producer(cluster) as producer:
            for i in range(20):
                tag = ["Aa", "BB", "TagC", None][i % 4]
                props = {"n": str(i), "color": "red" if i % 3 == 0 else "blue"}
                await producer.send(Message(topic, f"{i}".encode(), tags=tag, properties=props))
        async with consumer("tags", "Aa || TagC", "TAG"), consumer("sql", "n >= 10 AND color = 'red'", "SQL92"):
            want_tags = sorted(f"{i}".encode() for i in range(20) if i % 4 in (0, 2))
            want_sql = sorted(f"{i}".encode() for i in range(10, 20) if i % 3 == 0)
            await poll(lambda: sorted(got["tags"]) == want_tags and sorted(got["sql"]) == want_sql, timeout=10)


async def test_sql92_is_the_brokers_decision_alone(tmp_path, poll) -> None:
    # The consumers evaluated the expression again on what they pulled, whose properties then also carried
    # MIN_OFFSET and MAX_OFFSET: a filter naming those dropped every message the broker had delivered (and moved
    # the offset past them). RocketMQ's client re-checks tags only (PullAPIWrapper.processPullResult).
    expression = "MAX_OFFSET IS NULL AND n >= 0"
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER, enable_property_filter=True) as cluster:
        topic = unique("FilterRecheck")
        await create_topic(cluster, topic, 1)
        async with make_producer(cluster) as producer:
            for i in range(3):
                await producer.send(Message(topic, f"{i}".encode(), properties={"n": str(i)}))
        pushed: list[bytes] = []
        push = make_consumer(cluster, unique("push"), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        push.subscribe(topic, expression, "SQL92")

        async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
            pushed.extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        push.register_message_listener(on_messages)
        pulled: list[bytes] = []
        lite = LitePullConsumer(unique("lite"), cluster.namesrv_addr, instance_name=unique("lite"),
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", rebalance_interval=0.2)
        lite.subscribe(topic, expression, "SQL92")
        async with push, lite:
            await poll(lambda: sorted(pushed) == [b"0", b"1", b"2"], timeout=10)
            for _ in range(200):
                pulled += [m.body for m in await lite.poll(timeout=0.05)]
                if len(pulled) >= 3:
                    break
            assert sorted(pulled) == [b"0", b"1", b"2"]


def test_a_malformed_sql92_expression_is_refused_at_subscribe() -> None:
    c = PushConsumer("G", "127.0.0.1:9876")
    with pytest.raises(MQClientException) as e:
        c.subscribe("T", "n >> 3", "SQL92")
    assert e.value.response_code == 23  # SUBSCRIPTION_PARSE_FAILED


def test_a_tag_expression_of_separators_alone_is_refused_at_subscribe() -> None:
    # FilterAPI.buildSubscriptionData's "subString split error", which RocketMQ's subscribe throws as well.
    c = PushConsumer("G", "127.0.0.1:9876")
    with pytest.raises(MQClientException, match="subString split error") as e:
        c.subscribe("T", "||")
    assert e.value.response_code == 23
    c.subscribe("T", " ")  # names no tag (the broker will match nothing), but is no error


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
async def test_sql92_against_a_default_broker_fails_the_start_naming_the_setting(tmp_path, protocol) -> None:
    """enablePropertyFilter is off by default, as in RocketMQ; a SQL92 consumer learns it at start()
    (CHECK_CLIENT_CONFIG), not from a warning at every pull."""
    async with embedded.EmbeddedCluster(tmp_path, **FAST_BROKER) as cluster:
        assert cluster.broker.broker_config.enable_property_filter is False
        topic = unique("FilterOffT")
        await create_topic(cluster, topic, 1)
        c = make_consumer(cluster, unique("FilterOffG"), protocol=protocol)
        c.subscribe(topic, "n > 3", "SQL92")
        c.register_message_listener(lambda msgs, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        with pytest.raises(MQClientException) as caught:
            await c.start()
        assert caught.value.response_code == 1  # SYSTEM_ERROR, the broker's code
        message = str(caught.value)
        assert "enablePropertyFilter=true" in message and cluster.broker_addr in message and "n > 3" in message
        # Tags need nothing of the broker: the same consumer starts with a tag subscription.
        tags = make_consumer(cluster, unique("FilterOffTagG"), protocol=protocol)
        tags.subscribe(topic, "TagA")
        tags.register_message_listener(lambda msgs, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        async with tags:
            pass


async def test_check_client_config_answers(tmp_path) -> None:
    from pocketmq.client.client_config import ClientConfig
    from pocketmq.client.exceptions import MQBrokerException
    from pocketmq.client.filter_api import build_subscription_data
    from pocketmq.client.impl.mq_client_api import MQClientAPIImpl
    from pocketmq.remoting.client_body import SubscriptionData

    async with embedded.EmbeddedCluster(tmp_path, enable_property_filter=True) as cluster:
        api = MQClientAPIImpl(ClientConfig(cluster.namesrv_addr))
        try:
            addr = cluster.broker_addr
            await api.check_client_in_broker(addr, "G", "c1", build_subscription_data("T", "a > 1", "SQL92"), 3)
            await api.check_client_in_broker(addr, "G", "c1", build_subscription_data("T", "TagA"), 3)
            with pytest.raises(MQBrokerException) as caught:
                bad = SubscriptionData("T", "a >", expression_type="SQL92")  # built by hand: the client refuses it
                await api.check_client_in_broker(addr, "G", "c1", bad, 3)
            assert caught.value.code == 23  # SUBSCRIPTION_PARSE_FAILED
        finally:
            await api.shutdown()
