"""A clean restart repairs what it can (issue 18, failure 7): topics.json lost with its .bak."""

from __future__ import annotations

import json
import os

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
