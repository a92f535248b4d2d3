"""PULL_MESSAGE without suspension: pre-checks, the status -> code table, tag filtering, offset commits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pocketmq.broker.filter import (
    ExpressionMessageFilter,
    SubscriptionParseError,
    build_subscription_data,
    message_filter_for,
)
from pocketmq.broker.processor.pull_message_processor import _tag_filter, pull_response_code
from pocketmq.common.codec import decode_all
from pocketmq.common.java_hash import java_string_hash
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import GetMaxOffsetRequestHeader
from pocketmq.storage.results import GetMessageStatus

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUBSCRIPTION = 0x4


async def fill(mq, topic: str, tags: list[str | None], queue_id: int = 0) -> None:
    for i, tag in enumerate(tags):
        resp = await mq.send(topic, f"m{i}".encode(), queue_id=queue_id, tags=tag)
        assert resp.code == ResponseCode.SUCCESS, resp.remark


def test_status_to_code_table() -> None:
    S, R = GetMessageStatus, ResponseCode
    table = {
        S.FOUND: R.SUCCESS,
        S.NO_MATCHED_MESSAGE: R.PULL_RETRY_IMMEDIATELY,
        S.MESSAGE_WAS_REMOVING: R.PULL_RETRY_IMMEDIATELY,
        S.OFFSET_TOO_SMALL: R.PULL_OFFSET_MOVED,
        S.OFFSET_OVERFLOW_BADLY: R.PULL_OFFSET_MOVED,
        S.OFFSET_OVERFLOW_ONE: R.PULL_NOT_FOUND,
        S.OFFSET_FOUND_NULL: R.PULL_NOT_FOUND,
    }
    for status, code in table.items():
        assert pull_response_code(status, 5) == code, status
    for status in (S.NO_MESSAGE_IN_QUEUE, S.NO_MATCHED_LOGIC_QUEUE):
        assert pull_response_code(status, 0) == R.PULL_NOT_FOUND
        assert pull_response_code(status, 3) == R.PULL_OFFSET_MOVED


def test_subscription_expression_parsing() -> None:
    sub = build_subscription_data("T", " TagA ||TagB|| TagA ", "TAG", 9)
    assert sub.tags_set == ["TagA", "TagB"] and sub.code_set == [java_string_hash("TagA"), java_string_hash("TagB")]
    assert sub.sub_version == 9
    every = ExpressionMessageFilter(build_subscription_data("T", "*"))
    assert every.is_matched_by_consume_queue(12345) and every.is_matched_by_consume_queue(0)
    assert ExpressionMessageFilter(build_subscription_data("T", None)).match_all
    nothing = ExpressionMessageFilter(build_subscription_data("T", " || "))
    assert not nothing.is_matched_by_consume_queue(0) and not nothing.is_matched_by_consume_queue(1)


@pytest.mark.parametrize(
    ("expression", "sub_string", "tags"),
    [
        # FilterAPI.buildSubscriptionData: only nothing or exactly "*" is everything; the rest keeps its text.
        ("", "*", []),
        (None, "*", []),
        ("*", "*", []),
        (" ", " ", []),
        (" * ", " * ", ["*"]),
        ("*||TagA", "*||TagA", ["*", "TagA"]),
        ("|| ||", "|| ||", []),
        ("||TagA", "||TagA", ["TagA"]),
        ("TagA||", "TagA||", ["TagA"]),
        ("|||", "|||", ["|"]),
        # String.trim strips every char up to the space, and only those
        ("\tTagA\x00 ||\x1fTagB\n", "\tTagA\x00 ||\x1fTagB\n", ["TagA", "TagB"]),
        ("\u3000TagA\xa0", "\u3000TagA\xa0", ["\u3000TagA\xa0"]),
    ],
)
def test_tag_expressions_as_rocketmq_builds_them(expression, sub_string, tags) -> None:
    sub = build_subscription_data("T", expression)
    assert (sub.sub_string, sub.tags_set, sub.code_set) == (sub_string, tags, [java_string_hash(t) for t in tags])


@pytest.mark.parametrize("expression", ["||", "||||", "||||||"])
def test_an_expression_of_separators_alone_is_refused_as_rocketmq_does(expression) -> None:
    # String.split drops the trailing empty strings, leaving nothing: "subString split error"
    with pytest.raises(SubscriptionParseError, match="subString split error"):
        build_subscription_data("T", expression)


async def test_blank_padded_and_separator_only_tag_pulls(broker, mq, dispatched) -> None:
    # Only "*" itself (or nothing) is every message: " " names no tag and matches nothing, " * " the tag "*".
    # pocketmq stripped the expression first, so both were every message; "||" was no match instead of 23.
    await fill(mq, "TopicBlank", ["TagA", "*", None])
    await dispatched(broker)
    blank = await mq.pull("G", "TopicBlank", 0, 0, subscription=" ")
    assert blank.code == ResponseCode.PULL_RETRY_IMMEDIATELY and blank.ext_fields["nextBeginOffset"] == 3
    star = await mq.pull("G", "TopicBlank", 0, 0, subscription=" * ")
    assert star.code == ResponseCode.SUCCESS and [m.body for m in decode_all(star.body)] == [b"m1"]
    every = await mq.pull("G", "TopicBlank", 0, 0, subscription="")
    assert len(decode_all(every.body)) == 3
    refused = await mq.pull("G", "TopicBlank", 0, 0, subscription="||")
    assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "subString split error" in refused.remark


async def test_a_long_tag_expression_is_answered_and_not_remembered(broker, mq, dispatched) -> None:
    # Each expression was kept in the processor's table (up to 1,024 of up to a frame each): a client sending
    # ever-new long ones grew the broker by their size. Thousands of tags, each named twice, are parsed once each.
    await fill(mq, "TopicLongTags", ["TagA", "T7", None])
    await dispatched(broker)
    kept = len(broker.pull_message_processor._posted_tag_filters)
    expression = "||".join(f"T{i % 3000}" for i in range(6000))
    got = await mq.pull("G", "TopicLongTags", 0, 0, subscription=expression)
    assert got.code == ResponseCode.SUCCESS and [m.body for m in decode_all(got.body)] == [b"m1"]
    assert len(broker.pull_message_processor._posted_tag_filters) == kept


async def test_tag_filter_by_hash_code(broker, mq, dispatched) -> None:
    await fill(mq, "TopicTags", ["TagA", "TagB", None, "TagC", "TagA"])
    await dispatched(broker)
    resp = await mq.pull("G", "TopicTags", 0, 0, subscription="TagA || TagC")
    assert resp.code == ResponseCode.SUCCESS
    assert [(m.body, m.tags) for m in decode_all(resp.body)] == [(b"m0", "TagA"), (b"m3", "TagC"), (b"m4", "TagA")]
    assert resp.ext_fields["nextBeginOffset"] == 5

    everything = await mq.pull("G", "TopicTags", 0, 0, subscription="*")
    assert len(decode_all(everything.body)) == 5

    # Entries scanned but none matched: retry at once from past them.
    none = await mq.pull("G", "TopicTags", 0, 1, subscription="TagZ")
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY and none.ext_fields["nextBeginOffset"] == 5
    assert none.body is None


async def test_posted_subscriptions_each_filter_by_their_own_tags(cluster, dispatched) -> None:
    broker = await cluster.broker(enable_property_filter=True)  # SQL92 is off by default, as in RocketMQ
    mq = cluster.mq(broker)
    # The broker parses a posted TAG subscription once and keeps its filter: pulls alternating between
    # expressions on one topic (and one expression on two topics) must each get their own filter back.
    await fill(mq, "TopicTags", ["TagA", "TagB", None, "TagC", "TagA"])
    await fill(mq, "TopicTags2", ["TagB", "TagA"])
    await dispatched(broker)

    async def tags(topic: str, expression: str | None, **kwargs) -> list[str | None]:
        resp = await mq.pull("G", topic, 0, 0, subscription=expression, **kwargs)
        return [m.tags for m in decode_all(resp.body)] if resp.code == ResponseCode.SUCCESS else []

    for _ in range(2):
        assert await tags("TopicTags", "TagA") == ["TagA", "TagA"]
        assert await tags("TopicTags", "TagB") == ["TagB"]
        assert await tags("TopicTags", "*") == ["TagA", "TagB", None, "TagC", "TagA"]
        assert await tags("TopicTags", "TagC || TagB") == ["TagB", "TagC"]
        assert await tags("TopicTags2", "TagB") == ["TagB"]
        assert await tags("TopicTags", "TagA", sub_version=7) == ["TagA", "TagA"]
        assert await tags("TopicTags", "TAGS = 'TagB'", expression_type="SQL92") == ["TagB"]
        assert await tags("TopicTags", "TagA", expression_type=None) == ["TagA", "TagA"]  # (None: TAG)


async def test_pull_status_mapping_over_the_wire(broker, mq, dispatched) -> None:
    await fill(mq, "TopicStatus", [None] * 3)
    await dispatched(broker)
    over_one = await mq.pull("G", "TopicStatus", 0, 3)
    assert over_one.code == ResponseCode.PULL_NOT_FOUND and over_one.ext_fields["nextBeginOffset"] == 3
    badly = await mq.pull("G", "TopicStatus", 0, 10)
    assert badly.code == ResponseCode.PULL_OFFSET_MOVED
    assert (badly.ext_fields["nextBeginOffset"], badly.ext_fields["maxOffset"]) == (3, 3)
    too_small = await mq.pull("G", "TopicStatus", 0, -5)
    assert too_small.code == ResponseCode.PULL_OFFSET_MOVED and too_small.ext_fields["nextBeginOffset"] == 0
    # A queue that holds nothing: offset 0 is "no new message", any other offset has moved.
    empty0 = await mq.pull("G", "TopicStatus", 1, 0)
    assert empty0.code == ResponseCode.PULL_NOT_FOUND
    empty5 = await mq.pull("G", "TopicStatus", 1, 5)
    assert empty5.code == ResponseCode.PULL_OFFSET_MOVED and empty5.ext_fields["nextBeginOffset"] == 0
    assert over_one.ext_fields["suggestWhichBrokerId"] == 0

    # Each moved offset is recorded in OFFSET_MOVED_EVENT, as a master does.
    await dispatched(broker)
    resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader("OFFSET_MOVED_EVENT", 0))
    assert resp.ext_fields["offset"] == 3


async def test_lite_pull_message_code_is_a_pull(broker, mq, dispatched) -> None:
    """RocketMQ 5.x's DefaultLitePullConsumer pulls with LITE_PULL_MESSAGE (361) and PULL_MESSAGE's header."""
    await fill(mq, "TopicLite", ["a", "b"])
    await dispatched(broker)
    header = mq.pull_request("G", "TopicLite", 0, 0)
    lite = await mq.invoke(RequestCode.LITE_PULL_MESSAGE, header)
    plain = await mq.invoke(RequestCode.PULL_MESSAGE, header)
    assert lite.code == plain.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(lite.body)] == [m.body for m in decode_all(plain.body)] == [b"m0", b"m1"]


async def test_max_msg_nums_limits_the_batch(broker, mq, dispatched) -> None:
    await fill(mq, "TopicMax", [None] * 6)
    await dispatched(broker)
    resp = await mq.pull("G", "TopicMax", 0, 1, max_nums=2)
    assert [m.queue_offset for m in decode_all(resp.body)] == [1, 2]
    assert resp.ext_fields["nextBeginOffset"] == 3


async def test_a_negative_max_msg_nums_is_refused_where_apache_4_9_7_would_read(broker, mq, dispatched) -> None:
    """4.9.7's store makes its result list with maxMsgNums as the capacity once the offset is inside a queue that
    has messages: a negative one fails there (IllegalArgumentException, SYSTEM_ERROR) and the pull's commit is not
    made; outside (an empty queue, below the min, at or past the max) it answers as for any count. 0 reads one."""
    await fill(mq, "TopicNegMax", [None] * 3)
    await dispatched(broker)
    flags = FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET
    for max_nums in (-1, -(2**31)):
        resp = await mq.pull("GNeg", "TopicNegMax", 0, 1, max_nums=max_nums, sys_flag=flags, commit_offset=2)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "Illegal Capacity" in resp.remark
        assert (await mq.query_offset("GNeg", "TopicNegMax", 0)).ext_fields["offset"] == 0  # (nothing committed)
    at_max = await mq.pull("GNeg", "TopicNegMax", 0, 3, max_nums=-1)
    assert at_max.code == ResponseCode.PULL_NOT_FOUND and at_max.ext_fields["nextBeginOffset"] == 3
    below = await mq.pull("GNeg", "TopicNegMax", 0, -1, max_nums=-1)
    assert below.code == ResponseCode.PULL_OFFSET_MOVED and below.ext_fields["nextBeginOffset"] == 0
    empty = await mq.pull("GNeg", "TopicNegMax", 1, 0, max_nums=-1)
    assert empty.code == ResponseCode.PULL_NOT_FOUND
    one = await mq.pull("GNeg", "TopicNegMax", 0, 1, max_nums=0)
    assert [m.queue_offset for m in decode_all(one.body)] == [1]


async def test_pull_pre_checks(cluster) -> None:
    broker = await cluster.broker(enable_property_filter=True)  # SQL92 is off by default, as in RocketMQ
    mq = cluster.mq(broker)
    resp = await mq.pull("G", "NoSuchTopic", 0, 0)
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    await mq.create_topic("TopicChecks", queues=2)
    resp = await mq.pull("G", "TopicChecks", 2, 0)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId[2] is illegal" in resp.remark
    resp = await mq.pull("G", "TopicChecks", 0, 0, expression_type="SQL92", subscription="a >")
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "SQL92" in resp.remark
    resp = await mq.pull("G", "TopicChecks", 0, 0, expression_type="XPATH")
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    # Without FLAG_SUBSCRIPTION the subscription must come from a heartbeat.
    resp = await mq.pull("G", "TopicChecks", 0, 0, sys_flag=0)
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    resp = await mq.pull("bad group!", "TopicChecks", 0, 0)
    assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    resp = await mq.invoke(RequestCode.PULL_MESSAGE, {"consumerGroup": "G", "topic": "TopicChecks"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId" in resp.remark


async def test_disabled_group_and_unknown_group_without_auto_create(cluster) -> None:
    broker = await cluster.broker(auto_create_subscription_group=False)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicG")
    resp = await mq.pull("NewGroup", "TopicG", 0, 0)
    assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    body = encode_body(SubscriptionGroupConfig("Disabled", consume_enable=False))
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
    resp = await mq.pull("Disabled", "TopicG", 0, 0)
    assert resp.code == ResponseCode.NO_PERMISSION
    # CID_RMQ_SYS_ groups are created even without autoCreateSubscriptionGroup.
    assert (await mq.pull("CID_RMQ_SYS_X", "TopicG", 0, 0)).code == ResponseCode.PULL_NOT_FOUND


async def test_heartbeat_subscription_filters_pulls_without_subscription_flag(broker, mq, dispatched) -> None:
    await fill(mq, "TopicHb", ["A", "B", "A"])
    await dispatched(broker)
    assert (await mq.heartbeat("c1", {"GHb": {"TopicHb": "B"}}, sub_version=5)).code == 0
    resp = await mq.pull("GHb", "TopicHb", 0, 0, sys_flag=0, subscription=None, sub_version=5)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.tags for m in decode_all(resp.body)] == ["B"]
    stale = await mq.pull("GHb", "TopicHb", 0, 0, sys_flag=0, sub_version=6)
    assert stale.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    await mq.create_topic("TopicOther")
    unsubscribed = await mq.pull("GHb", "TopicOther", 0, 0, sys_flag=0)
    assert unsubscribed.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


async def test_broadcast_group_refused_when_group_disallows_it(broker, mq) -> None:
    await mq.create_topic("TopicBc")
    body = encode_body(SubscriptionGroupConfig("GBc", consume_broadcast_enable=False))
    await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    await mq.heartbeat("c1", {"GBc": {"TopicBc": "*"}}, message_model="BROADCASTING")
    resp = await mq.pull("GBc", "TopicBc", 0, 0, sys_flag=0)
    assert resp.code == ResponseCode.NO_PERMISSION and "broadcast" in resp.remark


async def test_commit_offset_piggybacks_on_pull(broker, mq, dispatched) -> None:
    await fill(mq, "TopicCommit", [None] * 2)
    await dispatched(broker)
    flags = FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET
    resp = await mq.pull("GC", "TopicCommit", 0, 0, sys_flag=flags, commit_offset=7)
    assert resp.code == ResponseCode.SUCCESS
    assert (await mq.query_offset("GC", "TopicCommit", 0)).ext_fields["offset"] == 7
    # Without the flag the header's commitOffset is ignored.
    await mq.pull("GC", "TopicCommit", 0, 0, sys_flag=FLAG_SUBSCRIPTION, commit_offset=1)
    assert (await mq.query_offset("GC", "TopicCommit", 0)).ext_fields["offset"] == 7


async def test_a_remembered_subscription_skips_none_of_the_checks(cluster, dispatched) -> None:
    # The broker keeps the filter of each posted TAG expression; every check before the filter still runs
    # on every pull, found or not.
    broker = await cluster.broker(auto_create_subscription_group=False)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicMemo", queues=2)
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                            body=encode_body(SubscriptionGroupConfig("G")))).code == 0
    await fill(mq, "TopicMemo", ["TagA", "TagB"])
    await dispatched(broker)
    for _ in range(2):  # the first pull computes the filter, the second finds it
        ok = await mq.pull("G", "TopicMemo", 0, 0, subscription="TagA")
        assert [m.tags for m in decode_all(ok.body)] == ["TagA"]
        assert (await mq.pull("G", "NoSuchTopic", 0, 0, subscription="TagA")).code == ResponseCode.TOPIC_NOT_EXIST
        assert (await mq.pull("G", "TopicMemo", 2, 0, subscription="TagA")).code == ResponseCode.SYSTEM_ERROR
        unknown_group = await mq.pull("Other", "TopicMemo", 0, 0, subscription="TagA")
        assert unknown_group.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    body = encode_body(SubscriptionGroupConfig("G", consume_enable=False))
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
    assert (await mq.pull("G", "TopicMemo", 0, 0, subscription="TagA")).code == ResponseCode.NO_PERMISSION


@given(expression=st.one_of(st.none(), st.text(alphabet="ABab *|_-é", max_size=20)),
       topic=st.sampled_from(["TopicA", "TopicB"]), sub_version=st.integers(0, 2**40))
def test_the_remembered_tag_filter_is_the_one_the_subscription_gives(
    expression: str | None, topic: str, sub_version: int
) -> None:
    # The key is the expression alone: the filter must not depend on the topic or the version it came with.
    try:
        remembered = _tag_filter(expression)
    except SubscriptionParseError:
        with pytest.raises(SubscriptionParseError):
            build_subscription_data(topic, expression, "TAG", sub_version)
        return
    direct = message_filter_for(build_subscription_data(topic, expression, "TAG", sub_version))
    assert (remembered.match_all, remembered.codes) == (direct.match_all, direct.codes)
