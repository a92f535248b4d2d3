"""Delayed delivery (SCHEDULE_TOPIC_XXXX), CONSUMER_SEND_MSG_BACK retries and DLQ, orderly queue locks."""

from __future__ import annotations

import asyncio

from pocketmq.broker.client.rebalance_lock_manager import RebalanceLockManager
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import MAX_PROPERTIES_LENGTH
from pocketmq.remoting.body import decode_body, encode_body
from pocketmq.remoting.client_body import LockBatchRequestBody, LockBatchResponseBody, MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader, ViewMessageRequestHeader

FLAG_SUSPEND_SUBSCRIPTION = 0x2 | 0x4
LEVELS = "200ms 300ms 400ms"


async def test_delayed_message_is_delivered_after_its_delay(cluster, poll, dispatched) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    producer, consumer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicDelay", queues=2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    pull = asyncio.create_task(
        consumer.pull("G", "TopicDelay", 1, 0, sys_flag=FLAG_SUSPEND_SUBSCRIPTION, suspend_ms=5000, timeout=10)
    )
    sent = await producer.send("TopicDelay", b"later", queue_id=1, properties=producer.props("T", DELAY="1"))
    assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["queueId"] == 1
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 0) == 1
    resp = await asyncio.wait_for(pull, 5.0)
    assert resp.code == ResponseCode.SUCCESS
    [msg] = decode_all(resp.body)
    # Never early: a message is due 200 ms after it was stored.
    assert loop.time() - started >= 0.19
    assert msg.body == b"later" and msg.topic == "TopicDelay" and msg.queue_id == 1
    assert "DELAY" not in msg.properties and "WAIT" not in msg.properties  # (the producer sent none)
    assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"], msg.tags) == ("TopicDelay", "1", "T")
    await poll(lambda: broker.schedule_message_service.offset_table.get(1) == 1)

    # Progress is kept in delayOffset.json across a restart: nothing is delivered twice.
    broker = await cluster.restart(broker)
    resp = await cluster.mq(broker).invoke(RequestCode.GET_ALL_DELAY_OFFSET)
    assert decode_body(resp.body) == {"offsetTable": {1: 1}}
    await asyncio.sleep(0.05)
    assert broker.store.get_max_offset_in_queue("TopicDelay", 1) == 1


async def test_a_delayed_message_at_the_properties_limit_does_not_hold_back_its_level(cluster, poll) -> None:
    """Its delivered copy must not be longer than the stored one: a copy refused for its properties' length would
    be tried again forever, and every message of the level behind it never delivered (Apache delivers both)."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicDelayBig", queues=1)
    sent = await mq.send("TopicDelayBig", b"big", properties=mq.props("T", FILL="x", DELAY="1"))
    stored = len((await view(mq, sent.ext_fields["msgId"])).properties_string.encode())
    fill = "x" * (MAX_PROPERTIES_LENGTH - stored)  # the stored copy exactly at the limit
    sent = await mq.send("TopicDelayBig", b"big", properties=mq.props("T", FILL="x" + fill, DELAY="1"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert len((await view(mq, sent.ext_fields["msgId"])).properties_string.encode()) == MAX_PROPERTIES_LENGTH
    await mq.send("TopicDelayBig", b"small", properties=mq.props("T", DELAY="1", WAIT="true"))
    await poll(lambda: broker.store.get_max_offset_in_queue("TopicDelayBig", 0) == 3)
    got = decode_all((await mq.pull("G", "TopicDelayBig", 0, 0)).body)
    assert [m.body for m in got] == [b"big", b"big", b"small"]
    assert got[2].properties["WAIT"] == "false" and "DELAY" not in got[2].properties


async def view(mq, msg_id: str):
    _, offset = decode_message_id(msg_id)
    [msg] = decode_all((await mq.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset))).body)
    return msg


async def test_delay_levels_above_the_maximum_are_capped(cluster, dispatched) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.send("TopicCap", b"x", properties=mq.props(DELAY="99"))
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 1


async def send_and_pull(broker, mq, dispatched, topic: str, body: bytes) -> str:
    await mq.send(topic, body)
    await dispatched(broker)
    [msg] = decode_all((await mq.pull("GR", topic, 0, 0)).body)
    return msg.msg_id


async def send_back(mq, msg_id: str, delay_level: int, max_reconsume: int = 16) -> int:
    _, offset = decode_message_id(msg_id)
    header = ConsumerSendMsgBackRequestHeader(
        offset=offset, group="GR", delay_level=delay_level, origin_msg_id=msg_id, max_reconsume_times=max_reconsume
    )
    return (await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, header)).code


async def test_send_back_goes_to_the_retry_topic_after_the_delay(cluster, poll, dispatched) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    msg_id = await send_and_pull(broker, mq, dispatched, "TopicRetry", b"failed once")
    assert await send_back(mq, msg_id, delay_level=1) == ResponseCode.SUCCESS
    await poll(lambda: broker.store.get_max_offset_in_queue("%RETRY%GR", 0) == 1)
    [retry] = decode_all((await mq.pull("GR", "%RETRY%GR", 0, 0)).body)
    assert retry.body == b"failed once" and retry.reconsume_times == 1
    assert retry.properties["RETRY_TOPIC"] == "TopicRetry"
    assert retry.properties["ORIGIN_MESSAGE_ID"] == msg_id

    # The retry of the retry keeps the first origin id and counts on.
    assert await send_back(mq, retry.msg_id, delay_level=1) == ResponseCode.SUCCESS
    await poll(lambda: broker.store.get_max_offset_in_queue("%RETRY%GR", 0) == 2)
    [second] = decode_all((await mq.pull("GR", "%RETRY%GR", 0, 1)).body)
    assert second.reconsume_times == 2 and second.properties["ORIGIN_MESSAGE_ID"] == msg_id
    assert second.properties["RETRY_TOPIC"] == "TopicRetry"


async def test_a_blank_origin_message_id_is_replaced_by_the_message_s_id(cluster, poll, dispatched) -> None:
    """ORIGIN_MESSAGE_ID " " counts as none (SendMessageProcessor's UtilAll.isBlank): the retry copy carries the
    failed message's own id."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    await mq.send("TopicBlankOrigin", b"x", properties=mq.props(ORIGIN_MESSAGE_ID=" "))
    await dispatched(broker)
    [msg] = decode_all((await mq.pull("GR", "TopicBlankOrigin", 0, 0)).body)
    assert await send_back(mq, msg.offset_msg_id, delay_level=1) == ResponseCode.SUCCESS
    await poll(lambda: broker.store.get_max_offset_in_queue("%RETRY%GR", 0) == 1)
    [retry] = decode_all((await mq.pull("GR", "%RETRY%GR", 0, 0)).body)
    assert retry.properties["ORIGIN_MESSAGE_ID"] == msg.offset_msg_id


async def test_send_back_to_the_dlq(cluster, poll, dispatched) -> None:
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    msg_id = await send_and_pull(broker, mq, dispatched, "TopicDlq", b"poison")
    assert await send_back(mq, msg_id, delay_level=-1) == ResponseCode.SUCCESS
    msg_id2 = await send_and_pull(broker, mq, dispatched, "TopicDlq2", b"tired")
    assert await send_back(mq, msg_id2, delay_level=1, max_reconsume=0) == ResponseCode.SUCCESS
    await poll(lambda: broker.store.get_max_offset_in_queue("%DLQ%GR", 0) == 2)
    dlq = decode_all((await mq.pull("GR", "%DLQ%GR", 0, 0)).body)
    assert [m.body for m in dlq] == [b"poison", b"tired"]
    assert broker.topic_config_manager.select_topic_config("%DLQ%GR").perm == 6
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 0) == 0

    _, offset = decode_message_id(msg_id)
    bad = ConsumerSendMsgBackRequestHeader(offset=offset + 3, group="GR", delay_level=0)
    resp = await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, bad)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in resp.remark


async def test_the_retry_topic_is_made_and_checked_before_the_message_is_looked_up(cluster) -> None:
    """As 4.9.7's send-back: an offset naming no message still leaves the group's retry topic (its unit flag
    from the header); a retry topic that is not writable refuses the send-back before the offset is read."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    header = ConsumerSendMsgBackRequestHeader(offset=2**62, group="GNone", delay_level=0, unit_mode=True)
    resp = await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {2**62}")
    retry = broker.topic_config_manager.select_topic_config("%RETRY%GNone")
    assert retry is not None and (retry.perm, retry.write_queue_nums, retry.topic_sys_flag) == (6, 1, 2)
    await mq.create_topic("%RETRY%GReadOnly", queues=1, perm=4)
    header = ConsumerSendMsgBackRequestHeader(offset=2**62, group="GReadOnly", delay_level=0)
    resp = await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION,
                                        "the topic[%RETRY%GReadOnly] sending message is forbidden")


async def test_reconsume_times_add_up_as_java_ints(cluster, dispatched) -> None:
    """reconsumeTimes + 1 and the level 3 + reconsumeTimes wrap past Java's int: a copy of a message of the int's
    largest count goes to the DLQ counting the int's smallest; one below that, sent back with delay level 0 and
    that many reconsumes allowed, gets a negative level and no delay (as by 4.9.7)."""
    broker = await cluster.broker(message_delay_level=LEVELS)
    mq = cluster.mq(broker)
    int_max = 2**31 - 1
    for times in (int_max, int_max - 1):
        sent = await mq.send("TopicWrap", b"many", reconsume_times=times)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert await send_back(mq, sent.ext_fields["msgId"], delay_level=0, max_reconsume=int_max) == 0
    await dispatched(broker)
    [dead] = decode_all((await mq.pull("GR", "%DLQ%GR", 0, 0)).body)
    assert dead.body == b"many" and dead.reconsume_times == -(2**31)
    [retry] = decode_all((await mq.pull("GR", "%RETRY%GR", 0, 0)).body)
    assert retry.reconsume_times == int_max and retry.properties["DELAY"] == str(-(2**31) + 1)
    assert broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 0


async def test_queue_locks(broker, mq) -> None:
    q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)

    async def lock(client: str, *mqs: MessageQueue) -> set[MessageQueue]:
        body = encode_body(LockBatchRequestBody("GL", client, set(mqs)))
        resp = await mq.invoke(RequestCode.LOCK_BATCH_MQ, body=body)
        return decode_body(resp.body, LockBatchResponseBody).lock_ok_mq_set

    assert await lock("c1", q0, q1) == {q0, q1}
    assert await lock("c2", q0, q1) == set()
    assert await lock("c1", q0) == {q0}  # renewal by the holder
    resp = await mq.invoke(RequestCode.UNLOCK_BATCH_MQ, body=encode_body(LockBatchRequestBody("GL", "c1", {q1})))
    assert resp.code == ResponseCode.SUCCESS
    assert await lock("c2", q0, q1) == {q1}


def test_queue_locks_expire_unless_renewed() -> None:
    locks = RebalanceLockManager(lock_max_live_time=60.0)
    q = MessageQueue("T", "b", 0)
    assert locks.try_lock_batch("G", {q}, "c1", now=100.0) == {q}
    assert locks.try_lock_batch("G", {q}, "c2", now=159.0) == set()
    assert locks.try_lock_batch("G", {q}, "c1", now=159.0) == {q}  # renewed
    assert locks.try_lock_batch("G", {q}, "c2", now=218.0) == set()
    assert locks.try_lock_batch("G", {q}, "c2", now=219.5) == {q}  # expired: taken over
    assert locks.is_locked("G", q, "c2", now=219.5) and not locks.is_locked("G", q, "c1", now=219.5)


async def test_expired_queue_locks_are_forgotten_by_the_housekeeping(cluster, poll) -> None:
    # Any client can lock made-up queues of made-up groups; RocketMQ keeps every entry until it is taken again.
    broker = await cluster.broker(rebalance_lock_max_live_time=0.05, client_housekeeping_interval=0.02)
    mq = cluster.mq(broker)
    queues = {MessageQueue(f"Made{i}", "broker-a", 0) for i in range(50)}
    for group in ("GL1", "GL2"):
        resp = await mq.invoke(RequestCode.LOCK_BATCH_MQ, body=encode_body(LockBatchRequestBody(group, "c1", queues)))
        assert decode_body(resp.body, LockBatchResponseBody).lock_ok_mq_set == queues
    await poll(lambda: not broker.rebalance_lock_manager.mq_lock_table)
    locks = RebalanceLockManager(lock_max_live_time=60.0)
    q = MessageQueue("T", "b", 0)
    locks.try_lock_batch("G", {q}, "c1", now=100.0)
    assert locks.drop_expired(now=159.0) == 0 and locks.is_locked("G", q, "c1", now=159.0)
    assert locks.drop_expired(now=160.5) == 1 and locks.mq_lock_table == {}


async def test_shutdown_cancels_a_delay_level_woken_at_the_same_moment(broker) -> None:
    # The cancellation and an arrival's wake-up in one loop iteration: Python 3.11's asyncio.wait_for returned the
    # wake-up and dropped the cancellation, and broker shutdown then waited on that level's loop forever.
    service = broker.schedule_message_service
    level = next(t for t in asyncio.all_tasks() if t.get_name() == "schedule-level-1")
    await asyncio.sleep(0.05)  # the level's loop is idle, waiting for an arrival
    service._events[0].set()
    level.cancel()
    done, _ = await asyncio.wait([level], timeout=5)
    assert done and level.cancelled()
