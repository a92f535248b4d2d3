"""UPDATE_BROKER_CONFIG's run-time keys that reach the built-in topics: each takes effect when it is answered."""

from __future__ import annotations

from pocketmq.remoting.codes import RequestCode, ResponseCode

TBW102 = "TBW102"


async def update(mq, text: str):
    return await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=text.encode())


async def test_auto_create_turned_off_and_on_again_works_again_and_after_a_restart(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    assert (await update(mq, "autoCreateTopicEnable=false")).code == ResponseCode.SUCCESS
    assert (await mq.send("TopicWhileOff")).code == ResponseCode.TOPIC_NOT_EXIST
    # (RocketMQ drops TBW102's inherit bit at this refusal, and topics.json keeps it dropped)
    assert broker.topic_config_manager.select_topic_config(TBW102).perm == 7
    assert (await update(mq, "autoCreateTopicEnable=true")).code == ResponseCode.SUCCESS
    assert (await mq.send("TopicOnAgain")).code == ResponseCode.SUCCESS
    restarted = await cluster.restart(broker)
    assert restarted.topic_config_manager.select_topic_config(TBW102).perm == 7
    assert (await cluster.mq(restarted).send("TopicAfterRestart")).code == ResponseCode.SUCCESS
