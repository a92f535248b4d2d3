"""syncFlushTimeout on the broker's send path: under SYNC_FLUSH a send whose flush is not done within the
timeout is answered FLUSH_DISK_TIMEOUT then (the message is stored), as the store's own blocking put does.

A slow fdatasync cannot be produced for real: the store's flush is wrapped in a test double that sleeps
before doing the real flush."""

from __future__ import annotations

import time
from typing import Any

from pocketmq.remoting.codes import ResponseCode
from pocketmq.storage.results import PutMessageStatus


def slow_flush(broker: Any, delay: float) -> None:
    store = broker.store
    real = store.flush_commit_log

    def flush(least_pages: int) -> None:
        time.sleep(delay)  # the double: a disk taking `delay` per fdatasync
        real(least_pages)

    store.flush_commit_log = flush


async def test_send_is_answered_flush_disk_timeout_after_the_timeout(cluster, dispatched) -> None:
    broker = await cluster.broker(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=0.2)
    mq = cluster.mq(broker)
    ok = await mq.send("TopicSyncFlush", b"fast disk")
    assert ok.code == ResponseCode.SUCCESS
    slow_flush(broker, 0.6)
    resp = await mq.send("TopicSyncFlush", b"slow disk")
    assert resp.code == ResponseCode.FLUSH_DISK_TIMEOUT, resp.remark
    assert resp.ext_fields["queueOffset"] == 1  # stored all the same, only not known to be on disk yet
    await dispatched(broker)
    pulled = await mq.pull("G", "TopicSyncFlush", resp.ext_fields["queueId"], 1)
    assert pulled.code == ResponseCode.SUCCESS


async def test_the_store_put_answers_the_same(cluster) -> None:
    from pocketmq.common.message import MessageExtBrokerInner

    broker = await cluster.broker(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=0.2)
    slow_flush(broker, 0.6)
    fut = broker.store.async_put_message(MessageExtBrokerInner(topic="TopicSyncFlush", body=b"x"))
    assert fut.result(timeout=10).status is PutMessageStatus.FLUSH_DISK_TIMEOUT
