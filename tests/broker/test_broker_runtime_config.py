"""UPDATE_BROKER_CONFIG's run-time keys that reach the built-in topics: each takes effect when it is answered."""

from __future__ import annotations

from pocketmq.remoting.codes import RequestCode, ResponseCode

TBW102 = "TBW102"


async def update(mq, text: str):
    return await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=text.encode())


async def test_default_topic_queue_nums_sets_tbw102s_queues_at_once(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert (await update(mq, "defaultTopicQueueNums=2")).code == ResponseCode.SUCCESS
    tbw = broker.topic_config_manager.select_topic_config(TBW102)
    assert (tbw.read_queue_nums, tbw.write_queue_nums, tbw.perm) == (2, 2, 7)
    assert (await mq.route_data(ns.address, TBW102)).queue_datas[0].write_queue_nums == 2
    assert (await mq.send("TopicAfterQueueNums", default_topic_queue_nums=4)).code == ResponseCode.SUCCESS
    assert broker.topic_config_manager.select_topic_config("TopicAfterQueueNums").write_queue_nums == 2
    answer = await update(mq, "defaultTopicQueueNums=0")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "defaultTopicQueueNums" in answer.remark
    assert broker.topic_config_manager.select_topic_config(TBW102).write_queue_nums == 2
    restarted = await cluster.restart(broker)  # (persisted, as any change of TBW102)
    assert restarted.topic_config_manager.select_topic_config(TBW102).write_queue_nums == 2


async def test_trace_topic_enable_creates_the_trace_topic_at_once(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address)
    mq = cluster.mq(broker)
    assert broker.topic_config_manager.select_topic_config("RMQ_SYS_TRACE_TOPIC") is None
    assert (await update(mq, "traceTopicEnable=true")).code == ResponseCode.SUCCESS
    tc = broker.topic_config_manager.select_topic_config("RMQ_SYS_TRACE_TOPIC")
    assert (tc.read_queue_nums, tc.write_queue_nums) == (1, 1)
    assert broker.topic_config_manager.is_system_topic("RMQ_SYS_TRACE_TOPIC")
    assert (await mq.route_data(ns.address, "RMQ_SYS_TRACE_TOPIC")) is not None


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


async def test_auto_create_turned_on_in_a_broker_started_without_it_creates_tbw102(cluster) -> None:
    ns = await cluster.namesrv()
    broker = await cluster.broker(namesrv_addr=ns.address, auto_create_topic_enable=False, default_topic_queue_nums=3)
    mq = cluster.mq(broker)
    assert broker.topic_config_manager.select_topic_config(TBW102) is None
    assert (await update(mq, "autoCreateTopicEnable=true")).code == ResponseCode.SUCCESS
    tbw = broker.topic_config_manager.select_topic_config(TBW102)
    assert (tbw.write_queue_nums, tbw.perm) == (3, 7)
    assert (await mq.route_data(ns.address, TBW102)) is not None
    assert (await mq.send("TopicAutoCreated", default_topic_queue_nums=4)).code == ResponseCode.SUCCESS
    assert broker.topic_config_manager.select_topic_config("TopicAutoCreated").write_queue_nums == 3


async def test_a_time_that_is_no_whole_number_is_refused_at_run_time(broker, mq) -> None:
    # (shortPollingTimeMills=NaN was taken: every pull then parked failed, "cannot convert float NaN to integer")
    for value in ("NaN", "inf", "1e400", "1.5"):
        answer = await update(mq, f"shortPollingTimeMills={value}")
        assert answer.code == ResponseCode.SYSTEM_ERROR and "bad value for shortPollingTimeMills" in answer.remark
    assert broker.broker_config.short_polling_time == 1.0
