"""Retry topics past 127 characters (RocketMQ 5): a POP consumer whose group and topic make a pop retry topic
%RETRY%<group>_<topic> that long gets its message back, and CONSUMER_SEND_MSG_BACK of a group of more than 120
characters retries into %RETRY%<group>; both are stored as message version 2 records (MAGICCODE 0xDAA320AB, a
2-byte topic length), which dispatch, pulls and recovery read. An ordinary topic stays at 127. Timers run in
milliseconds (pop_wire.FAST_REVIVE); nothing asserts how long anything took."""

from __future__ import annotations

import asyncio

from broker_harness import Cluster
from pop_wire import FAST_REVIVE, PopClient

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import MESSAGE_MAGIC_CODE_V2
from pocketmq.common.message import MessageExtBrokerInner
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader
from pocketmq.storage.results import PutMessageStatus

TOPIC = "T" * 100
GROUP = "G" * 60  # %RETRY%<group>_<topic>: 168 characters


def stored_magic(broker: BrokerController, topic: str) -> int:
    """MAGICCODE of the record entry 0 of the topic's queue 0 points at."""
    res = broker.store.get_message("any", topic, 0, 0, 1)
    assert res.buffers, (topic, res.status)
    return int.from_bytes(res.buffers[0][4:8], "big")


async def test_a_pop_retry_topic_past_127_characters_brings_the_message_back(cluster: Cluster, poll) -> None:
    broker = await cluster.broker(**FAST_REVIVE)
    mq = cluster.mq(broker)
    assert (await mq.create_topic(TOPIC, 1)).code == ResponseCode.SUCCESS
    assert (await mq.send(TOPIC, b"once", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    pc = PopClient(mq, broker.broker_config.broker_name)
    assert (await pc.pop(GROUP, TOPIC, 0, max_nums=1, invisible=200)).bodies == [b"once"]
    # Not acked: revived into the retry topic, and popped from it (RocketMQ 4.9.7's put refused the topic).
    await poll(lambda: broker.pop_revive_service.revived >= 1)
    again = await pc.pop(GROUP, TOPIC, invisible=60_000, poll=1_000)
    assert again.bodies == [b"once"] and again.messages[0].reconsume_times == 1
    retry_topic = broker.pop_message_processor.retry_topic(TOPIC, GROUP)
    assert len(retry_topic) > 127 and stored_magic(broker, retry_topic) == MESSAGE_MAGIC_CODE_V2
    # A restart's recovery keeps the version 2 record and what follows it, and loads its queue back.
    assert (await mq.send(TOPIC, b"after", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    broker = await cluster.restart(broker)
    assert broker.store.get_max_offset_in_queue(retry_topic, 0) == 1
    assert stored_magic(broker, retry_topic) == MESSAGE_MAGIC_CODE_V2
    pc = PopClient(cluster.mq(broker), broker.broker_config.broker_name)
    assert (await pc.pop(GROUP, TOPIC, invisible=60_000, poll=1_000)).bodies == [b"after"]


async def test_send_back_of_a_group_past_120_characters_retries_into_a_version_2_record(
    cluster: Cluster, poll
) -> None:
    broker = await cluster.broker(message_delay_level="200ms 300ms")
    mq = cluster.mq(broker)
    group = "R" * 125
    assert (await mq.send("TopicLongGroup", b"failed", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    [msg] = decode_all((await mq.pull(group, "TopicLongGroup", 0, 0)).body)
    header = ConsumerSendMsgBackRequestHeader(offset=decode_message_id(msg.offset_msg_id)[1], group=group,
                                              delay_level=0, origin_msg_id=msg.msg_id, max_reconsume_times=16)
    assert (await mq.invoke(RequestCode.CONSUMER_SEND_MSG_BACK, header)).code == ResponseCode.SUCCESS
    retry_topic = "%RETRY%" + group
    await poll(lambda: broker.store.get_max_offset_in_queue(retry_topic, 0) == 1)  # (through the schedule)
    assert stored_magic(broker, retry_topic) == MESSAGE_MAGIC_CODE_V2
    [retry] = decode_all((await mq.pull(group, retry_topic, 0, 0)).body)
    assert (retry.topic, retry.body, retry.reconsume_times) == (retry_topic, b"failed", 1)


async def test_only_a_retry_topic_may_pass_127_characters(cluster: Cluster) -> None:
    """HookUtils.checkBeforePutMessage: a topic of more than 127 bytes is MESSAGE_ILLEGAL unless it is a retry
    topic (a dead-letter topic too), and every topic past 255."""
    broker = await cluster.broker()

    def put(topic: str) -> PutMessageStatus:
        msg = MessageExtBrokerInner(topic=topic, body=b"x")
        return broker.store.put_message(msg).status

    assert put("%RETRY%" + "r" * 248) == PutMessageStatus.PUT_OK
    assert put("%RETRY%" + "r" * 249) == PutMessageStatus.MESSAGE_ILLEGAL
    assert put("%DLQ%" + "d" * 123) == PutMessageStatus.MESSAGE_ILLEGAL
    assert put("t" * 128) == PutMessageStatus.MESSAGE_ILLEGAL
    assert put("t" * 127) == PutMessageStatus.PUT_OK
