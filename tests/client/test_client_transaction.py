"""Transactional messages end to end: TransactionProducer against a real broker (EmbeddedCluster), in both wire
protocols. The broker's check timers run in milliseconds (transactionTimeOut, transactionCheckInterval); the check
of transactions left undecided is in test_client_transaction_check.py."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from transaction_helpers import (
    COMMIT,
    FAST_CHECK,
    LATE_CHECK,
    ROLLBACK,
    UNKNOW,
    Listener,
    make_topic,
    pull_all,
    stored,
    txn_producer,
    unique,
)

from pocketmq import embedded
from pocketmq.client import (
    Message,
    SendStatus,
)
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.topic_validator import (
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)


@pytest.fixture
async def late_check_cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path, **LATE_CHECK) as c:
        yield c


async def test_commit_delivers_the_message_once_with_the_commit_flag(
    late_check_cluster: Any, protocol: str, poll
) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        await producer.send(Message(topic, b"plain"), queue=None)  # (so the half message is not at offset 0)
        msg = Message(topic, b"order 1", tags="TagA", keys="K1", properties={"color": "blue"})
        result = await producer.send_message_in_transaction(msg, arg=42)
        assert result.send_status is SendStatus.SEND_OK
        assert result.local_transaction_state is COMMIT
        assert result.transaction_id == msg.uniq_key == result.msg_id
        assert [(m.body, a) for m, a in listener.executed] == [(b"order 1", 42)]
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    got = await pull_all(cluster, topic, protocol)
    assert sorted(m.body for m in got) == [b"order 1", b"plain"]
    [real] = [m for m in got if m.body == b"order 1"]
    assert (real.topic, real.tags, real.keys, real.uniq_key) == (topic, "TagA", ["K1"], msg.uniq_key)
    assert real.properties["color"] == "blue"
    assert real.properties["TRAN_MSG"] == "true" and real.properties["PGROUP"] == group
    assert "REAL_TOPIC" not in real.properties and "REAL_QID" not in real.properties
    assert real.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
    # PREPAREDTRANSACTIONOFFSET points at the half message, whose offsetMsgId the send returned.
    assert real.prepared_transaction_offset == decode_message_id(result.offset_msg_id)[1] > 0
    assert real.queue_id == result.message_queue.queue_id
    assert listener.checked == []


async def test_a_committed_timer_message_is_delivered_after_its_delay(late_check_cluster: Any, poll) -> None:
    """A transactional message with a delay: its half message stays in the half topic (not rerouted to the timer
    wheel, where the producer's commit could not find it and the check would ask about it for ever), and the
    committed message goes to the wheel and is delivered when due, once, without a check."""
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    listener = Listener(COMMIT)
    async with txn_producer(cluster, group, listener) as producer:
        msg = Message(topic, b"later")
        msg.delay_time_sec = 1
        sent_at = time.time_ns() // 1_000_000
        result = await producer.send_message_in_transaction(msg)
        assert result.local_transaction_state is COMMIT
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        await cluster.wait_dispatched()  # (the half record may still be on its way to its queue on a loaded run)
        [half] = stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
        assert half.body == b"later" and half.properties["TIMER_DELAY_SEC"] == "1"
        await poll(lambda: cluster.store.get_max_offset_in_queue(topic, 0) == 1, timeout=20)
    [real] = await pull_all(cluster, topic)
    assert real.body == b"later" and real.store_timestamp >= sent_at + 1000  # (due a second after its commit)
    assert listener.checked == []



async def test_a_delay_level_is_dropped_from_a_transactional_message(late_check_cluster: Any, poll) -> None:
    # sendMessageInTransaction clears DELAY before the send (RocketMQ: "ignore DelayTimeLevel parameter"): the
    # committed message goes to its topic at once, not to the schedule topic to wait out the level.
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    async with txn_producer(cluster, group, Listener(COMMIT)) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"not delayed", delay_time_level=3))
        assert result.local_transaction_state is COMMIT
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    await cluster.wait_dispatched()
    [real] = stored(cluster, topic)
    assert real.body == b"not delayed" and "DELAY" not in real.properties
    assert stored(cluster, RMQ_SYS_SCHEDULE_TOPIC, 2) == []  # (level 3's queue)

async def test_the_half_and_op_records(late_check_cluster: Any, poll) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster, 4), unique("TxnPG")
    async with txn_producer(cluster, group, Listener(COMMIT)) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"payload"))
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    await cluster.wait_dispatched()
    [half] = stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
    assert half.commit_log_offset == decode_message_id(result.offset_msg_id)[1]
    assert half.queue_offset == result.queue_offset == 0
    assert half.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_NOT_TYPE  # (so it takes a half-queue slot)
    assert half.properties["REAL_TOPIC"] == topic
    assert half.properties["REAL_QID"] == str(result.message_queue.queue_id)
    assert half.properties["TRAN_MSG"] == "true" and half.properties["PGROUP"] == group
    [op] = stored(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert (op.tags, op.body, op.queue_id) == ("d", b"0", 0)


async def test_rollback_is_never_delivered_nor_checked(late_check_cluster: Any, protocol: str, poll) -> None:
    cluster = late_check_cluster
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(ROLLBACK, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        born = time.time_ns() // 1_000_000
        result = await producer.send_message_in_transaction(Message(topic, b"cancelled"))
        assert result.local_transaction_state is ROLLBACK
        await poll(lambda: cluster.broker.end_transaction_processor.rolled_back == 1)
        # Check rounds past the half's timeout pass it over: the op record says it is done.
        check = cluster.broker.transactional_message_check_service
        rounds = check.rounds

        def past_timeout() -> bool:
            return check.rounds >= rounds + 5 and time.time_ns() // 1_000_000 > born + 1000 + 100

        await poll(past_timeout)
        assert listener.checked == []
    assert await pull_all(cluster, topic, protocol) == []

def test_the_readme_transaction_example_runs(tmp_path: Any) -> None:
    import pathlib
    import re
    import subprocess
    import sys

    readme = pathlib.Path(__file__).resolve().parents[2] / "README.md"
    [example] = [b for b in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S) if "TransactionProducer" in b]
    with embedded.ThreadedCluster(tmp_path) as cluster:
        script = tmp_path / "txn.py"
        script.write_text(example.replace("127.0.0.1:9876", cluster.namesrv_addr))
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "SendStatus.SEND_OK LocalTransactionState.COMMIT_MESSAGE" in proc.stdout
        def committed() -> list[bytes]:
            cluster.wait_dispatched()
            get = cluster.store.get_message
            return [m.body for q in range(8) for m in decode_all(get("t", "Payments", q, 0, 32).body)]

        deadline = time.monotonic() + 10  # (END_TRANSACTION is one-way: the broker may still be writing)
        while not committed() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert committed() == [b"order 1 paid"]


def test_the_sync_transaction_producer(tmp_path: Any) -> None:
    from pocketmq.client import SyncPullConsumer, SyncTransactionProducer

    # Checks 0.2 s apart: the check's COMMIT goes back one-way from the producer's own loop thread, and on a loaded
    # machine it was not written within FAST_CHECK's 20 ms, so a second check came (RocketMQ checks again then too).
    with embedded.ThreadedCluster(tmp_path, **{**FAST_CHECK, "transaction_check_interval": 0.2}) as cluster:
        listener = Listener(UNKNOW, check=COMMIT)  # (its async check runs on the producer's own loop)
        with SyncTransactionProducer(unique("TxnPG"), cluster.namesrv_addr, listener,
                                     heartbeat_broker_interval=0.1) as producer:
            result = producer.send_message_in_transaction(Message("SyncTxn", b"blocking"), arg="a")
            assert result.local_transaction_state is UNKNOW and listener.executed[0][1] == "a"
            with SyncPullConsumer(unique("CG"), cluster.namesrv_addr) as consumer:
                pulled = consumer.pull_blocking(result.message_queue, "*", 0, timeout=10)
        assert [m.body for m in pulled.msg_found_list] == [b"blocking"]
        assert [m.body for m in listener.checked] == [b"blocking"]
