"""Consumer offsets: QUERY/UPDATE_CONSUMER_OFFSET semantics and consumerOffset.json persistence."""

from __future__ import annotations

import json
import os

from pocketmq.broker.config_file import load_json_file, parse_json
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import DeleteTopicRequestHeader, UpdateConsumerOffsetRequestHeader


def offsets_path(broker) -> str:
    return broker.consumer_offset_manager.config_file_path


async def test_update_then_query(broker, mq, poll) -> None:
    await mq.update_offset("G", "T", 1, 42)
    resp = await mq.query_offset("G", "T", 1)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == 42
    # One-way updates (how clients send them) are applied too.
    await mq.update_offset("G", "T", 1, 43, oneway=True)
    await poll(lambda: broker.consumer_offset_manager.query_offset("G", "T", 1) == 43)


async def test_query_without_stored_offset(cluster, dispatched) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    # No offset and the queue still starts at 0 in memory: a new group starts from the beginning.
    resp = await mq.query_offset("NewGroup", "TopicQ", 0)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == 0
    await mq.send("TopicQ", b"x")
    await dispatched(broker)
    resp = await mq.query_offset("NewGroup", "TopicQ", 0)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == 0

    # When the message at offset 0 counts as "on disk" there is no answer: the client decides.
    on_disk = await cluster.broker("ondisk", access_message_in_memory_max_ratio=0)
    mq2 = cluster.mq(on_disk)
    await mq2.send("TopicQ", b"x")
    await mq2.send("TopicQ", b"y")
    await dispatched(on_disk)
    resp = await mq2.query_offset("NewGroup", "TopicQ", 0)
    assert resp.code == ResponseCode.QUERY_NOT_FOUND


async def test_offsets_survive_a_restart(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.update_offset("G1", "TopicA", 0, 5)
    await mq.update_offset("G1", "TopicA", 3, 9)
    await mq.update_offset("G2", "TopicA", 0, 1)
    path = offsets_path(broker)
    broker = await cluster.restart(broker)
    with open(path) as f:
        on_disk = json.load(f)
    # (with a dataVersion, as RocketMQ 5 writes: the mark of revive offsets kept as RocketMQ 5 keeps them)
    assert on_disk["offsetTable"] == {"TopicA@G1": {"0": 5, "3": 9}, "TopicA@G2": {"0": 1}}
    assert set(on_disk) == {"offsetTable", "dataVersion"}
    mq = cluster.mq(broker)
    assert (await mq.query_offset("G1", "TopicA", 3)).ext_fields["offset"] == 9
    assert (await mq.query_offset("G2", "TopicA", 0)).ext_fields["offset"] == 1

    # The next write keeps the previous version as .bak and leaves no temp file behind.
    await mq.update_offset("G1", "TopicA", 0, 6)
    await cluster.restart(broker)
    assert load_json_file(path + ".bak")["offsetTable"]["TopicA@G1"]["0"] == 5
    assert load_json_file(path)["offsetTable"]["TopicA@G1"]["0"] == 6
    assert not os.path.exists(path + ".tmp")


async def test_offsets_are_flushed_periodically(cluster, poll) -> None:
    broker = await cluster.broker(flush_consumer_offset_interval=0.05)
    mq = cluster.mq(broker)
    path = offsets_path(broker)
    await mq.update_offset("GP", "TopicP", 0, 11)

    def flushed() -> bool:
        data = load_json_file(path)
        return data is not None and data["offsetTable"].get("TopicP@GP") == {"0": 11}

    await poll(flushed)


async def test_corrupt_offset_file_falls_back_to_bak(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.update_offset("G", "TopicB", 0, 3)
    await broker.consumer_offset_manager.persist()
    await mq.update_offset("G", "TopicB", 0, 4)
    path = offsets_path(broker)
    await broker.shutdown()  # main file: 4, .bak: 3
    assert load_json_file(path + ".bak")["offsetTable"]["TopicB@G"] == {"0": 3}
    with open(path, "w") as f:
        f.write('{"offsetTable": {"TopicB@G": {"0": ')  # a torn write
    broker = await cluster.restart(broker)
    assert broker.consumer_offset_manager.query_offset("G", "TopicB", 0) == 3


async def test_offsets_of_the_wrong_shape_fall_back_to_bak(cluster) -> None:
    broker = await cluster.broker()
    await cluster.mq(broker).update_offset("G", "TopicS", 0, 1234)
    for _ in range(2):
        await broker.consumer_offset_manager.persist()
    path = offsets_path(broker)
    await broker.shutdown()  # main file and .bak: 1234
    for main in ('{"offsetTable": {"TopicS@G": {"0": "x"}}}', "\xff\xfe not UTF-8",
                 '{"offsetTable": {"TopicS@G": {"0": 1180591620717411303424}}}',
                 '{"offsetTable": {"TopicS@G": {"4294967296": 1}}}'):
        with open(path, "w", encoding="latin-1") as f:
            # JSON RocketMQ's decoding refuses too, bytes that are not text at all, then numbers beyond a Java
            # long offset and int queue id (loaded, they failed every answer that carries the table)
            f.write(main)
        broker = await cluster.restart(broker)
        assert broker.consumer_offset_manager.query_offset("G", "TopicS", 0) == 1234, main
        await broker.shutdown()


async def test_a_broker_whose_offsets_and_their_bak_are_both_unusable_does_not_start(cluster) -> None:
    # Started empty, its consumers would begin again from where their ConsumeFromWhere says (skipping a backlog,
    # or consuming everything twice), and its first flush would overwrite both files: Apache's does not start.
    broker = await cluster.broker()
    await cluster.mq(broker).update_offset("G", "TopicC", 0, 9)
    for _ in range(2):
        await broker.consumer_offset_manager.persist()
    path = offsets_path(broker)
    await broker.shutdown()
    for p in (path, path + ".bak"):
        with open(p, "w") as f:
            f.write('{"offsetTable": {"TopicC@G": {"0": ')
    try:
        await cluster.restart(broker)
    except RuntimeError as e:
        assert "consumerOffset.json (nor its .bak)" in str(e)
    else:
        raise AssertionError("the broker started with neither offsets file usable")
    with open(path) as f:
        assert f.read() == '{"offsetTable": {"TopicC@G": {"0": '  # (left as it was, for its owner)


def test_fastjson_style_integer_keys_load() -> None:
    text = '{\n\t"offsetTable":{\n\t\t"TopicTest@cg":{0:250,1:251,-1:3}\n\t}\n}'
    assert parse_json(text) == {"offsetTable": {"TopicTest@cg": {"0": 250, "1": 251, "-1": 3}}}


async def test_get_all_consumer_offset(broker, mq) -> None:
    # A broker without offsets answers an empty table: Apache's refusal ("No consumer offset in this broker") is for
    # an encoded table that is empty text, which JSON never is (4.9.7 answers {"offsetTable":{}}).
    resp = await mq.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert resp.code == ResponseCode.SUCCESS
    assert decode_body(resp.body) == {"offsetTable": {}}
    await mq.update_offset("G", "TopicAll", 2, 8)
    resp = await mq.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert resp.code == ResponseCode.SUCCESS
    assert decode_body(resp.body) == {"offsetTable": {"TopicAll@G": {2: 8}}}


async def test_a_commit_for_a_group_topic_or_queue_the_broker_does_not_have_is_refused_and_kept_nowhere(
    cluster, poll
) -> None:
    # Every offset kept is kept for good (memory, consumerOffset.json): 200,000 made-up commits cost 89 MB and a
    # 13.6 MB file written every 5 s. RocketMQ 5 refuses an unknown group or topic; pocketmq also a queue the
    # topic has not. autoCreateSubscriptionGroup (on) creates a group at a heartbeat or a pull, not at a commit.
    broker = await cluster.broker()
    assert broker.broker_config.auto_create_subscription_group
    mq = cluster.mq(broker)
    assert (await mq.create_topic("TopicKnown", 4)).code == ResponseCode.SUCCESS
    await mq.create_group("GKnown")

    async def commit(group: str, topic: str, queue_id: int) -> tuple[int, str | None]:
        header = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, 5)
        answer = await mq.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        return answer.code, answer.remark

    assert await commit("GMadeUp", "TopicKnown", 0) == (26, "Group GMadeUp not exist!")
    assert await commit("GMadeUp", "TopicKnown", 0) == (26, "Group GMadeUp not exist!")  # (not created by the first)
    assert await commit("", "TopicKnown", 0) == (26, "Group  not exist!")
    assert await commit("GMadeUp", "TopicMadeUp", 0) == (26, "Group GMadeUp not exist!")  # (the group first)
    assert await commit("GKnown", "TopicMadeUp", 0) == (17, "Topic TopicMadeUp not exist!")
    for queue_id in (4, -1, 10_000):
        code, remark = await commit("GKnown", "TopicKnown", queue_id)
        assert code == ResponseCode.INVALID_PARAMETER and f"queueId[{queue_id}] is illegal" in (remark or ""), remark
    # One-way commits (how clients send them) are refused alike: nothing to answer, nothing kept.
    one_way = UpdateConsumerOffsetRequestHeader("GOneWay", "TopicKnown", 0, 5)
    await mq.oneway(RequestCode.UPDATE_CONSUMER_OFFSET, one_way)
    assert await commit("GKnown", "TopicKnown", 3) == (ResponseCode.SUCCESS, None)
    assert "GMadeUp" not in broker.subscription_group_manager.subscription_group_table
    await broker.consumer_offset_manager.persist()
    assert load_json_file(offsets_path(broker))["offsetTable"] == {"TopicKnown@GKnown": {"3": 5}}
    # A consumer's heartbeat creates its group; its commits are kept from then on.
    assert (await mq.heartbeat("127.0.0.1@c1", {"GByHeartbeat": {"TopicKnown": "*"}})).code == ResponseCode.SUCCESS
    assert await commit("GByHeartbeat", "TopicKnown", 0) == (ResponseCode.SUCCESS, None)
    assert broker.consumer_offset_manager.query_offset("GByHeartbeat", "TopicKnown", 0) == 5


async def test_the_offsets_of_a_deleted_topic_stay_gone_after_a_restart(cluster) -> None:
    # (As 5.x drops them. No offset is committed after the delete: the file is written for the delete itself.)
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    for topic in ("TopicGone", "TopicKept"):
        assert (await mq.create_topic(topic, 1)).code == ResponseCode.SUCCESS
    await mq.create_group("G")
    await mq.update_offset("G", "TopicGone", 0, 5)
    await mq.update_offset("G", "TopicKept", 0, 7)
    await broker.consumer_offset_manager.persist()
    resp = await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader("TopicGone"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    broker = await cluster.restart(broker)
    assert load_json_file(offsets_path(broker))["offsetTable"] == {"TopicKept@G": {"0": 7}}
    assert broker.consumer_offset_manager.query_offset("G", "TopicGone", 0) == -1


async def test_set_zero_if_not_found_false_asks_for_not_found_where_the_broker_would_answer_0(
    cluster, dispatched
) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.send("TopicZ", b"x", queue_id=1)
    await dispatched(broker)
    await mq.update_offset("G", "TopicZ", 2, 5)

    async def query(queue_id: int, set_zero: str | None) -> tuple[int, str | None, object]:
        ext = {"consumerGroup": "G", "topic": "TopicZ", "queueId": str(queue_id)}
        if set_zero is not None:
            ext["setZeroIfNotFound"] = set_zero
        resp = await mq.invoke(RequestCode.QUERY_CONSUMER_OFFSET, ext)
        return resp.code, resp.remark, (resp.ext_fields or {}).get("offset")

    not_found = (ResponseCode.QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first", None)
    # Absent, or "true" in any case: an empty queue and one whose first message is in memory start at 0.
    for set_zero in (None, "true", "True"):
        for queue_id in (0, 1):
            assert await query(queue_id, set_zero) == (ResponseCode.SUCCESS, None, 0), (queue_id, set_zero)
    # Any other text (Java's Boolean.parseBoolean): no offset is no offset.
    for set_zero in ("false", "no", ""):
        for queue_id in (0, 1):
            assert await query(queue_id, set_zero) == not_found, (queue_id, set_zero)
    # A stored offset is answered whatever the flag says.
    for set_zero in (None, "true", "false", "no"):
        assert await query(2, set_zero) == (ResponseCode.SUCCESS, None, 5), set_zero
