"""A per-queue offset reset (INVOKE_BROKER_TO_RESET_OFFSET with a queue id) and POP consumers, as RocketMQ 5's
resetPopOffset: the group's next pop of the queue takes the reset (ending the hold), lets go of the queue's pop
state from before it (buffered pops' offsets, an orderly batch still out) and pops from the reset offset."""

from __future__ import annotations

from pop_wire import PopClient

from pocketmq.remoting.codes import RequestCode, ResponseCode

TOPIC = "TopicPopRq"


async def _six_in_queue_0(broker, mq, dispatched) -> PopClient:
    await mq.create_topic(TOPIC, queues=2)
    for i in range(6):
        assert (await mq.send(TOPIC, b"%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
    assert (await mq.send(TOPIC, b"other", queue_id=1)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    return PopClient(mq, broker.broker_config.broker_name)


async def _reset(mq, group: str, queue_id: int, offset: int) -> None:
    """As 5.5.0's admin resetOffsetByQueueId: the commit first, then the reset."""
    await mq.update_offset(group, TOPIC, queue_id, offset)
    fields = {"topic": TOPIC, "group": group, "timestamp": "0", "isForce": "false", "queueId": str(queue_id),
              "offset": str(offset)}
    answer = await mq.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def _offset(broker, group: str) -> int:
    return broker.consumer_offset_manager.query_offset(group, TOPIC, 0)


async def test_a_pop_takes_the_reset_from_its_offset_and_ends_the_hold(broker, mq, dispatched) -> None:
    # The pops buffered for their acks (enablePopBufferMerge) went on from the end of the newest one, and the hold
    # was never erased for a POP group: its commits of the queue were ignored, and its pulls moved, for good.
    pc = await _six_in_queue_0(broker, mq, dispatched)
    assert broker.pop_message_processor.buffer_merge.enabled
    first = await pc.pop("GPopRq", TOPIC, 0, max_nums=3)
    assert first.bodies == [b"0", b"1", b"2"]
    await _reset(mq, "GPopRq", 0, 1)
    # Acked before the group pops again: those pops' offsets are not committed over the reset.
    await pc.ack_all("GPopRq", TOPIC, first)
    await mq.update_offset("GPopRq", TOPIC, 0, 4)
    assert _offset(broker, "GPopRq") == 1
    again = await pc.pop("GPopRq", TOPIC, 0)
    assert again.bodies == [b"1", b"2", b"3", b"4", b"5"]
    assert broker.consumer_offset_manager.reset_offset_table == {}
    await pc.ack_all("GPopRq", TOPIC, again)
    assert _offset(broker, "GPopRq") == 6
    # The hold is over: a commit counts, a pull of the group is answered as any.
    await mq.update_offset("GPopRq", TOPIC, 0, 3)
    assert _offset(broker, "GPopRq") == 3
    assert (await mq.pull("GPopRq", TOPIC, 0, 6)).code == ResponseCode.PULL_NOT_FOUND
    # The other queue was not reset: popped from where the group starts.
    assert (await pc.pop("GPopRq", TOPIC, 1)).bodies == [b"other"]


async def test_an_orderly_pop_after_a_reset_is_no_longer_blocked_by_the_batch_still_out(
    broker, mq, dispatched
) -> None:
    # The batch popped before the reset kept the queue blocked until its invisible time ran out.
    pc = await _six_in_queue_0(broker, mq, dispatched)
    out = await pc.pop("GOrdRq", TOPIC, 0, max_nums=2, order=True)
    assert out.bodies == [b"0", b"1"]
    assert (await pc.pop("GOrdRq", TOPIC, 0, order=True)).messages == []
    await _reset(mq, "GOrdRq", 0, 4)
    after = await pc.pop("GOrdRq", TOPIC, 0, max_nums=2, order=True)
    assert after.bodies == [b"4", b"5"]
    # The old batch's ack is behind the reset: it moves nothing. The new one's moves the offset on.
    await pc.ack_all("GOrdRq", TOPIC, out)
    assert _offset(broker, "GOrdRq") == 4
    await pc.ack_all("GOrdRq", TOPIC, after)
    assert _offset(broker, "GOrdRq") == 6


async def test_an_orderly_ack_while_a_reset_is_held_leaves_the_reset_offset(broker, mq, dispatched) -> None:
    # The acks committed the batch's end over the reset, and the held reset kept the group's commits ignored for
    # good.
    pc = await _six_in_queue_0(broker, mq, dispatched)
    await mq.update_offset("GOrdAckRq", TOPIC, 0, 1)
    out = await pc.pop("GOrdAckRq", TOPIC, 0, max_nums=3, order=True)
    assert out.bodies == [b"1", b"2", b"3"]
    await _reset(mq, "GOrdAckRq", 0, 0)
    await pc.ack_all("GOrdAckRq", TOPIC, out)
    assert _offset(broker, "GOrdAckRq") == 0
    again = await pc.pop("GOrdAckRq", TOPIC, 0, max_nums=2, order=True)
    assert again.bodies == [b"0", b"1"]
    await mq.update_offset("GOrdAckRq", TOPIC, 0, 5)
    assert _offset(broker, "GOrdAckRq") == 5
