"""The broker's check of transactions left undecided (TransactionalMessageCheckService, checkTransactionState) end to
end: asked until an answer or checkMax, of the group's live producers in turn, after a restart, past a listener that
fails or answers no state, after its check immunity time. The broker's timers run in milliseconds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from transaction_helpers import (
    COMMIT,
    FAST_CHECK,
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
from pocketmq.broker.broker_controller import BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    MQClientException,
    Producer,
    TransactionMQProducer,
)
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path, **FAST_CHECK) as c:
        yield c


async def test_unknow_then_the_check_commits(cluster: Any, protocol: str, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol) as producer:
        msg = Message(topic, b"decided later", tags="T")
        result = await producer.send_message_in_transaction(msg)
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        [asked] = listener.checked
        assert (asked.topic, asked.body, asked.tags) == (topic, b"decided later", "T")
        assert asked.queue_id == result.message_queue.queue_id
        assert asked.uniq_key == msg.uniq_key
    got = await pull_all(cluster, topic, protocol)
    assert [(m.body, m.uniq_key) for m in got] == [(b"decided later", msg.uniq_key)]


async def test_undecided_is_never_delivered_and_is_discarded_after_check_max(tmp_path: Any, poll) -> None:
    async with embedded.EmbeddedCluster(tmp_path, transaction_check_max=3, **FAST_CHECK) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=UNKNOW)
        async with txn_producer(cluster, group, listener) as producer:
            await producer.send_message_in_transaction(Message(topic, b"never decided"))
            await poll(lambda: cluster.broker.transactional_message_service.discarded == 1)
            await poll(lambda: len(listener.checked) == 3)  # (the last check may still be on its way)
            assert await pull_all(cluster, topic) == []
        await cluster.wait_dispatched()
        [kept] = stored(cluster, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        assert kept.body == b"never decided" and kept.properties["TRANSACTION_CHECK_TIMES"] == "3"


async def test_a_half_message_too_big_to_write_back_does_not_stop_the_check(cluster: Any, poll) -> None:
    """A half message whose properties are just under the limit is stored, but the check's renewed copy (it adds
    its count) is too big for the store. It is asked about once as it is, and the undecided message behind it is
    still asked about and committed (refused at every pass, it stopped its queue's check for good, as RocketMQ's
    does)."""
    topic, group = await make_topic(cluster, queues=1), unique("TxnPG")
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener) as producer:
        pad = 32767 - 150
        while True:  # the largest pad the store takes (what else the message carries is the client's)
            try:
                await producer.send_message_in_transaction(Message(topic, b"big", properties={"PAD": "x" * pad}))
                break
            except MQClientException:  # (the send's refusal: properties too long)
                pad -= 8
        result = await producer.send_message_in_transaction(Message(topic, b"behind it"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: b"behind it" in [m.body for m in listener.checked], timeout=20)
        await poll(lambda: cluster.store.get_max_offset_in_queue(topic, 0) >= 1)
    assert b"behind it" in [m.body for m in await pull_all(cluster, topic)]


async def test_a_new_producer_of_the_group_answers_for_one_that_died(cluster: Any, protocol: str, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    # The first producer stores the half message and goes away without a word: exactly what a TransactionProducer
    # killed right after its send leaves behind (TRAN_MSG and PGROUP are what send_message_in_transaction sets).
    async with Producer(group, cluster.namesrv_addr, instance_name=unique("p"), protocol=protocol) as dying:
        msg = Message(topic, b"orphan")
        msg.put_property("TRAN_MSG", "true")
        msg.put_property("PGROUP", group)
        await dying.send(msg)
    assert await pull_all(cluster, topic, protocol) == []
    listener = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, listener, protocol):
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        assert [m.body for m in listener.checked] == [b"orphan"]
    assert [m.body for m in await pull_all(cluster, topic, protocol)] == [b"orphan"]


async def test_a_closed_producer_is_not_asked_and_its_successor_is(cluster: Any, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")
    first = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, first) as producer:
        await producer.send_message_in_transaction(Message(topic, b"handed over"))
    # (closing unregisters the group at once: the broker has no producer of it to ask)
    rounds = cluster.broker.transactional_message_check_service.rounds
    await poll(lambda: cluster.broker.transactional_message_check_service.rounds >= rounds + 10)
    second = Listener(UNKNOW, check=COMMIT)
    async with txn_producer(cluster, group, second):
        await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
    assert first.checked == [] and [m.body for m in second.checked] == [b"handed over"]
    assert [m.body for m in await pull_all(cluster, topic)] == [b"handed over"]


async def test_the_check_takes_the_groups_producers_in_turn(tmp_path: Any, poll) -> None:
    # A plain Producer of the group, connected first, cannot answer a check: the transactional one is asked too
    # (the check went to the first producer only, and the committed transaction was discarded).
    async with embedded.EmbeddedCluster(tmp_path, transaction_check_max=5, **FAST_CHECK) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        async with Producer(group, cluster.namesrv_addr, instance_name=unique("plain"),
                            heartbeat_broker_interval=0.1) as plain:
            await plain.send(Message(topic, b"plain"))
            listener = Listener(UNKNOW, check=COMMIT)
            async with txn_producer(cluster, group, listener) as producer:
                await poll(lambda: len(cluster.broker.producer_manager.group_channel_table.get(group, {})) == 2)
                await producer.send_message_in_transaction(Message(topic, b"asked in turn"))
                await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
        assert cluster.broker.transactional_message_service.discarded == 0
        assert sorted(m.body for m in await pull_all(cluster, topic)) == [b"asked in turn", b"plain"]


async def test_the_check_happens_after_a_broker_restart(tmp_path: Any, poll) -> None:
    # No check before the restart (a long interval); a fast one after it, reading the half from the store.
    async with embedded.EmbeddedCluster(tmp_path, transaction_timeout=0.1, transaction_check_interval=600) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=COMMIT)
        async with txn_producer(cluster, group, listener) as producer:
            await producer.send_message_in_transaction(Message(topic, b"survives"))
            old = cluster.broker
            await old.shutdown()
            assert listener.checked == []
            config = BrokerConfig(**{**vars(old.broker_config), "listen_port": old.port,
                                     "transaction_check_interval": 0.02})
            cluster.broker = cluster.brokers[0] = BrokerController(config)
            await cluster.broker.start()
            await poll(lambda: cluster.broker.end_transaction_processor.committed == 1, timeout=10)
            assert [m.body for m in listener.checked] == [b"survives"]
        assert [m.body for m in await pull_all(cluster, topic)] == [b"survives"]



async def test_a_producer_shuts_down_while_its_listener_is_still_checking(cluster: Any, poll) -> None:
    # A check whose listener never answers (a local transaction stuck on its database) is cancelled by the
    # shutdown, which waited for it for ever.
    topic, group = await make_topic(cluster), unique("TxnPG")
    stuck = asyncio.Event()

    class Stuck(Listener):
        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            self.checked.append(msg)
            await stuck.wait()
            return COMMIT

    listener = Stuck(UNKNOW)
    producer = txn_producer(cluster, group, listener)
    await producer.start()
    await producer.send_message_in_transaction(Message(topic, b"stuck"))
    await poll(lambda: listener.checked)
    await asyncio.wait_for(producer.shutdown(), 10.0)  # (a guard, not a measure: it hung)
    assert cluster.broker.end_transaction_processor.committed == 0

async def test_a_listener_that_raises_leaves_it_to_the_check(cluster: Any, poll) -> None:
    topic, group = await make_topic(cluster), unique("TxnPG")

    class Failing(Listener):
        def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
            raise RuntimeError("database down")

    listener = Failing(UNKNOW, check=ROLLBACK)
    async with TransactionMQProducer(group, cluster.namesrv_addr, listener, instance_name=unique("p"),
                                     heartbeat_broker_interval=0.1) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"x"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: cluster.broker.end_transaction_processor.rolled_back == 1)
    assert await pull_all(cluster, topic) == []



async def test_an_answer_that_is_no_state_is_unknow_and_said_so(
    cluster: Any, poll, caplog: pytest.LogCaptureFixture
) -> None:
    # The enum's name as a string, or a bool, was taken as UNKNOW without a word above INFO: the message held back
    # and asked about, never committed, and nothing in the log said why.
    caplog.set_level(logging.WARNING, logger="pocketmq.client.producer.transaction_producer")
    topic, group = await make_topic(cluster), unique("TxnPG")

    class Confused(Listener):
        def execute_local_transaction(self, msg: Message, arg: Any) -> Any:
            return "COMMIT_MESSAGE"

        def check_local_transaction(self, msg: MessageExt) -> Any:  # type: ignore[override]
            self.checked.append(msg)
            return True

    listener = Confused(UNKNOW)
    async with txn_producer(cluster, group, listener) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"x"))
        assert result.local_transaction_state is UNKNOW
        await poll(lambda: listener.checked)
        await poll(lambda: "check_local_transaction returned True" in caplog.text)
    assert "execute_local_transaction returned 'COMMIT_MESSAGE', not a LocalTransactionState" in caplog.text
    assert await pull_all(cluster, topic) == []


async def test_a_check_immunity_time_is_waited_out_then_asked_once(tmp_path: Any, poll) -> None:
    # CHECK_IMMUNITY_TIME_IN_SECONDS=1: each pass within that second writes the half again without asking (and
    # counts it against transactionCheckMax, as RocketMQ does: hence the 0.2 s interval here).
    async with embedded.EmbeddedCluster(tmp_path, transaction_timeout=0.05, transaction_check_interval=0.2) as cluster:
        topic, group = await make_topic(cluster), unique("TxnPG")
        listener = Listener(UNKNOW, check=COMMIT)
        async with txn_producer(cluster, group, listener) as producer:
            msg = Message(topic, b"immune for a second")
            msg.put_property("CHECK_IMMUNITY_TIME_IN_SECONDS", "1")
            await producer.send_message_in_transaction(msg)
            await poll(lambda: cluster.broker.end_transaction_processor.committed == 1)
            # Not asked within the second (a lower bound: a slow machine only asks later).
            assert listener.checked_at[0] - listener.checked[0].born_timestamp >= 1000
            rounds = cluster.broker.transactional_message_check_service.rounds
            await poll(lambda: cluster.broker.transactional_message_check_service.rounds >= rounds + 3)
            assert len(listener.checked) == 1
        assert [m.body for m in await pull_all(cluster, topic)] == [b"immune for a second"]
