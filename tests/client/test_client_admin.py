"""Lookups across a topic's brokers: query by key through the index, the name server's topic list; and the
blocking clients' send_batch_async / pull_async — against a real cluster."""

from __future__ import annotations

from typing import Any

from pocketmq import embedded
from pocketmq.client import Message, MessageQueue
from pocketmq.client.sync import SyncProducer, SyncPullConsumer


def test_query_message_finds_stored_messages_by_key(tmp_path: Any) -> None:
    with embedded.ThreadedCluster(tmp_path) as cluster, SyncProducer("PG", cluster.namesrv_addr) as producer:
        mq = MessageQueue("Keyed", "broker-a", 1)
        producer.send(Message("Keyed", b"a", keys=["order-1", "shared"]), mq)
        assert cluster.wait_routed("Keyed")  # the query looks the route up at the name server
        future = producer.send_batch_async([Message("Keyed", b"b", keys="shared"), Message("Keyed", b"c")], mq)
        assert future.result(10).queue_offset == 1
        assert cluster.wait_dispatched()

        assert [m.body for m in producer.query_message("Keyed", "order-1")] == [b"a"]
        assert sorted(m.body for m in producer.query_message("Keyed", "shared")) == [b"a", b"b"]
        assert producer.query_message("Keyed", "order-2") == []
        # A message id (UNIQ_KEY) is a key too.
        sent = producer.send(Message("Keyed", b"d"), mq)
        assert cluster.wait_dispatched()
        assert [m.body for m in producer.query_message("Keyed", sent.msg_id)] == [b"d"]


def test_fetch_topic_list_lists_created_topics(tmp_path: Any) -> None:
    with embedded.ThreadedCluster(tmp_path) as cluster:
        with SyncProducer("PG", cluster.namesrv_addr) as producer:
            producer.send(Message("Listed", b"x"))
        assert cluster.wait_dispatched() and cluster.wait_routed("Listed")  # the list comes from the name server
        with SyncPullConsumer("CG", cluster.namesrv_addr) as consumer:
            assert "Listed" in consumer.fetch_topic_list()
            mq = consumer.fetch_subscribe_message_queues("Listed")
            futures = [consumer.pull_async(q, "*", 0) for q in mq]  # all on the wire before any answer is read
            assert sum(len(f.result(10).msg_found_list) for f in futures) == 1
