"""INVOKE_BROKER_TO_RESET_OFFSET with a queue id (RocketMQ 5's per-queue reset, what 5.x's resetOffsetByQueueId and
`mqadmin resetOffsetByTime -b -q -o` send): that queue only, running consumers or not, within the queue's range."""

from __future__ import annotations

from pocketmq.remoting.admin_body import ResetOffsetBody
from pocketmq.remoting.admin_header import ResetOffsetRequestHeader
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import PullMessageResponseHeader

TOPIC = "TopicRq"


async def _four_queues_of_three_consumed(broker, mq, dispatched, group: str) -> None:
    await mq.create_topic(TOPIC, queues=4)
    for queue_id in range(4):
        for i in range(3):
            assert (await mq.send(TOPIC, b"%d" % i, queue_id=queue_id)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    for queue_id in range(4):
        await mq.update_offset(group, TOPIC, queue_id, 3)


def _offsets(broker, group: str) -> dict[int, int]:
    return {q: broker.consumer_offset_manager.query_offset(group, TOPIC, q) for q in range(4)}


async def _reset(mq, group: str, queue_id: int, offset: int | None, timestamp: int = 0, topic: str = TOPIC):
    """The header's fields as 5.5.0's Java admin sends them (an offset of null left out)."""
    fields = {"topic": topic, "group": group, "timestamp": str(timestamp), "isForce": "false", "queueId": str(queue_id)}
    if offset is not None:
        fields["offset"] = str(offset)
    return await mq.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)


async def test_a_reset_of_one_queue_moves_it_alone_and_tells_the_running_consumers_of_it_alone(
    cluster, broker, mq, dispatched, poll
) -> None:
    # The queue id was not read: the whole topic went back to time 0 (every queue to its first message), and that
    # table was pushed to the consumers.
    await _four_queues_of_three_consumed(broker, mq, dispatched, "GRq")
    consumer = cluster.mq(broker)
    pushed: list[tuple[ResetOffsetRequestHeader, dict[int, int]]] = []

    async def on_reset(channel, request):
        table = decode_body(request.body, ResetOffsetBody).offset_table
        pushed.append((request.decode_header(ResetOffsetRequestHeader), {q.queue_id: o for q, o in table.items()}))

    consumer.client.register_processor(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    assert (await consumer.heartbeat("rq-client", {"GRq": {TOPIC: "*"}})).code == ResponseCode.SUCCESS

    answer = await _reset(mq, "GRq", 0, 1)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    table = decode_body(answer.body, ResetOffsetBody).offset_table
    assert [(q.topic, q.broker_name, q.queue_id, o) for q, o in table.items()] == [(TOPIC, "broker-a", 0, 1)]
    assert _offsets(broker, "GRq") == {0: 1, 1: 3, 2: 3, 3: 3}
    await poll(lambda: pushed)
    [(header, offsets)] = pushed
    assert offsets == {0: 1} and (header.topic, header.group, header.queue_id) == (TOPIC, "GRq", 0)

    # A commit from a consumer still at the old position does not undo the reset, until the group pulls the
    # queue again: that pull is sent to the new offset (OFFSET_MOVED), and commits count again.
    await mq.update_offset("GRq", TOPIC, 0, 3)
    assert _offsets(broker, "GRq")[0] == 1
    moved = await mq.pull("GRq", TOPIC, 0, 3)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED
    assert moved.decode_header(PullMessageResponseHeader).next_begin_offset == 1
    await mq.update_offset("GRq", TOPIC, 0, 2)
    assert _offsets(broker, "GRq") == {0: 2, 1: 3, 2: 3, 3: 3}
    # A consumer that took the pushed offset pulls from there: answered as any pull.
    assert (await _reset(mq, "GRq", 1, 0)).code == ResponseCode.SUCCESS
    found = await mq.pull("GRq", TOPIC, 1, 0)
    assert found.code == ResponseCode.SUCCESS
    assert (await mq.pull("GRq", TOPIC, 1, 3)).code == ResponseCode.PULL_NOT_FOUND


async def test_a_group_with_no_consumer_running_is_reset_all_the_same(broker, mq, dispatched) -> None:
    # It was refused (CONSUMER_NOT_ONLINE) after the whole topic's offsets were computed.
    await _four_queues_of_three_consumed(broker, mq, dispatched, "GRqOff")
    answer = await _reset(mq, "GRqOff", 2, 0)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert _offsets(broker, "GRqOff") == {0: 3, 1: 3, 2: 0, 3: 3}
    # Without an offset (or with -1): the timestamp's, -1 being the queue's end.
    for offset in (None, -1):
        assert (await _reset(mq, "GRqOff", 2, offset, timestamp=-1)).code == ResponseCode.SUCCESS
        assert _offsets(broker, "GRqOff")[2] == 3
        assert (await _reset(mq, "GRqOff", 2, offset, timestamp=0)).code == ResponseCode.SUCCESS
        assert _offsets(broker, "GRqOff")[2] == 0


async def test_an_offset_outside_the_queue_and_unknown_names_are_refused_as_rocketmq_refuses_them(
    broker, mq, dispatched
) -> None:
    # 999 and -5 were stored (999 as it was, -5 as 0) as part of a reset of the whole topic.
    await _four_queues_of_three_consumed(broker, mq, dispatched, "GRqBad")
    for offset in (999, -5):
        answer = await _reset(mq, "GRqBad", 0, offset)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR, f"Target offset {offset} not in consume queue range [0-3]"
        )
    assert _offsets(broker, "GRqBad") == {0: 3, 1: 3, 2: 3, 3: 3}
    # RocketMQ's bounds take one past the queue's max offset.
    assert (await _reset(mq, "GRqBad", 0, 4)).code == ResponseCode.SUCCESS
    assert _offsets(broker, "GRqBad")[0] == 4
    assert (await _reset(mq, "GRqBad", 0, 5)).code == ResponseCode.SYSTEM_ERROR
    missing_group = await _reset(mq, "NoSuchGroup", 0, 1)
    assert (missing_group.code, missing_group.remark) == (
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group NoSuchGroup does not exist"
    )
    missing_topic = await _reset(mq, "GRqBad", 0, 1, topic="NoSuchTopic")
    assert (missing_topic.code, missing_topic.remark) == (
        ResponseCode.TOPIC_NOT_EXIST, "Topic NoSuchTopic does not exist"
    )
    # (RocketMQ 5 keeps an offset for a queue the topic does not have, which no consumer would ever read)
    beyond = await _reset(mq, "GRqBad", 4, 0)
    assert beyond.code == ResponseCode.INVALID_PARAMETER and "queueId[4] is illegal" in beyond.remark
    assert broker.consumer_offset_manager.query_offset("GRqBad", TOPIC, 4) == -1


async def test_a_queue_never_written_takes_no_negative_offset(broker, mq) -> None:
    # Its min offset is -1 to the store, and the range check let -5 through: stored, held and sent to the pulls.
    await mq.create_topic(TOPIC, queues=4)
    await mq.create_group("GRqNeg")
    answer = await _reset(mq, "GRqNeg", 3, -5)
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR, "Target offset -5 not in consume queue range [0-0]"
    )
    assert broker.consumer_offset_manager.query_offset("GRqNeg", TOPIC, 3) == -1
    assert not broker.consumer_offset_manager.reset_offset_table


async def test_a_reset_of_the_whole_topic_lets_go_of_a_queues_reset_still_held(broker, mq, dispatched) -> None:
    # The queue's hold outlived the later reset: the admin's commits of the new offset were ignored, so the group's
    # offsets ended {0: 1, 1: 3, ...} while the admin reported queue 0 at 3.
    await _four_queues_of_three_consumed(broker, mq, dispatched, "GRqWhole")
    assert (await _reset(mq, "GRqWhole", 0, 1)).code == ResponseCode.SUCCESS
    whole = await mq.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": TOPIC, "group": "GRqWhole", "timestamp": "-1", "isForce": "true"})
    assert whole.code == ResponseCode.CONSUMER_NOT_ONLINE  # (offline: the admin then commits queue by queue)
    assert not broker.consumer_offset_manager.reset_offset_table
    for queue_id in range(4):
        await mq.update_offset("GRqWhole", TOPIC, queue_id, 3)
    assert _offsets(broker, "GRqWhole") == {0: 3, 1: 3, 2: 3, 3: 3}
