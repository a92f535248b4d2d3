"""SyncProducer / SyncPullConsumer from plain (non-async) code, against a real cluster on its own thread."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client import Message, MessageQueue, MQClientException, PullStatus, SendResult, SendStatus
from pocketmq.client.sync import SyncProducer, SyncPullConsumer


def test_sync_wrappers_from_plain_code(tmp_path: Any) -> None:
    with embedded.ThreadedCluster(tmp_path) as cluster:
        addr = cluster.namesrv_addr
        mq = MessageQueue("Scripted", "broker-a", 2)
        with SyncProducer("PG", addr, instance_name="sync-p") as producer:
            first = producer.send(Message("Scripted", b"one", tags="A"), mq)
            assert first.send_status is SendStatus.SEND_OK
            batch = producer.send_batch([Message("Scripted", b"two"), Message("Scripted", b"three")], mq)
            assert len(batch.msg_id.split(",")) == 2

            done = threading.Event()
            seen: list[SendResult] = []

            class Callback:
                def on_success(self, result: SendResult) -> None:
                    seen.append(result)
                    done.set()

                def on_exception(self, exc: BaseException) -> None:
                    done.set()

            future = producer.send_async(Message("Scripted", b"four"), Callback(), queue=mq)
            assert future.result(10).queue_offset == 3
            assert done.wait(10) and seen[0].queue_offset == 3
        assert cluster.wait_dispatched()

        with SyncPullConsumer("CG", addr, instance_name="sync-c") as consumer:
            assert mq in consumer.fetch_subscribe_message_queues("Scripted")
            result = consumer.pull(mq, "*", 0)
            assert result.pull_status is PullStatus.FOUND
            assert [m.body for m in result.msg_found_list] == [b"one", b"two", b"three", b"four"]
            consumer.update_consume_offset(mq, 4)
            assert consumer.fetch_consume_offset(mq, from_store=True) == 4
            assert consumer.max_offset(mq) == 4
            with pytest.raises(MQClientException, match="offset < 0"):
                consumer.pull(mq, "*", -1)
        # Closed: the private loop is gone, and closing again is harmless.
        consumer.close()
        assert producer._runner.loop.is_closed()
        # A call after close() raised the loop's bare "Event loop is closed", and left its coroutine unawaited.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(MQClientException, match="shut down"):
                producer.send(Message("Scripted", b"late"), mq)
            gc.collect()
        assert [str(w.message) for w in caught] == []


def test_sync_client_refuses_its_own_loop_thread(tmp_path: Any) -> None:
    with embedded.ThreadedCluster(tmp_path) as cluster, SyncProducer("PG", cluster.namesrv_addr) as producer:

        async def inside() -> None:
            with pytest.raises(RuntimeError, match="its own event loop"):
                producer.send(Message("T", b"x"))

        asyncio.run_coroutine_threadsafe(inside(), producer._runner.loop).result(10)
