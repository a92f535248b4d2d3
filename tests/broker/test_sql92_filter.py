"""SQL92 subscriptions over a real broker: pulls return exactly the matching messages, long polling wakes only
for a matching one, and malformed expressions are refused (broker: SUBSCRIPTION_PARSE_FAILED; client: a clear
MQClientException before anything is sent)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pop_wire import PopClient

from pocketmq.broker.filter import Sql92MessageFilter, record_properties
from pocketmq.client import Message, MQBrokerException, MQClientException, Producer, PullConsumer, PullStatus
from pocketmq.client.filter_api import build_subscription_data, message_matches
from pocketmq.common.codec import decode_all, encode
from pocketmq.common.constants import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
from pocketmq.common.message import pack_host, properties_to_string
from pocketmq.common.sql92 import compile_sql92
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import ConsumerData, HeartbeatData, SubscriptionData
from pocketmq.remoting.codes import RequestCode, ResponseCode


@pytest.fixture
async def broker(cluster: Any) -> Any:
    """SQL92 is off by default, as in RocketMQ: these tests turn it on."""
    return await cluster.broker(enable_property_filter=True)


FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
PARKED = FLAG_SUSPEND | FLAG_SUBSCRIPTION
SQL = {"expression_type": "SQL92"}

# (body, properties): numbers as strings (as on the wire), missing properties, decimals, other strings.
MESSAGES: list[tuple[bytes, dict[str, str]]] = [
    (b"m0", {"a": "1", "region": "eu"}),
    (b"m1", {"a": "7", "region": "us"}),
    (b"m2", {"region": "eu"}),  # no a
    (b"m3", {"a": "12", "region": "eu", "TAGS": "TagX"}),
    (b"m4", {"a": "7", "price": "9.5"}),  # no region
    (b"m5", {"a": "not-a-number", "region": "eu"}),
    (b"m6", {"a": "-3", "region": "apac", "price": "10.25"}),
]


async def fill(mq: Any, topic: str) -> None:
    await mq.create_topic(topic, queues=1)
    for body, props in MESSAGES:
        resp = await mq.send(topic, body, properties=mq.props(**props))
        assert resp.code == ResponseCode.SUCCESS, resp.remark


async def pulled(mq: Any, topic: str, expression: str, **kwargs: Any) -> list[bytes]:
    resp = await mq.pull("G", topic, 0, 0, subscription=expression, **SQL, **kwargs)
    assert resp.code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY), (resp.code, resp.remark)
    assert resp.ext_fields["nextBeginOffset"] == len(MESSAGES)  # non-matching messages are skipped, not waited on
    return [m.body for m in decode_all(resp.body)] if resp.body else []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a > 5", [b"m1", b"m3", b"m4"]),  # m5 is not a number: no match; m2 has no a
        ("a BETWEEN 1 AND 7", [b"m0", b"m1", b"m4"]),
        ("a NOT BETWEEN 1 AND 7", [b"m3", b"m6"]),
        ("a = 7 AND region = 'us'", [b"m1"]),
        ("region = 'eu'", [b"m0", b"m2", b"m3", b"m5"]),
        ("region <> 'eu'", [b"m1", b"m6"]),  # m4 has no region: unknown, not "different"
        ("region IN ('us', 'apac')", [b"m1", b"m6"]),
        ("region NOT IN ('us', 'apac')", [b"m0", b"m2", b"m3", b"m5"]),
        ("region IS NULL", [b"m4"]),
        ("a IS NULL OR a < 0", [b"m2", b"m6"]),
        ("price > 9.6", [b"m6"]),
        ("price >= 9.5 AND a = 7", [b"m4"]),
        ("TAGS = 'TagX'", [b"m3"]),  # system properties are properties too
        ("NOT (region = 'eu') AND a IS NOT NULL", [b"m1", b"m6"]),
        ("nothing = 'x'", []),
        ("TRUE", [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5", b"m6"]),
    ],
)
async def test_pull_returns_exactly_the_matching_messages(cluster, broker, dispatched, expression, expected) -> None:
    mq = cluster.mq(broker)
    await fill(mq, "TopicSql")
    await dispatched(broker)
    assert await pulled(mq, "TopicSql", expression) == expected


async def test_nothing_matches_answers_retry_immediately_past_the_scanned_messages(cluster, broker, dispatched) -> None:
    mq = cluster.mq(broker)
    await fill(mq, "TopicSqlNone")
    await dispatched(broker)
    resp = await mq.pull("G", "TopicSqlNone", 0, 0, subscription="a = 1000", **SQL)
    assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY  # NO_MATCHED_MESSAGE, as RocketMQ answers it
    assert resp.ext_fields["nextBeginOffset"] == len(MESSAGES)


async def test_heartbeat_registered_sql92_subscription_filters_pulls(cluster, broker, dispatched) -> None:
    mq = cluster.mq(broker)
    await fill(mq, "TopicSqlHb")
    await dispatched(broker)
    sub = SubscriptionData("TopicSqlHb", "a > 5 AND region IS NOT NULL", sub_version=1, expression_type="SQL92")
    hb = HeartbeatData("cid-1", [], [ConsumerData("G", subscription_data_set=[sub])])
    assert (await mq.invoke(RequestCode.HEART_BEAT, body=encode_body(hb))).code == ResponseCode.SUCCESS
    # No FLAG_SUBSCRIPTION: the broker filters by what the heartbeat registered.
    resp = await mq.pull("G", "TopicSqlHb", 0, 0, sys_flag=0, subscription=None, expression_type=None)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert [m.body for m in decode_all(resp.body)] == [b"m1", b"m3"]


async def test_long_polling_wakes_only_for_a_matching_message(cluster, broker, poll, dispatched) -> None:
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicSqlLp", queues=1)
    hold = broker.pull_request_hold_service
    pull = asyncio.create_task(
        consumer.pull(
            "G", "TopicSqlLp", 0, 0, sys_flag=PARKED, subscription="a > 5", suspend_ms=10_000, timeout=15, **SQL
        )
    )
    await poll(lambda: hold.parked_count == 1)
    for props in ({"a": "1"}, {"b": "9"}, {"a": "x"}):  # smaller, missing, not a number
        await producer.send("TopicSqlLp", b"no", properties=producer.props(**props))
    await dispatched(broker)
    # The dispatcher reported those arrivals before wait_dispatched returned, and the hold service's drain
    # callback was queued on this loop before our own wake-up: it has run by now, and woke nobody.
    assert hold.wakeups == 0 and hold.parked_count == 1 and not pull.done()
    await producer.send("TopicSqlLp", b"yes", properties=producer.props(a="6"))
    resp = await asyncio.wait_for(pull, 5.0)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(resp.body)] == [b"yes"]
    assert resp.ext_fields["nextBeginOffset"] == 4
    assert hold.wakeups == 1


@pytest.mark.parametrize("expression", ["a >", "a = 1 b", "a > 'x'", "(a = 1", "a IN (1)", ""])
async def test_malformed_expression_is_refused_with_subscription_parse_failed(cluster, broker, expression) -> None:
    mq = cluster.mq(broker)
    await mq.create_topic("TopicSqlBad", queues=1)
    resp = await mq.pull("G", "TopicSqlBad", 0, 0, subscription=expression, **SQL)
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "SQL92" in resp.remark or "Expression" in resp.remark
    # The broker is unharmed: a valid expression still works on the same connection.
    resp = await mq.pull("G", "TopicSqlBad", 0, 0, subscription="a > 1", **SQL)
    assert resp.code == ResponseCode.PULL_NOT_FOUND


@pytest.mark.parametrize("enable_property_filter", [True, False])
async def test_an_empty_sql92_expression_of_a_pull_is_refused_as_4_9_7_refuses_it(cluster, enable_property_filter
                                                                                   ) -> None:
    """4.9.7's FilterAPI.build throws "Expression can't be null!" for it, answered SUBSCRIPTION_PARSE_FAILED "parse
    the consumer's subscription failed" before the enablePropertyFilter check (found by
    tests/apache/test_differential_fuzz_filters.py)."""
    broker = await cluster.broker(enable_property_filter=enable_property_filter)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicSqlEmpty", queues=1)
    resp = await mq.pull("G", "TopicSqlEmpty", 0, 0, subscription="", **SQL)
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert resp.remark.startswith("parse the consumer's subscription failed"), resp.remark


async def test_malformed_registered_subscription_is_refused_at_heartbeat_and_pull(cluster, broker) -> None:
    mq = cluster.mq(broker)
    await mq.create_topic("TopicSqlBadHb", queues=1)
    bad = SubscriptionData("TopicSqlBadHb", "a >> 1", sub_version=1, expression_type="SQL92")
    hb = HeartbeatData("cid-bad", [], [ConsumerData("GB", subscription_data_set=[bad])])
    resp = await mq.invoke(RequestCode.HEART_BEAT, body=encode_body(hb))
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "group GB topic TopicSqlBadHb" in resp.remark and "position" in resp.remark
    # Registered anyway (one bad subscription does not expire the client's other groups) ...
    assert broker.consumer_manager.get_consumer_group_info("GB") is not None
    # ... and its pulls are refused with the same code.
    resp = await mq.pull("GB", "TopicSqlBadHb", 0, 0, sys_flag=0, subscription=None, expression_type=None)
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_property_filter_disabled_refuses_sql92_as_rocketmq_does(cluster) -> None:
    broker = await cluster.broker(enable_property_filter=False)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicSqlOff", queues=1)
    resp = await mq.pull("G", "TopicSqlOff", 0, 0, subscription="a > 1", **SQL)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "The broker does not support consumer to filter message by SQL92"
    resp = await mq.pull("G", "TopicSqlOff", 0, 0, subscription="*")  # tags still work
    assert resp.code == ResponseCode.PULL_NOT_FOUND


async def test_an_expression_too_long_to_parse_is_refused_at_once_and_the_broker_answers_meanwhile(
    cluster, broker
) -> None:
    # A 1.2 MB chain of ORs with a syntax error at its end took the event loop for about 45 s (each OR copied the
    # chain so far): the ping waited for it, past any client's timeout. Now it is refused before parsing.
    mq, other = cluster.mq(broker), cluster.mq(broker)
    await mq.create_topic("TopicSqlHuge", queues=1)
    huge = " OR ".join(f"a = {i}" for i in range(90_000)) + " OR )"
    pull = asyncio.create_task(mq.pull("G", "TopicSqlHuge", 0, 0, subscription=huge, **SQL))
    ping = await other.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert ping.code == ResponseCode.SUCCESS
    resp = await pull
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert f"longer than the {64 * 1024} pocketmq accepts" in resp.remark
    # The longest accepted expression still filters.
    at_limit = " OR ".join(f"a = {i}" for i in range(5_000))
    at_limit += " " * (64 * 1024 - len(at_limit))
    await mq.send("TopicSqlHuge", b"hit", properties=mq.props(a="4999"))
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    resp = await mq.pull("G", "TopicSqlHuge", 0, 0, subscription=at_limit, **SQL)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert [m.body for m in decode_all(resp.body)] == [b"hit"]


async def test_pop_filters_by_sql92_whatever_enable_property_filter(cluster, dispatched) -> None:
    # RocketMQ 5's PopMessageProcessor never looks at enablePropertyFilter (a 5.5.0 broker with it off serves SQL92
    # pops); pocketmq answered SYSTEM_ERROR. Pulls still refuse, as RocketMQ's PullMessageProcessor does.
    broker = await cluster.broker(enable_property_filter=False)
    pc = PopClient(cluster.mq(broker), broker.broker_config.broker_name)
    await fill(pc.mq, "TopicSqlPopOff")
    await dispatched(broker)
    popped = await pc.pop("GP", "TopicSqlPopOff", exp="a > 5", exp_type="SQL92")
    assert popped.response.code == ResponseCode.SUCCESS, popped.response.remark
    assert sorted(popped.bodies) == [b"m1", b"m3", b"m4"]
    bad = await pc.pop("GP2", "TopicSqlPopOff", exp="a >>> 1", exp_type="SQL92")
    assert bad.response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    resp = await pc.mq.pull("G", "TopicSqlPopOff", 0, 0, subscription="a > 5", **SQL)
    assert resp.code == ResponseCode.SYSTEM_ERROR


@pytest.mark.parametrize("exp", ["", None])
async def test_pop_of_type_sql92_without_an_expression_takes_every_message(cluster, broker, dispatched, exp) -> None:
    # RocketMQ 5 pops with TAG "*" when the expression is empty or missing, whatever the type; pocketmq compiled
    # it as SQL92 and answered SUBSCRIPTION_PARSE_FAILED.
    pc = PopClient(cluster.mq(broker), broker.broker_config.broker_name)
    await fill(pc.mq, "TopicSqlPopAll")
    await dispatched(broker)
    popped = await pc.pop("GP", "TopicSqlPopAll", exp=exp, exp_type="SQL92")
    assert popped.response.code == ResponseCode.SUCCESS, popped.response.remark
    assert sorted(popped.bodies) == sorted(body for body, _ in MESSAGES)


# --- through the client ---

_names = itertools.count()


async def test_pull_consumer_with_sql92_and_client_side_errors(tmp_path) -> None:
    async with (
        EmbeddedCluster(tmp_path, enable_property_filter=True) as cluster,
        Producer("PG", cluster.namesrv_addr, instance_name=f"p{next(_names)}") as producer,
        PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{next(_names)}") as consumer,
    ):
        for body, props in MESSAGES:
            user = {k: v for k, v in props.items() if k != "TAGS"}
            await producer.send(Message("TopicSqlClient", body, tags=props.get("TAGS"), properties=user), timeout=5)
        mqs = await consumer.fetch_subscribe_message_queues("TopicSqlClient")
        assert await asyncio.to_thread(cluster.store.wait_dispatched, 5.0)
        got: list[bytes] = []
        for mq in mqs:
            result = await consumer.pull(mq, "a > 5", 0, 32, **SQL)
            while result.pull_status in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                got += [m.body for m in result.msg_found_list]
                sub = build_subscription_data(mq.topic, "a > 5", "SQL92")
                assert all(message_matches(sub, m) for m in result.msg_found_list)
                result = await consumer.pull(mq, "a > 5", result.next_begin_offset, 32, **SQL)
        assert sorted(got) == [b"m1", b"m3", b"m4"]

        # A malformed expression never reaches the broker: a clear client exception, with the position.
        with pytest.raises(MQClientException) as info:
            await consumer.pull(mqs[0], "a > 5 AND", 0, 32, **SQL)
        assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert "SQL92 expression 'a > 5 AND'" in str(info.value) and "column 10" in str(info.value)

    async with (
        EmbeddedCluster(tmp_path / "off", enable_property_filter=False) as cluster,
        Producer("PG", cluster.namesrv_addr, instance_name=f"p{next(_names)}") as producer,
        PullConsumer("CG", cluster.namesrv_addr, instance_name=f"c{next(_names)}") as consumer,
    ):
        await producer.send(Message("TopicSqlOff", b"x", properties={"a": "9"}), timeout=5)
        mq = (await consumer.fetch_subscribe_message_queues("TopicSqlOff"))[0]
        with pytest.raises(MQBrokerException) as broker_error:
            await consumer.pull(mq, "a > 5", 0, 32, **SQL)
        assert broker_error.value.code == ResponseCode.SYSTEM_ERROR
        assert "does not support consumer to filter message by SQL92" in str(broker_error.value)


def test_message_matches_at_the_client() -> None:
    class Msg:
        def __init__(self, **props: str) -> None:
            self.properties = props

    tags = build_subscription_data("T", "TagA || TagB")
    assert message_matches(tags, Msg(TAGS="TagA")) and not message_matches(tags, Msg(TAGS="TagC"))
    assert not message_matches(tags, Msg())  # no tag: only '*' takes it
    assert message_matches(build_subscription_data("T", "*"), Msg())
    sql = build_subscription_data("T", "  a > 5 OR b = 'x'  ", "SQL92")
    assert sql.sub_string == "a > 5 OR b = 'x'" and sql.expression_type == "SQL92"
    assert message_matches(sql, Msg(a="6")) and message_matches(sql, Msg(b="x"))
    assert not message_matches(sql, Msg(a="5")) and not message_matches(sql, Msg())
    with pytest.raises(MQClientException) as info:
        build_subscription_data("T", "a BETWEEN 3 AND 1", "SQL92")
    assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "Illegal values of between" in str(info.value)



def test_record_properties_reads_records_of_both_host_widths() -> None:
    props = properties_to_string({"a": "7", "UNIQ_KEY": "K"})
    for sys_flag, host in ((0, "127.0.0.1"), (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG, "::1")):
        rec = encode(
            topic="T", body=b"body" * 10, properties=props, queue_id=0, queue_offset=0, physical_offset=0,
            sys_flag=sys_flag, born_host=pack_host(host, 1), store_host=pack_host(host, 2),
        )  # fmt: skip
        assert record_properties(rec) == props.encode()
        f = Sql92MessageFilter(compile_sql92("a = 7"))
        assert f.is_matched_by_commit_log(rec)
        assert not f.is_matched_by_commit_log(rec[:-3])  # truncated: the lengths no longer add up
    # Bytes that are no UTF-8 (a store Apache 4.9.7 wrote may hold them: it stores such a batch) read as U+FFFD, as
    # Java decodes them: the record matches what its other properties say (it matched nothing).
    odd = b"a\x011\x02bad\x01\xff\xfe"
    for expression in ("TRUE", "a = 1", "bad IS NOT NULL"):
        assert Sql92MessageFilter(compile_sql92(expression)).is_matched_by_properties(odd), expression


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_record_properties_never_raises_on_garbage(data: bytes) -> None:
    raw = record_properties(data)
    assert raw is None or isinstance(raw, bytes)
