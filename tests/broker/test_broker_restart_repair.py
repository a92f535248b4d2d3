"""A clean restart repairs what it can (issue 18, failure 7): topics.json lost with its .bak."""

from __future__ import annotations

import json
import os

import pytest

from pocketmq.broker import BrokerConfig, BrokerController
from pocketmq.common.codec import decode_all
from pocketmq.remoting.codes import ResponseCode


async def test_lost_topics_json_and_bak_are_rebuilt_from_the_consume_queues(cluster, broker, poll, dispatched):
    mq = cluster.mq(broker)
    assert (await mq.create_topic("TopicLost", queues=4)).code == ResponseCode.SUCCESS
    for q in range(4):
        assert (await mq.send("TopicLost", f"m{q}".encode(), queue_id=q)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    config_file = broker.topic_config_manager.config_file_path
    await broker.topic_config_manager.wait_persisted()
    await broker.shutdown()
    for path in (config_file, config_file + ".bak"):
        if os.path.exists(path):
            os.unlink(path)

    broker = await cluster.restart(broker)
    tc = broker.topic_config_manager.select_topic_config("TopicLost")
    assert tc is not None and tc.read_queue_nums == tc.write_queue_nums == 4
    mq = cluster.mq(broker)
    for q in range(4):
        resp = await mq.pull("G", "TopicLost", q, 0)
        assert resp.code == ResponseCode.SUCCESS
        assert [m.body for m in decode_all(resp.body)] == [f"m{q}".encode()]
    # Written back: a second loss of the store's memory finds it in topics.json.
    await poll(lambda: os.path.exists(config_file))
    await broker.topic_config_manager.wait_persisted()
    with open(config_file) as f:
        assert "TopicLost" in json.load(f)["topicConfigTable"]


async def test_a_start_that_fails_before_the_rebuild_leaves_the_lost_topics_to_the_next_one(cluster, broker,
                                                                                           dispatched):
    # The table is written once the lost topics are back, not before the store's recovery: a start that dies in
    # between (here the store refuses its files: another commit-log size) would leave a topics.json that loads,
    # and no later start would rebuild the topic (its messages hidden for good).
    mq = cluster.mq(broker)
    assert (await mq.create_topic("TopicKept", queues=2)).code == ResponseCode.SUCCESS
    assert (await mq.send("TopicKept", b"kept", queue_id=1)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    config_file = broker.topic_config_manager.config_file_path
    await broker.topic_config_manager.wait_persisted()
    await broker.shutdown()
    for path in (config_file, config_file + ".bak"):
        os.unlink(path)
    size = broker.broker_config.mapped_file_size_commit_log
    failing = BrokerController(BrokerConfig(**{**vars(broker.broker_config), "mapped_file_size_commit_log": size * 2}))
    with pytest.raises(ValueError, match="expected"):
        await failing.start()
    assert not os.path.exists(config_file)

    broker = await cluster.restart(broker)
    assert broker.topic_config_manager.select_topic_config("TopicKept") is not None
    resp = await cluster.mq(broker).pull("G", "TopicKept", 1, 0)
    assert resp.code == ResponseCode.SUCCESS and [m.body for m in decode_all(resp.body)] == [b"kept"]
    with open(config_file) as f:
        assert "TopicKept" in json.load(f)["topicConfigTable"]  # (written before the start's answer)
