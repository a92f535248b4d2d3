"""Topics, subscription groups, admin offset queries and message lookups."""

from __future__ import annotations

import asyncio
import json
import time

from pocketmq.broker import BrokerConfig
from pocketmq.broker.topic_config_manager import TopicConfigManager
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.java_hash import java_string_hash
from pocketmq.remoting.admin_body import ConsumeStats, ProducerTableInfo, ResetOffsetBody
from pocketmq.remoting.admin_header import (
    GetConsumeStatsRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    QueryConsumeQueueRequestHeader,
    ResetOffsetRequestHeader,
)
from pocketmq.remoting.body import TopicConfig, TopicConfigSerializeWrapper, TopicList, decode_body, encode_body
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.consume_queue_body import QueryConsumeQueueResponseBody
from pocketmq.remoting.header import (
    DeleteTopicRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)


def test_builtin_topics(tmp_path) -> None:
    table = TopicConfigManager(BrokerConfig(store_path_root_dir=str(tmp_path))).topic_config_table
    assert (table["TBW102"].perm, table["TBW102"].write_queue_nums) == (7, 8)
    assert table["SCHEDULE_TOPIC_XXXX"].read_queue_nums == 18
    assert (table["SELF_TEST_TOPIC"].write_queue_nums, table["OFFSET_MOVED_EVENT"].write_queue_nums) == (1, 1)
    assert table["BenchmarkTest"].write_queue_nums == 1024
    assert (table["DefaultCluster"].perm, table["broker-a"].perm, table["broker-a"].write_queue_nums) == (7, 7, 1)
    assert "DefaultCluster_REPLY_TOPIC" in table and "RMQ_SYS_TRACE_TOPIC" not in table
    no_auto = BrokerConfig(store_path_root_dir=str(tmp_path), auto_create_topic_enable=False)
    assert "TBW102" not in TopicConfigManager(no_auto).topic_config_table


async def test_created_topic_is_persisted_in_rocketmq_shape(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    before = broker.topic_config_manager.data_version.counter
    resp = await mq.create_topic("TopicPersist", queues=3, perm=4, order=True)
    assert resp.code == ResponseCode.SUCCESS
    # A change is journaled; compaction (at startup, shutdown, or when the journal is long) writes topics.json.
    await broker.topic_config_manager.persist()
    with open(broker.topic_config_manager.config_file_path) as f:
        data = json.load(f)
    assert set(data) == {"dataVersion", "topicConfigTable"}
    assert data["dataVersion"]["counter"] == before + 1
    assert data["topicConfigTable"]["TopicPersist"] == {
        "topicName": "TopicPersist",
        "readQueueNums": 3,
        "writeQueueNums": 3,
        "perm": 4,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": True,
    }
    broker = await cluster.restart(broker)
    tc = broker.topic_config_manager.select_topic_config("TopicPersist")
    assert (tc.write_queue_nums, tc.perm, tc.order) == (3, 4, True)
    assert broker.topic_config_manager.data_version.counter == before + 1


async def test_create_topic_refusals(broker, mq) -> None:
    for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", "broker-a", "rmq_sys_mine",
                  "DefaultCluster_REPLY_TOPIC"):
        resp = await mq.create_topic(topic)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "system topic" in resp.remark, topic
    resp = await mq.create_topic("bad/topic")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in resp.remark
    resp = await mq.create_topic("Negative", queues=-1)
    assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_a_topic_filter_type_java_has_no_enum_constant_of_is_refused(broker, mq) -> None:
    # 4.9.7's TopicFilterType.valueOf takes the two names alone, in capitals (found by the differential fuzz)
    for bad in ("single_tag", "", "FOO"):
        resp = await mq.create_topic("TopicFilter", topic_filter_type=bad)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "topicFilterType" in resp.remark, bad
    assert broker.topic_config_manager.select_topic_config("TopicFilter") is None
    assert (await mq.create_topic("TopicFilter", topic_filter_type="MULTI_TAG")).code == ResponseCode.SUCCESS
    tc = broker.topic_config_manager.select_topic_config("TopicFilter")
    assert tc is not None and tc.topic_filter_type == "MULTI_TAG"


async def test_a_max_num_or_count_past_a_java_int_or_a_negative_max_num_is_refused(broker, mq, dispatched) -> None:
    # QUERY_MESSAGE's maxNum and QUERY_CONSUME_QUEUE's count are Integers in 4.9.7's header classes: a text past
    # the int's range is its NumberFormatException, SYSTEM_ERROR (found by the differential fuzz)
    await mq.create_topic("TopicInts", queues=1)
    await mq.send("TopicInts", b"x", queue_id=0)
    await dispatched(broker)
    query = {"topic": "TopicInts", "key": "k", "beginTimestamp": "0", "endTimestamp": str(2**62)}
    cq = {"topic": "TopicInts", "queueId": "0", "index": "0"}
    for big, answered in ((str(2**31), False), (str(-(2**31) - 1), False), (str(2**31 - 1), True)):
        resp = await mq.invoke(RequestCode.QUERY_MESSAGE, {**query, "maxNum": big})
        assert resp.code == (ResponseCode.QUERY_NOT_FOUND if answered else ResponseCode.SYSTEM_ERROR), big
        resp = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, {**cq, "count": big})
        assert resp.code == (ResponseCode.SUCCESS if answered else ResponseCode.SYSTEM_ERROR), big
        assert answered or "count" in resp.remark
    # a negative maxNum is 4.9.7's IllegalArgumentException (the capacity of its list), 0 finds nothing
    for max_num, code in (("-1", ResponseCode.SYSTEM_ERROR), (str(-(2**31)), ResponseCode.SYSTEM_ERROR),
                          ("0", ResponseCode.QUERY_NOT_FOUND)):
        assert (await mq.invoke(RequestCode.QUERY_MESSAGE, {**query, "maxNum": max_num})).code == code, max_num


async def test_delete_topic_removes_config_queues_and_offsets(broker, mq, dispatched) -> None:
    await mq.create_topic("TopicDel", queues=2)
    await mq.send("TopicDel", b"x", queue_id=1)
    await mq.update_offset("G", "TopicDel", 1, 1)
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue("TopicDel", 1) == 1
    resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("TopicDel"))
    assert resp.code == ResponseCode.SUCCESS
    assert broker.topic_config_manager.select_topic_config("TopicDel") is None
    assert broker.store.get_max_offset_in_queue("TopicDel", 1) == 0
    assert broker.consumer_offset_manager.query_offset("G", "TopicDel", 1) == -1
    resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(""))
    assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_deleting_a_name_no_topic_can_have_is_refused_as_by_4_9_7(broker, mq) -> None:
    # 4.9.7 validates the name to delete as one to create (found by the differential fuzz): SYSTEM_ERROR
    for topic in ("bad/topic", "é", "a" * 128):
        resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))
        assert resp.code == ResponseCode.SYSTEM_ERROR and "The specified topic" in resp.remark, topic
    # a topic the broker holds under such a name (a POP retry topic of enableRetryTopicV2) is deleted, as by 5.x
    broker.topic_config_manager.update_topic_config(TopicConfig("%RETRY%g+T", read_queue_nums=1, write_queue_nums=1))
    resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("%RETRY%g+T"))
    assert resp.code == ResponseCode.SUCCESS
    assert broker.topic_config_manager.select_topic_config("%RETRY%g+T") is None


async def test_get_all_topic_config(broker, mq) -> None:
    await mq.create_topic("TopicListed")
    resp = await mq.invoke(RequestCode.GET_ALL_TOPIC_CONFIG)
    wrapper = decode_body(resp.body, TopicConfigSerializeWrapper)
    assert "TopicListed" in wrapper.topic_config_table and "TBW102" in wrapper.topic_config_table
    assert wrapper.data_version == broker.topic_config_manager.data_version


async def test_subscription_groups_are_persisted(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    cfg = SubscriptionGroupConfig("GroupCfg", retry_max_times=2, consume_broadcast_enable=False)
    resp = await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=encode_body(cfg))
    assert resp.code == ResponseCode.SUCCESS
    with open(broker.subscription_group_manager.config_file_path) as f:
        data = json.load(f)
    assert data["subscriptionGroupTable"]["GroupCfg"]["retryMaxTimes"] == 2
    assert "TOOLS_CONSUMER" in data["subscriptionGroupTable"] and "dataVersion" in data
    broker = await cluster.restart(broker)
    assert broker.subscription_group_manager.subscription_group_table["GroupCfg"] == cfg
    listed = await cluster.mq(broker).invoke(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert decode_body(listed.body)["subscriptionGroupTable"]["GroupCfg"]["consumeBroadcastEnable"] is False
    resp = await cluster.mq(broker).invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"\xc1")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "bad request" in resp.remark


async def test_one_subscription_group_config(cluster) -> None:
    """GET_SUBSCRIPTIONGROUP_CONFIG (RocketMQ 5, what its proxy reads): RocketMQ 5's consumeMessageOrderly kept and
    given back; written only when set, so a 4.9.8 group's JSON is as before."""
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    fifo = SubscriptionGroupConfig("FifoCfg", consume_message_orderly=True, retry_max_times=3)
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=encode_body(fifo))).code == \
        ResponseCode.SUCCESS
    resp = await mq.invoke(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, GetSubscriptionGroupConfigRequestHeader("FifoCfg"))
    assert resp.code == ResponseCode.SUCCESS and decode_body(resp.body, SubscriptionGroupConfig) == fifo
    assert "consumeMessageOrderly" not in SubscriptionGroupConfig("Plain").to_dict()
    broker = await cluster.restart(broker)
    assert broker.subscription_group_manager.subscription_group_table["FifoCfg"].consume_message_orderly
    broker.broker_config.auto_create_subscription_group = False
    resp = await cluster.mq(broker).invoke(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
                                           GetSubscriptionGroupConfigRequestHeader("NoSuchGroup"))
    assert (resp.code, resp.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")


async def test_queue_offset_queries(broker, mq, dispatched) -> None:
    await mq.create_topic("TopicOffsets")
    before = time.time_ns() // 1_000_000
    for i in range(3):
        await mq.send("TopicOffsets", f"m{i}".encode())
    await dispatched(broker)
    resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader("TopicOffsets", 0))
    assert resp.ext_fields["offset"] == 3
    resp = await mq.invoke(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader("TopicOffsets", 0))
    assert resp.ext_fields["offset"] == 0
    resp = await mq.invoke(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader("NoQueue", 5))
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == 0
    resp = await mq.invoke(
        RequestCode.GET_EARLIEST_MSG_STORETIME, GetEarliestMsgStoretimeRequestHeader("TopicOffsets", 0)
    )
    earliest = resp.ext_fields["timestamp"]
    assert before <= earliest <= time.time_ns() // 1_000_000
    resp = await mq.invoke(
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader("TopicOffsets", 0, earliest)
    )
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == 0
    resp = await mq.invoke(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader("TopicOffsets", 0, 2**62))
    assert resp.ext_fields["offset"] == 3


async def test_query_message_by_key_and_view_by_id(broker, mq, dispatched) -> None:
    sent = await mq.send("TopicKeys", b"keyed", keys="order-1 order-2")
    await mq.send("TopicKeys", b"other", keys="order-3")
    await dispatched(broker)
    header = QueryMessageRequestHeader("TopicKeys", "order-2", 32, 0, 2**62)
    resp = await mq.invoke(RequestCode.QUERY_MESSAGE, header)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(resp.body)] == [b"keyed"]
    assert resp.ext_fields["indexLastUpdateTimestamp"] > 0
    missing = await mq.invoke(RequestCode.QUERY_MESSAGE, QueryMessageRequestHeader("TopicKeys", "nope", 32, 0, 2**62))
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    # (as RocketMQ's: the index's last update comes only with what it found)
    assert (missing.ext_fields["indexLastUpdateTimestamp"], missing.ext_fields["indexLastUpdatePhyoffset"]) == (0, 0)

    _, offset = decode_message_id(sent.ext_fields["msgId"])
    resp = await mq.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset))
    [msg] = decode_all(resp.body)
    assert msg.body == b"keyed" and msg.msg_id == sent.ext_fields["msgId"]
    resp = await mq.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset + 1))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "can not find message" in resp.remark


async def test_topic_deleted_and_used_again_at_once_keeps_every_acked_message(broker, mq, dispatched) -> None:
    # Issue 18, failure 3: send, DELETE_TOPIC_IN_BROKER, more sends at once. The dispatcher (relaxed: no pull
    # is parked) is still behind the first sends when the deletion arrives; it used to create the queue again
    # from them, with their old offsets, and then skip the new messages acknowledged at offsets 0-4.
    for trial in range(30):
        topic = f"TopicAgain{trial % 3}"
        for i in range(1 + trial % 20):
            assert (await mq.send(topic, f"old{i}".encode())).code == ResponseCode.SUCCESS
        resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))
        assert resp.code == ResponseCode.SUCCESS
        offsets = []
        for i in range(5):
            resp = await mq.send(topic, f"new{i}".encode())
            assert resp.code == ResponseCode.SUCCESS
            offsets.append(int(resp.ext_fields["queueOffset"]))
        assert offsets == [0, 1, 2, 3, 4], (trial, offsets)
        await dispatched(broker)
        resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, 0))
        assert resp.ext_fields["offset"] == 5, trial
        resp = await mq.pull("G", topic, 0, 0)
        assert resp.code == ResponseCode.SUCCESS, (trial, resp.remark)
        assert [m.body for m in decode_all(resp.body)] == [f"new{i}".encode() for i in range(5)], trial


async def test_consume_stats_of_every_topic_of_a_group_while_other_groups_commit(broker, mq) -> None:
    # mqadmin consumerProgress -g G (no topic): the group's topics were looked for on the pull thread, walking the
    # offset table while the loop added other groups' keys, and the request failed ("dictionary changed size").
    offsets = broker.consumer_offset_manager
    for i in range(100_000):
        offsets.offset_table[f"T{i}@Other{i}"] = {0: 1}
    await mq.update_offset("G", "TBW102", 0, 1)
    committing = True

    async def commit_new_groups() -> None:
        i = 0
        while committing:
            await mq.update_offset(f"New{i}", "TBW102", 0, 1)
            i += 1

    commits = asyncio.create_task(commit_new_groups())
    try:
        for _ in range(10):
            answer = await mq.invoke(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader("G"))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            assert {q.topic for q in decode_body(answer.body, ConsumeStats).offset_table} == {"TBW102"}
    finally:
        committing = False
        await commits


async def test_a_reset_moves_a_queue_the_group_never_committed_to_the_times_offset(broker, mq, dispatched) -> None:
    # Counted as offset 0, a queue the group never committed was sent back to its first message by a reset that
    # only moves back, and further than a forced reset to the same time.
    await mq.create_topic("TopicRst", queues=2)
    for queue_id in (0, 1):
        for i in range(3):
            assert (await mq.send("TopicRst", b"%d" % i, queue_id=queue_id)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    await mq.update_offset("GRst", "TopicRst", 0, 1)  # (queue 1: never committed)
    assert (await mq.heartbeat("rst-client", {"GRst": {"TopicRst": "*"}})).code == ResponseCode.SUCCESS
    later = int(time.time() * 1000) + 60_000  # (the offset after the last message of each queue: 3)
    for force, expected in ((False, {0: 1, 1: 3}), (True, {0: 3, 1: 3})):
        answer = await mq.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                                 ResetOffsetRequestHeader("TopicRst", "GRst", later, force))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        table = decode_body(answer.body, ResetOffsetBody).offset_table
        assert {q.queue_id: o for q, o in table.items()} == expected, force


async def test_query_consume_queue(broker, mq, dispatched) -> None:
    """mqadmin's queryCq: the entries from an index, the queue's bounds, and the group's subscription if any."""
    await mq.create_topic("TopicCq", queues=2)
    for i in range(4):
        await mq.send("TopicCq", b"x" * (10 + i), queue_id=1, tags="TagA")
    await dispatched(broker)
    resp = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader("TopicCq", 1, 1, 2))
    assert resp.code == ResponseCode.SUCCESS
    body = decode_body(resp.body, QueryConsumeQueueResponseBody)
    assert (body.min_queue_index, body.max_queue_index) == (0, 4)
    assert body.subscription_data is None and body.filter_data is None
    assert [q.tags_code for q in body.queue_data] == [java_string_hash("TagA")] * 2
    offsets = [q.physic_offset for q in body.queue_data]
    assert offsets[0] < offsets[1] and body.queue_data[0].physic_size < body.queue_data[1].physic_size
    offline = QueryConsumeQueueRequestHeader("TopicCq", 1, 3, 10, consumer_group="GCq")
    body = decode_body((await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, offline)).body, QueryConsumeQueueResponseBody)
    assert body.filter_data == "GCq@TopicCq is not online!" and len(body.queue_data) == 1
    await mq.heartbeat("cq-client", {"GCq": {"TopicCq": "TagA"}})
    body = decode_body((await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, offline)).body, QueryConsumeQueueResponseBody)
    assert body.subscription_data.sub_string == "TagA" and body.filter_data == "null"
    # An index in the queue answers a body, its list as long as 4.9.7's loop bound count * 20 (an int) allows:
    # none for a count of 0 or one whose bound wraps negative, one for a bound that wraps to 4 bytes
    for count, entries in ((0, 0), (-1, 0), (107_374_183, 0), (214_748_365, 1)):
        resp = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader("TopicCq", 1, 1, count))
        assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, "not set any response code"), count
        assert len(decode_body(resp.body, QueryConsumeQueueResponseBody).queue_data) == entries, count
    # (an index whose index * 20 wraps a long into the queue is no index of it: 4.9.7 reads there, pocketmq does
    # not, docs/compatibility.md)
    wrapped = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE,
                              QueryConsumeQueueRequestHeader("TopicCq", 1, -(2**62) + 2, 1))
    assert (wrapped.code, wrapped.body) == (ResponseCode.SUCCESS, None)
    past = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader("TopicCq", 1, 4, 1))
    assert (past.code, past.remark, past.body) == (ResponseCode.SUCCESS, "Index 4 of 1@TopicCq is not exist!", None)
    missing = await mq.invoke(RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader("TopicCq", 7, 0, 1))
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, "7@TopicCq is not exist!")


async def test_all_producer_info_and_system_topics(broker, mq) -> None:
    await mq.heartbeat("pi-client", producer_groups=("PGInfo",))
    resp = await mq.invoke(RequestCode.GET_ALL_PRODUCER_INFO)
    assert resp.code == ResponseCode.SUCCESS
    [info] = decode_body(resp.body, ProducerTableInfo).data["PGInfo"]
    assert info.client_id == "pi-client" and info.remote_ip.startswith("/")
    assert abs(info.last_update_timestamp - time.time() * 1000) < 60_000
    resp = await mq.invoke(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    assert resp.code == ResponseCode.SUCCESS
    topics = decode_body(resp.body, TopicList).topic_list
    assert {"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "DefaultCluster", "broker-a"} <= set(topics)
    assert "rmq_sys_REVIVE_LOG_DefaultCluster" in topics  # (POP's, as 5.x lists it; 4.9.7 has none: compatibility.md)


async def test_consume_stats_of_a_running_pop_group_list_its_pop_retry_topics(broker, mq) -> None:
    # A running group subscribes to its topic only; its POP retry topics were left out of the stats until it went
    # offline, so the revived messages waiting there were no part of consumerProgress's #Diff (5.5.0 lists them).
    # (A V2 retry topic, %RETRY%GPs+TopicPs, cannot be made by an admin's topic request: its "+" is refused.)
    for topic in ("TopicPs", "%RETRY%GPs_TopicPs", "%RETRY%GPs_Other"):
        await mq.create_topic(topic, queues=1)
        assert (await mq.send(topic, b"m", queue_id=0)).code == ResponseCode.SUCCESS
        await mq.update_offset("GPs", topic, 0, 0)
    assert (await mq.heartbeat("ps-client", {"GPs": {"TopicPs": "*"}})).code == ResponseCode.SUCCESS
    answer = await mq.invoke(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader("GPs"))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    table = decode_body(answer.body, ConsumeStats).offset_table
    assert sorted(q.topic for q in table) == ["%RETRY%GPs_TopicPs", "TopicPs"]


async def test_consume_stats_of_a_blank_topic_is_every_topic_as_java_sees_blank(broker, mq) -> None:
    # UtilAll.isBlank: whitespace is blank, a no-break space names a topic (one without config: nothing listed).
    await mq.create_topic("TopicBlankStats", queues=1)
    await mq.update_offset("GBlank", "TopicBlankStats", 0, 0)
    listed = {}
    for topic in (None, "", " \t", "\xa0"):
        answer = await mq.invoke(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader("GBlank", topic))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        listed[topic] = sorted(q.topic for q in decode_body(answer.body, ConsumeStats).offset_table)
    assert listed == {None: ["TopicBlankStats"], "": ["TopicBlankStats"], " \t": ["TopicBlankStats"], "\xa0": []}
