"""The check of half messages, one pass at a time: the broker's own passes are ten minutes apart, each test runs
``check_once`` itself on half messages sent over a real connection (with the born time a producer's clock would
give them), and reads what the pass wrote and where it left the check's offsets. Compared with RocketMQ 4.9.7's
TransactionalMessageServiceImpl.check."""

from __future__ import annotations

import asyncio
from typing import Any

from broker_harness import MQ, Cluster

from pocketmq.broker import BrokerController
from pocketmq.common.clock import now_ms
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import TRANSACTION_COMMIT_TYPE, TRANSACTION_PREPARED_TYPE
from pocketmq.common.mix_all import CID_SYS_RMQ_TRANS
from pocketmq.common.topic_validator import (
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from pocketmq.remoting.transaction_header import EndTransactionRequestHeader

HOUR = 3600 * 1000
# No pass of the broker's own: the tests' passes are the only ones.
BY_HAND = {"transaction_check_interval": 3600.0}


async def send_half(mq: MQ, body: bytes, born: int | None = None, **props: str) -> SendMessageResponseHeader:
    """A prepared send of ``body`` to TxnT queue 0, as a producer whose clock reads ``born`` makes it."""
    header = SendMessageRequestHeader(
        producer_group="TxnPG", topic="TxnT", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=TRANSACTION_PREPARED_TYPE, born_timestamp=now_ms() if born is None else born, flag=0,
        properties=mq.props("T", UNIQ_KEY=f"U-{body.decode()}", TRAN_MSG="true", PGROUP="TxnPG", **props))
    answer = await mq.invoke(RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(header), body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return answer.decode_header(SendMessageResponseHeader)


async def commit(mq: MQ, sent: SendMessageResponseHeader) -> Any:
    return await mq.invoke(RequestCode.END_TRANSACTION, EndTransactionRequestHeader(
        producer_group="TxnPG", tran_state_table_offset=sent.queue_offset,
        commit_log_offset=decode_message_id(sent.msg_id)[1], commit_or_rollback=TRANSACTION_COMMIT_TYPE, msg_id="U"))


async def records(broker: BrokerController, topic: str) -> list[Any]:
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return decode_all(broker.store.get_message("t", topic, 0, 0, 100).body)


async def one_pass(broker: BrokerController) -> None:
    """A check pass that sees everything stored so far (a record stored in the millisecond the pass starts is left
    to the next pass, as RocketMQ leaves it)."""
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    stored_by = now_ms()
    while now_ms() <= stored_by:
        await asyncio.sleep(0.001)
    await broker.transactional_message_check_service.check_once()


def check_offset(broker: BrokerController, topic: str) -> int:
    return broker.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, topic, 0)


async def test_a_half_message_older_than_the_commit_logs_retention_is_discarded_unasked(cluster: Cluster) -> None:
    # needSkip: born more than fileReservedTime hours (72) ago, its records may be gone: moved to
    # TRANS_CHECK_MAX_TIME_TOPIC without a question. One born ten minutes ago is asked about as any other.
    broker = await cluster.broker(transaction_timeout=0.0, **BY_HAND)
    mq = cluster.mq(broker)
    await send_half(mq, b"ancient", born=now_ms() - 73 * HOUR)
    await send_half(mq, b"recent", born=now_ms() - HOUR // 6)
    await one_pass(broker)
    service = broker.transactional_message_service
    assert (service.discarded, service.checks_sent) == (1, 1)
    [kept] = await records(broker, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
    assert kept.body == b"ancient"
    assert [m.body for m in (await records(broker, RMQ_SYS_TRANS_HALF_TOPIC))[2:]] == [b"recent"]


async def test_a_half_message_born_in_the_future_is_asked_at_once(cluster: Cluster) -> None:
    # A producer whose clock is an hour ahead: RocketMQ asks (valueOfCurrentMinusBorn <= -1) rather than wait
    # for the broker's clock to catch up with it and the transaction timeout on top.
    broker = await cluster.broker(transaction_timeout=600.0, **BY_HAND)
    mq = cluster.mq(broker)
    await send_half(mq, b"ahead", born=now_ms() + HOUR)
    await one_pass(broker)
    assert broker.transactional_message_service.checks_sent == 1
    assert check_offset(broker, RMQ_SYS_TRANS_HALF_TOPIC) == 1


async def test_a_check_immunity_of_minus_one_is_the_transaction_timeout(cluster: Cluster) -> None:
    # getImmunityTime: CHECK_IMMUNITY_TIME_IN_SECONDS=-1 stands for transactionTimeOut (ten minutes here), so a
    # message born just now is written again, not asked about.
    broker = await cluster.broker(transaction_timeout=600.0, **BY_HAND)
    mq = cluster.mq(broker)
    await send_half(mq, b"immune", CHECK_IMMUNITY_TIME_IN_SECONDS="-1")
    await one_pass(broker)
    assert broker.transactional_message_service.checks_sent == 0
    first, copy = await records(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    assert copy.body == b"immune" and copy.properties["TRAN_PREPARED_QUEUE_OFFSET"] == str(first.queue_offset)


async def test_a_half_message_checked_too_often_is_discarded_once(cluster: Cluster) -> None:
    broker = await cluster.broker(transaction_timeout=0.0, transaction_check_max=1, **BY_HAND)
    mq = cluster.mq(broker)
    await send_half(mq, b"undecided")
    for _ in range(4):
        await one_pass(broker)
    service = broker.transactional_message_service
    assert (service.checks_sent, service.discarded) == (1, 1)
    [kept] = await records(broker, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
    assert kept.body == b"undecided" and kept.properties["TRANSACTION_CHECK_TIMES"] == "1"
    # Past the first record and its copy, the one discarded: the next passes do not discard it again.
    assert check_offset(broker, RMQ_SYS_TRANS_HALF_TOPIC) == 2


async def test_a_decided_half_message_whose_op_is_past_the_first_32_ops_is_not_asked(cluster: Cluster) -> None:
    # The op queue is read 32 records at a time; a half message not among them reads further before it is taken
    # for undecided (RocketMQ: fillOpRemoveMap again before it asks).
    broker = await cluster.broker(transaction_timeout=0.0, **BY_HAND)
    mq = cluster.mq(broker)
    sent = [await send_half(mq, f"m{i}".encode()) for i in range(33)]
    for s in sent[1:] + sent[:1]:
        answer = await commit(mq, s)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    await one_pass(broker)
    assert broker.transactional_message_service.checks_sent == 0
    assert broker.store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0) == 33  # (no copy written back)
    # One pass takes the check past every half message and every op record it used.
    assert check_offset(broker, RMQ_SYS_TRANS_HALF_TOPIC) == 33
    assert check_offset(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 33


async def test_a_commit_the_store_refuses_leaves_the_half_message_undecided(cluster: Cluster) -> None:
    # sendFinalMessage failed: no op record (RocketMQ deletes the prepared message only on SUCCESS), so the
    # producer's next commit, or the check, still finds the transaction open.
    broker = await cluster.broker(transaction_timeout=0.0, **BY_HAND)
    mq = cluster.mq(broker)
    sent = await send_half(mq, b"x" * 2000)
    update = await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxMessageSize=1024")
    assert update.code == ResponseCode.SUCCESS, update.remark
    refused = await commit(mq, sent)
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL, refused.remark
    assert await records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC) == []
    update = await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxMessageSize=4194304")
    assert update.code == ResponseCode.SUCCESS, update.remark
    answer = await commit(mq, sent)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert [m.body for m in await records(broker, "TxnT")] == [b"x" * 2000]
    await one_pass(broker)
    assert broker.transactional_message_service.checks_sent == 0


async def test_the_check_asks_about_more_transactions_than_it_holds_pending(cluster: Cluster) -> None:
    # Each question gives its pending-check permit back once sent (or, as here, once no producer is found to
    # ask): a pass asks about more undecided transactions than MAX_PENDING_CHECKS, which is made 1 here.
    broker = await cluster.broker(transaction_timeout=0.0, **BY_HAND)
    mq = cluster.mq(broker)
    for i in range(3):
        await send_half(mq, f"m{i}".encode())
    broker.transactional_message_check_service.listener._pending = asyncio.Semaphore(1)
    await asyncio.wait_for(one_pass(broker), 10.0)  # (a guard: a permit never given back hangs the pass)
    assert broker.transactional_message_service.checks_sent == 3
