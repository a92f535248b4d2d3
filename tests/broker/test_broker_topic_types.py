"""RocketMQ 5's typed topics over real sockets: attributes set by UPDATE_AND_CREATE_TOPIC, kept in topics.json
as RocketMQ 5 writes them, read back with GET_TOPIC_CONFIG, and sends of the wrong type refused."""

from __future__ import annotations

import json

from broker_harness import MQ

from pocketmq.remoting.admin_header import GetTopicConfigRequestHeader
from pocketmq.remoting.body import TopicConfig, decode_body
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import SendMessageResponseHeader


async def topic_config(mq: MQ, topic: str) -> TopicConfig:
    resp = await mq.invoke(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic))
    assert resp.code == ResponseCode.SUCCESS, resp
    return decode_body(resp.body, TopicConfig)


async def test_attributes_persisted_and_returned(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    resp = await mq.create_topic("TypedFifo", attributes="+message.type=FIFO")
    assert resp.code == ResponseCode.SUCCESS, resp
    assert (await topic_config(mq, "TypedFifo")).attributes == {"message.type": "FIFO"}
    await broker.topic_config_manager.persist()
    with open(broker.topic_config_manager.config_file_path) as f:
        saved = json.load(f)["topicConfigTable"]["TypedFifo"]
    assert saved["attributes"] == {"message.type": "FIFO"}
    # An update without -a keeps the attributes; one with a new type changes it; "-" removes it.
    assert (await mq.create_topic("TypedFifo", queues=2)).code == ResponseCode.SUCCESS
    broker = await cluster.restart(broker)
    mq = cluster.mq(broker)
    tc = await topic_config(mq, "TypedFifo")
    assert (tc.write_queue_nums, tc.attributes) == (2, {"message.type": "FIFO"})
    assert (await mq.create_topic("TypedFifo", attributes="+message.type=DELAY")).code == ResponseCode.SUCCESS
    assert (await topic_config(mq, "TypedFifo")).attributes == {"message.type": "DELAY"}
    assert (await mq.create_topic("TypedFifo", attributes="-message.type")).code == ResponseCode.SUCCESS
    assert (await topic_config(mq, "TypedFifo")).attributes == {}
    missing = await mq.invoke(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader("NoSuchTopic"))
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_attribute_refusals(cluster) -> None:
    mq = cluster.mq(await cluster.broker())
    resp = await mq.create_topic("T1", attributes="+message.type=MIXED")
    assert (resp.code, resp.remark) == (ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
    resp = await mq.create_topic("T1", attributes="+color=red")
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "unsupported key: color")
    resp = await mq.create_topic("T1", attributes="message.type=FIFO")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "format is wrong" in resp.remark
    assert (await mq.create_topic("T1", attributes="+queue.type=SimpleCQ")).code == ResponseCode.SUCCESS
    resp = await mq.create_topic("T1", attributes="+queue.type=BatchCQ")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "unchangeable" in resp.remark
    mixed = cluster.mq(await cluster.broker("mixed", enable_mixed_message_type=True))
    assert (await mixed.create_topic("T2", attributes="+message.type=MIXED")).code == ResponseCode.SUCCESS


async def test_send_type_check(cluster) -> None:
    mq = cluster.mq(await cluster.broker())
    for topic, kind in (("TFifo", "FIFO"), ("TDelay", "DELAY"), ("TNormal", "NORMAL"), ("TTx", "TRANSACTION")):
        assert (await mq.create_topic(topic, attributes=f"+message.type={kind}")).code == ResponseCode.SUCCESS
    fifo, delay = MQ.props(__SHARDINGKEY="g1"), MQ.props(TIMER_DELAY_SEC="1")
    assert (await mq.send("TFifo", properties=fifo)).code == ResponseCode.SUCCESS
    refused = await mq.send("TFifo")
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL
    assert refused.remark == "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL"
    assert (await mq.send("TDelay", properties=delay)).code == ResponseCode.SUCCESS
    assert (await mq.send("TDelay", properties=MQ.props(DELAY="1"))).code == ResponseCode.SUCCESS
    assert (await mq.send("TDelay", properties=fifo)).code == ResponseCode.MESSAGE_ILLEGAL
    assert (await mq.send("TNormal", properties=delay)).code == ResponseCode.MESSAGE_ILLEGAL
    assert (await mq.send("TNormal")).code == ResponseCode.SUCCESS
    assert (await mq.send("TTx")).code == ResponseCode.MESSAGE_ILLEGAL
    # A forwarded message is not checked; an untyped (4.x) topic takes every type.
    assert (await mq.send("TNormal", properties=MQ.props(TRANSFER_FLAG="true", DELAY="1"))).code == 0
    assert (await mq.send("Untyped", properties=delay)).code == ResponseCode.SUCCESS
    assert (await mq.send("Untyped", properties=fifo)).code == ResponseCode.SUCCESS


async def test_type_check_can_be_turned_off(cluster) -> None:
    mq = cluster.mq(await cluster.broker(enable_topic_message_type_check=False))
    assert (await mq.create_topic("TFifo", attributes="+message.type=FIFO")).code == ResponseCode.SUCCESS
    assert (await mq.send("TFifo")).code == ResponseCode.SUCCESS


async def test_priority_queue_and_lite_refusal(cluster) -> None:
    """A priority message goes to the queue of its priority, whatever queue it names (the last past it); one of
    another type stays in its queue; a LITE topic is refused (tests/proxy/test_apache_priority.py: as 5.5.0)."""
    mq = cluster.mq(await cluster.broker())
    assert (await mq.create_topic("TPrio", attributes="+message.type=PRIORITY")).code == ResponseCode.SUCCESS
    for priority, queue in (("0", 0), ("2", 2), ("9", 3), ("+1", 1)):
        sent = await mq.send("TPrio", queue_id=3 - queue, properties=MQ.props(_SYS_MSG_PRIORITY_=priority))
        assert sent.decode_header(SendMessageResponseHeader).queue_id == queue, priority
    assert (await mq.send("TPrio")).code == ResponseCode.MESSAGE_ILLEGAL  # (NORMAL on a PRIORITY topic)
    sent = await mq.send("Untyped", queue_id=1, properties=MQ.props(_SYS_MSG_PRIORITY_="3", __SHARDINGKEY="g"))
    assert sent.decode_header(SendMessageResponseHeader).queue_id == 1
    resp = await mq.create_topic("TLite", attributes="+message.type=LITE")
    assert (resp.code, resp.remark) == (ResponseCode.INVALID_PARAMETER, "LITE message type is not supported.")
