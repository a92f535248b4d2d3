"""The store clean-ups an administrator asks for (mqadmin deleteExpiredCommitLog, cleanExpiredCQ,
cleanUnusedTopic) and brokerConsumeStats, over the wire; mqadmin itself runs them against Apache RocketMQ in
tests/apache/mqadmin/test_brokers_topics_and_groups.py."""

from __future__ import annotations

import json
import time

from broker_harness import MQ, Cluster
from hypothesis import given, settings
from hypothesis import strategies as st
from pop_wire import PopClient

from pocketmq.broker.processor.consume_stats import topics_by_group, topics_of_group
from pocketmq.common.codec import decode_all
from pocketmq.remoting.admin_body import ConsumeStatsList
from pocketmq.remoting.admin_header import GetConsumeStatsInBrokerHeader
from pocketmq.remoting.body import decode_body, encode_body
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode


def _not_this_hour() -> str:
    """A deleteWhen that is not now, so that only the administrator's request deletes files."""
    return f"{(time.gmtime().tm_hour + 6) % 24:02d};{(time.localtime().tm_hour + 6) % 24:02d}"


async def test_expired_commit_log_files_and_then_their_consume_queues_are_deleted_on_request(
        cluster: Cluster, poll, dispatched) -> None:
    broker = await cluster.broker(mapped_file_size_commit_log=64 * 1024, file_reserved_time=0.0,
                                  delete_when=_not_this_hour(), clean_resource_interval=0.02)
    mq = cluster.mq(broker)
    await mq.create_topic("Old", 1)
    await mq.create_topic("New", 1)
    for i in range(3):
        assert (await mq.send("Old", b"old %d" % i)).code == ResponseCode.SUCCESS
    for _ in range(200):  # about 1 KiB each: four files of 64 KiB
        assert (await mq.send("New", b"n" * 1000)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    store = broker.store
    old_end = store.get_consume_queue("Old", 0).max_physic_offset
    assert store.commit_log.get_min_offset() == 0 < old_end < 64 * 1024

    # Before the request, cleaning rounds delete nothing: the hour is not deleteWhen's.
    rounds = broker.store.clean_service
    assert (await mq.invoke(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)).code == ResponseCode.SUCCESS
    assert store.get_consume_queue("Old", 0) is not None and store.commit_log.get_min_offset() == 0

    assert (await mq.invoke(RequestCode.DELETE_EXPIRED_COMMITLOG)).code == ResponseCode.SUCCESS
    await poll(lambda: store.commit_log.get_min_offset() > old_end)
    assert rounds.manual_delete_remaining < 20
    new_max = store.get_max_offset_in_queue("New", 0)

    assert (await mq.invoke(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)).code == ResponseCode.SUCCESS
    assert store.get_consume_queue("Old", 0) is None  # every message it indexed is gone
    assert store.get_max_offset_in_queue("New", 0) == new_max  # the last file still holds New's last messages

    # The queue starts again at 0 with its next message, which a consumer reads.
    sent = await mq.send("Old", b"again")
    assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["queueOffset"] == 0
    await dispatched(broker)
    resp = await mq.pull("G", "Old", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"again"]


async def test_clean_unused_topic_keeps_every_queue_the_broker_has_a_topic_for(
        cluster: Cluster, poll, dispatched) -> None:
    broker = await cluster.broker(revive_interval=0.02, message_delay_level="100ms 200ms")
    mq = cluster.mq(broker)
    for topic in ("Kept", "Edited"):
        await mq.create_topic(topic, 2)
        assert (await mq.send(topic, b"plain")).code == ResponseCode.SUCCESS
    # What the broker writes to topics of its own: a delay level, a timer, a half message, a pop revived.
    assert (await mq.send("Kept", b"delayed", properties=MQ.props(DELAY="1"))).code == ResponseCode.SUCCESS
    assert (await mq.send("Kept", b"timer", properties=MQ.props(TIMER_DELAY_MS="100"))).code == ResponseCode.SUCCESS
    half = MQ.props(TRAN_MSG="true", PGROUP="TxnPG")
    assert (await mq.send("Kept", b"half", properties=half)).code == ResponseCode.SUCCESS
    pc = PopClient(mq, broker.broker_config.broker_name)
    await dispatched(broker)  # (a send is answered once stored: the pop would find the queues empty before dispatch)
    popped = await pc.pop("PopG", "Kept", invisible=50, max_nums=8)
    assert popped.messages
    await poll(lambda: broker.pop_revive_service.revived >= len(popped.messages))
    # The plain message, the delayed one and the timer's, once each is due.
    await poll(lambda: sum(broker.store.get_max_offset_in_queue("Kept", i) for i in (0, 1)) == 3)
    await dispatched(broker)
    kept = {k: broker.store.get_max_offset_in_queue(*k) for k in broker.store.consume_queue_table}
    assert {"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "%RETRY%PopG_Kept"} <= {k[0] for k in kept}

    # A topic taken out of topics.json while the broker was stopped is a deleted one, as in Apache RocketMQ, whose
    # start never rebuilds topics (docs/broker.md): cleanUnusedTopic destroys its queues, and only those.
    await broker.shutdown()
    path = f"{broker.broker_config.config_dir}/topics.json"
    with open(path) as f:
        table = json.load(f)
    del table["topicConfigTable"]["Edited"]
    with open(path, "w") as f:
        json.dump(table, f)
    broker = await cluster.restart(broker)
    mq = cluster.mq(broker)

    assert "Edited" not in broker.topic_config_manager.topic_config_table
    assert (await mq.invoke(RequestCode.CLEAN_UNUSED_TOPIC)).code == ResponseCode.SUCCESS
    assert {k: broker.store.get_max_offset_in_queue(*k) for k in broker.store.consume_queue_table} == {
        k: v for k, v in kept.items() if k[0] != "Edited"}


async def test_broker_consume_stats_lists_every_group_and_the_topics_it_has_offsets_of(
        cluster: Cluster, dispatched) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.create_topic("Stats", 2)
    await mq.create_topic("Ordered", 1, order=True)
    for topic, qid in (("Stats", 0), ("Stats", 0), ("Stats", 1), ("Ordered", 0)):
        assert (await mq.send(topic, b"x", queue_id=qid)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    group = encode_body(SubscriptionGroupConfig("StatsG"), mq.client.body_dialect)
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, group)).code == ResponseCode.SUCCESS
    await mq.update_offset("StatsG", "Stats", 0, 1)
    await mq.update_offset("StatsG", "Ordered", 0, 1)

    resp = await mq.invoke(RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(False))
    assert resp.code == ResponseCode.SUCCESS
    body = decode_body(resp.body, ConsumeStatsList)
    assert body.broker_addr == broker.address
    groups = {g: stats for one in body.consume_stats_list for g, stats in one.items()}
    assert set(broker.subscription_group_manager.subscription_group_table) <= set(groups)
    queues = {(mq_.topic, mq_.queue_id): (w.broker_offset, w.consumer_offset)
              for stats in groups["StatsG"] for mq_, w in stats.offset_table.items()}
    assert queues == {("Stats", 0): (2, 1), ("Stats", 1): (1, 0), ("Ordered", 0): (1, 1)}
    assert body.total_diff == 2

    resp = await mq.invoke(RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(True))
    ordered = {g: stats for one in decode_body(resp.body, ConsumeStatsList).consume_stats_list
               for g, stats in one.items()}
    assert [sorted(m.topic for m in s.offset_table) for s in ordered["StatsG"]] == [["Ordered"]]


@settings(max_examples=200)
@given(st.lists(st.text("ab@", max_size=6), max_size=30), st.text("ab", min_size=1, max_size=3))
def test_the_groups_index_agrees_with_a_scan_of_the_offset_keys(keys: list[str], group: str) -> None:
    # brokerConsumeStats indexes the topic@group keys once; each group's scan (getConsumeStats') is the reference.
    assert topics_by_group(keys).get(group, set()) == topics_of_group(keys, group)
